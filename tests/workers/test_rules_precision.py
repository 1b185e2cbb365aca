"""The deterministic extractor's precision on conversational text: what it must not turn into a
durable fact. Each wrong keyed fact does double harm, since a later one on the same key
supersedes it and retires its message from current search. The sentences are the shapes found
in LoCoMo's conversations, written anew."""
import pytest

from memoryapp.extraction.rules import extract_candidates
from tests.workers.helpers import at, ingest, memories

# sentence -> the statements it must yield (an empty list: nothing durable)
CASES = {
    # names are capitalised, though the rules match case-insensitively
    "My partner is pregnant!": [],
    "My wife is called Maria.": ["Partner / spouse: The user's partner is Maria."],
    "I'm seeing some progress with the new routine.": [],
    "I'm with Vodafone for broadband.": [],
    "I'm seeing Dr Okafor on Monday.": [],
    "I'm dating Tomas.": ["Partner / spouse: The user's partner is Tomas."],
    "Call me at the store if you need anything.": [],
    "My name is Ann Lee.": ["Name: The user's name is Ann Lee."],
    "My dog is adorable.": [],
    "My dog is called Rex.": ["Pet: The user has a pet dog named Rex."],
    # joining a club is not a new employer; joining a company is
    "I joined a gym last week!": [],
    "Last night I joined a fantasy literature forum.": [],
    "I met people who play it too, so I joined in.": [],
    "I just joined Globex.": ["Employer / company: The user works at Globex."],
    "I work for Initech now.": ["Employer / company: The user works at Initech."],
    # "and became" speaks of the user only when the user is the clause's subject
    "I switched careers and became a nurse.": ["Job / profession: The user works as a nurse."],
    "So happy you followed your dreams and became an engineer.": [],
    "Challenges force us to grow and become better.": [],
    # likes that only point at the conversation
    "I love them.": [],
    "I love your turtles so much!": [],
    "I love this quote.": [],
    "I enjoy what I do.": [],
    "I love traveling.": ["The user loves traveling."],
    "I like to collect jerseys.": ["The user likes to collect jerseys."],
    # homes are places
    "A safe home is key.": [],
    "I stay in shape by hitting the gym.": [],
    "I live in Graz.": ["Home city: The user lives in Graz."],
    "I moved to a small village near Graz.": ["Home city: The user lives in a small village near Graz."],
    # cars are makes, models or vehicles
    "My ride is the best.": [],
    "My car is a Fiat Panda.": ["Car: The user drives a Fiat Panda."],
    # plans say what is planned, in a sentence that reads
    "I'm going through some difficult times now.": [],
    "I'm going for my dreams!": [],
    "I'm hoping we can find a nice trail.": [],
    "I'm planning a trip to the East Coast.": ["The user plans a trip to the East Coast."],
    "I'm going to a book conference next month.": ["The user plans to go to a book conference next month."],
    "I'm planning to get out in nature again next month.": ["The user plans to get out in nature again next month."],
    # ... and the facts those checks must not lose
    "I live in \xa0.": [],  # only a whitespace _clean leaves: nothing, and no crash
    "I joined the Red Cross.": ["Employer / company: The user works at the Red Cross."],
    "I joined Google's cloud team.": ["Employer / company: The user works at Google."],
    "I joined a law firm last month.": ["Employer / company: The user works at a law firm."],
    "I told her and became a nurse.": ["Job / profession: The user works as a nurse."],
    "I live in downtown Seattle.": ["Home city: The user lives in downtown Seattle."],
    "i moved to berlin": ["Home city: The user lives in berlin."],  # no capitals to ask for
    "I drive a minivan.": ["Car: The user drives a minivan."],
    "I'm planning on a trip to Japan.": ["The user plans a trip to Japan."],
    "I'm going to Rome next spring.": ["The user plans to go to Rome next spring."],
    "I'm going to visit Rome next spring.": ["The user plans to visit Rome next spring."],
    "I'm planning my wedding for June.": ["The user plans their wedding for June."],
    "I'm saving up for a house.": ["The user is saving up for a house."],
    "I'm planning a lot of stuff.": [],
    "I'm hoping to a better year.": [],
}


@pytest.mark.parametrize("sentence", CASES)
def test_the_extractor_yields_exactly_the_durable_facts_a_sentence_states(sentence):
    assert [c.statement for c in extract_candidates(sentence)] == CASES[sentence]


@pytest.mark.django_db
def test_joining_clubs_keeps_every_message_current(tenant_a, actor):
    # Read as employers, each club superseded the last and retired its message from search.
    ingest(tenant_a, "alice", actor, ("e1", "user", "I joined a gym last week!", None, at(0)),
           ("e2", "user", "I joined a travel club yesterday.", None, at(30)),
           ("e3", "user", "I just joined Globex!", None, at(60)))
    episodes = memories(tenant_a, "alice", memory_type="episodic")
    assert sorted((m.metadata["event_id"], m.status) for m in episodes) == [
        ("e1", "active"), ("e2", "active"), ("e3", "active")]
    [employer] = memories(tenant_a, "alice", memory_type="semantic", key="user:employer")
    assert employer.statement == "Employer / company: The user works at Globex."
