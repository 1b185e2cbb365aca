"""A message that asks about the world and says nothing of the person who asks answers no
question about that person, however well it shares the question's topic: it keeps only part of
its relevance. Told by the language's closed classes (a question, no first-person word), never
by phrasings; the sentences here were written for these tests, not taken from the sets the
weight was chosen on."""
from datetime import datetime, timedelta, timezone

import pytest

from memoryapp import retrieval
from memoryapp.retrieval import memory_search
from tests.conftest import as_tenant
from tests.workers.helpers import ingest

T0 = datetime(2025, 5, 6, 9, 0, tzinfo=timezone.utc)

IMPERSONAL = [
    "is it true that octopuses have three hearts?",
    "how do airlines decide what a ticket costs",
    "what's the capital of Peru",
    "which is better for a beginner, a kayak or a canoe?",
    "Why do cats knock things off tables?",
    "the tide tables for Brighton, where are they published?",
    "who won the league in 1998",
    "Is there a train to Leeds after midnight",
    "are electric bikes allowed on the canal path",           # "is", "are", "does" before anything
    "does sourdough need a starter every time",
    "whats the fastest way to defrost mince",                 # "whats" before anything
    "which glue is best on ceramic mugs",                     # a noun, then an auxiliary
    "what size should a hamster cage be",
    "explain how a heat pump works in winter",                # a request with an asking verb
    "Describe the rules of curling briefly.",
]
PERSONAL = [
    "can you recommend a podcast for the train? I commute an hour each way",
    "When mum visits she always brings lemon cake",          # a question word, no question
    "what a week, the dog ran off twice",
    "Will said the game's at eight",
    "Wo ist mein Schlüssel?",                                 # first person in another language
    "¿Dónde dejé mis llaves?",
    "picked up the banjo again, the old one was gathering dust",  # the subject left out: no question
    "was at the climbing wall till late, my arms are dead",
    "do you think my landlord can raise the rent twice a year?",
    "ive been vegetarian since march",
    "We finally fixed the garden fence.",
    "Kayaking on Sundays now.",
    "did two hours of piano practice before work",           # subject left out, past tense
    "were out at the allotment all afternoon, knackered",
    "whats the plan for my birthday?",                        # a question, but about the speaker
    "tell my brother the match moved to six",                 # a request, about the speaker
    "Write software for a shipping firm, mostly Go",          # the subject dropped: not a request
    "give blood twice a year at the town hall",
    "When Tomasz visits he brings pierogi",                   # "to" is not an auxiliary inside a name
]


@pytest.mark.django_db
def test_which_messages_ask_about_the_world_and_say_nothing_of_the_speaker(tenant_a, actor):
    texts = IMPERSONAL + PERSONAL
    ingest(tenant_a, "alice", actor, *[
        (f"e{i}", "user", text, None, T0 + timedelta(minutes=i)) for i, text in enumerate(texts)])
    with as_tenant(tenant_a):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="anything at all", k=50)
    told = {h.memory.source_event.content: h.details["impersonal"] for h in hits if h.memory.memory_type == "episodic"}
    assert set(told) == set(texts), set(texts) - set(told)
    assert {t for t, impersonal in told.items() if impersonal} == set(IMPERSONAL)


@pytest.mark.django_db
def test_a_speakers_name_before_the_question_and_an_assistants_question(tenant_a, actor):
    from memoryapp.services.events import EventInput, event_append
    from tests.workers.helpers import run_job_here

    events = [EventInput("e0", "user", "how do tides work", speaker="Ana", occurred_at=T0),
              EventInput("e1", "user", "my sister is visiting", speaker="Ana", occurred_at=T0 + timedelta(minutes=1)),
              EventInput("e2", "assistant", "What's your sister called?", occurred_at=T0 + timedelta(minutes=2))]
    _, job = event_append(tenant=tenant_a, subject_ref="alice", events=events, actor=actor)
    run_job_here(tenant_a, job)
    with as_tenant(tenant_a):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="anything", k=10)
    told = {h.memory.source_event.content: h.details["impersonal"] for h in hits}
    assert told == {"how do tides work": True, "my sister is visiting": False, "What's your sister called?": False}


FACT = "we always get the veg box from Riverford, it comes on thursdays"
TOPICAL = [
    "what vegetables are in season in november?",
    "how long do vegetables keep in the fridge",
    "is a veg box delivery better for the environment than the supermarket?",
    "which vegetables can be frozen raw?",
]
FILLER = [
    "my sister visits next weekend", "the boiler is making a noise again", "I finished the crossword before lunch",
    "we painted the hallway a dark green", "my knee has been sore since the run", "I should call the bank tomorrow",
]


@pytest.mark.django_db
def test_the_persons_statement_answers_before_topical_questions_that_say_nothing_of_them(
        tenant_a, actor, monkeypatch):
    turns = [TOPICAL[0], FILLER[0], FACT, FILLER[1], TOPICAL[1], FILLER[2], TOPICAL[2], FILLER[3],
             TOPICAL[3], *FILLER[4:]]
    ingest(tenant_a, "alice", actor, *[
        (f"e{i}", "user", text, None, T0 + timedelta(hours=i)) for i, text in enumerate(turns)])
    query = "Which veg box delivery does the user get?"

    def first(weight):
        monkeypatch.setitem(retrieval.RELEVANCE, "impersonal", weight)
        with as_tenant(tenant_a):
            hits = memory_search(tenant=tenant_a, subject_ref="alice", query=query, k=3)
        return hits[0].memory.source_event.content, hits

    answer, hits = first(retrieval.RELEVANCE["impersonal"])
    assert answer == FACT, [(h.memory.statement, h.details) for h in hits]
    # Without the weight a question sharing the query's words took its place: the test can fail.
    unweighted, _ = first(0.0)
    assert unweighted in TOPICAL
