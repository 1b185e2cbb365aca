"""A query that names a person who speaks in the subject's events treats the name as who said
it (the speaker boost), not as words to match: as words it only favours the short messages that
greet that person."""
import pytest

from memoryapp import retrieval
from memoryapp.models import Memory, Subject
from memoryapp.query import query_match_text
from memoryapp.retrieval import memory_search, search_text
from memoryapp.services import events
from memoryapp.services.erasure import erasure_verify
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_forget, memory_write
from tests.conftest import as_tenant
from tests.maintenance.conftest import run


@pytest.mark.parametrize("query, speakers, expected", [
    ("Where did Caroline go yesterday?", {"caroline"}, "Where did go yesterday?"),
    ("What are Melanie's pets' names?", {"melanie"}, "What are pets' names?"),
    ("What are Melanie’s hobbies?", {"melanie"}, "What are hobbies?"),
    ("What is James' dog called?", {"james"}, "What is dog called?"),
    # A capital inside a word is no name: "McDonald" keeps its "Mc" whatever the speakers.
    ("Did Mc eat at McDonald with Caroline?", {"mc", "caroline"}, "Did eat at McDonald with?"),
    ("What do Jon and Gina have in common?", {"jon", "gina"}, "What do and have in common?"),
    # Only capitalised words are names: the verb survives a speaker called Will.
    ("What will Will cook?", {"will"}, "What will cook?"),
    # A name that is not a speaker's is content ("Who is Luna?" asks about Luna).
    ("Who is Luna, Caroline's cat?", {"caroline"}, "Who is Luna, cat?"),
    # Nothing but names, or no content word left: the query asks about the person, kept whole.
    ("Caroline", {"caroline"}, "Caroline"),
    ("Who is Caroline?", {"caroline"}, "Who is Caroline?"),
    ("Tell me about Caroline", {"caroline"}, "Tell me about Caroline"),
    ("Caroline and Melanie", {"caroline", "melanie"}, "Caroline and Melanie"),
    ("Caroline, what did you paint?", {"caroline"}, "what did you paint?"),
    ("Where did Caroline go?", set(), "Where did Caroline go?"),
])
def test_query_match_text_drops_only_the_speakers_names(query, speakers, expected):
    assert query_match_text(query, frozenset(speakers)) == expected


def _append(tenant, subject, actor, turns, start=0):
    events = [EventInput(event_id=f"t{i}", role="user", content=text, speaker=speaker, session_id="s1")
              for i, (speaker, text) in enumerate(turns, start)]
    _results, job = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
    return job


@pytest.mark.django_db
def test_event_append_keeps_the_distinct_speakers_of_a_subject(tenant_a, tenant_b, actor):
    _append(tenant_a, "chat", actor, [("Caroline", "Hi!"), ("Melanie", "Hey!"), ("Caroline", "How are you?")])
    _append(tenant_a, "chat", actor, [("Melanie", "Good."), ("", "A message with no speaker."), ("Dr Mary Ann", "Hello")],
            start=3)
    # A repeated event (same event_id) is a duplicate: it adds no speaker.
    _append(tenant_a, "chat", actor, [("Zed", "Hi!")])
    with as_tenant(tenant_a):
        assert Subject.objects.get(external_id="chat").speakers == ["Caroline", "Melanie", "Dr Mary Ann"]
    with as_tenant(tenant_a):
        assert search_text(tenant=tenant_a, subject_ref="chat", query="What did Mary bake for Caroline?") == \
            "What did bake for?"
    # Another tenant's subject of the same name knows none of them.
    _append(tenant_b, "chat", actor, [("Bob", "Hi")])
    with as_tenant(tenant_b):
        assert Subject.objects.get(external_id="chat").speakers == ["Bob"]
        assert search_text(tenant=tenant_b, subject_ref="chat", query="What did Caroline say?") == \
            "What did Caroline say?"


TURNS = [
    ("Melanie", "Thanks, Caroline! You're the best, Caroline."),
    ("Caroline", "Lately I've been looking into adoption agencies, it's a big step."),
    ("Melanie", "Wow, Caroline, so proud of you, Caroline!"),
    ("Caroline", "Thanks Melanie, that means a lot."),
]


@pytest.mark.django_db
def test_a_named_speaker_is_who_said_it_not_a_word_to_match(tenant_a, actor, monkeypatch):
    run(tenant_a, _append(tenant_a, "chat", actor, TURNS))
    question = "What has Caroline been researching?"
    hits = memory_search(tenant=tenant_a, subject_ref="chat", query=question, k=4)
    assert hits[0].memory.source_event.event_id == "t1"
    greeting = next(h for h in hits if h.memory.source_event.event_id == "t0")
    assert greeting.details["text_score"] == 0  # "Caroline" twice in a short message is no match
    # With the names matched as words, and the text scaled by the best match in scope (as before
    # the whole-query floor, which also tempers this), the greetings that repeat her name come
    # first: the case this exists for.
    monkeypatch.setattr(retrieval, "search_terms", lambda *, tenant, subject_ref, query, info=None: (query, frozenset()))
    monkeypatch.setitem(retrieval.RELEVANCE, "text_floor", 0)
    as_words = memory_search(tenant=tenant_a, subject_ref="chat", query=question, k=4)
    assert as_words[0].memory.source_event.event_id != "t1"


@pytest.mark.django_db
def test_a_speaker_named_by_one_word_of_their_name_is_still_who_said_it(tenant_a, actor):
    # search_terms drops "Mary" because it is a word of the speaker "Mary Ann"; the speaker
    # boost must match by word too, or her messages lose both the words and the boost.
    run(tenant_a, _append(tenant_a, "chat", actor, [("Mary Ann", "I baked a lemon cake for the fair."),
                                                  ("Bob", "I baked a carrot cake for the fair.")]))
    hits = memory_search(tenant=tenant_a, subject_ref="chat", query="What did Mary bake for the fair?", k=2,
                         memory_types=["episodic"])
    assert [h.memory.source_event.speaker for h in hits] == ["Mary Ann", "Bob"]
    assert hits[0].score - hits[1].score > 0.05


@pytest.mark.django_db
def test_a_fact_nobody_said_still_counts_for_the_person_it_names(tenant_a, actor):
    # Facts written through the API have no speaker: with the name left out of the match, the
    # fact naming the person the query asks about is the one credited.
    run(tenant_a, _append(tenant_a, "chat", actor, TURNS))
    facts = {}
    for name, text in (("melanie", "Melanie is allergic to cats."), ("caroline", "Caroline is allergic to peanuts.")):
        facts[name] = memory_write(tenant=tenant_a, subject_ref="chat", actor=actor,
                                   draft=MemoryDraft(statement=text, source_kind="user")).memory
    for name in ("caroline", "melanie"):
        hits = memory_search(tenant=tenant_a, subject_ref="chat", query=f"What is {name.title()} allergic to?", k=2,
                             memory_types=["semantic"])
        assert [h.memory.pk for h in hits] == [facts[name].pk, facts["caroline" if name == "melanie" else "melanie"].pk]
        assert hits[0].score > hits[1].score


@pytest.mark.django_db
def test_only_trusted_events_name_speakers_and_only_so_many(tenant_a, actor, monkeypatch):
    event_append(tenant=tenant_a, subject_ref="chat", actor=actor, events=[
        EventInput(event_id="web", role="tool", content="Ignore this page.", speaker="Acme Corp", source_kind="external"),
        EventInput(event_id="me", role="user", content="Hi", speaker="Caroline"),
    ])
    monkeypatch.setattr(events, "MAX_SPEAKERS", 2)
    _append(tenant_a, "chat", actor, [("Melanie", "Hey"), ("Zed", "Yo"), ("Ann", "Hi")], start=10)
    with as_tenant(tenant_a):
        assert Subject.objects.get(external_id="chat").speakers == ["Caroline", "Ann"]


@pytest.mark.django_db
def test_a_subject_being_erased_lends_no_speakers(tenant_a, actor):
    _append(tenant_a, "chat", actor, [("Caroline", "Hi")])
    with as_tenant(tenant_a):
        Subject.objects.filter(external_id="chat").update(status=Subject.Status.ERASING)
        assert search_text(tenant=tenant_a, subject_ref="chat", query="What did Caroline paint?") == \
            "What did Caroline paint?"


@pytest.mark.django_db
def test_forgetting_a_speakers_only_message_forgets_the_speaker(tenant_a, actor):
    run(tenant_a, _append(tenant_a, "chat", actor, [("Caroline", "I adopted a cat named Luna."),
                                                  ("Zed", "Nice to meet you all."),
                                                  ("Caroline", "Luna sleeps all day.")]))
    with as_tenant(tenant_a):
        zed = Memory.objects.get(memory_type="episodic", source_event__speaker="Zed")
        first = Memory.objects.get(memory_type="episodic", source_event__event_id="t0")
    job = run(tenant_a, memory_forget(tenant=tenant_a, memory=zed, actor=actor))
    assert job.result["verification"]["passed"]
    assert "speakers_without_events" in job.result["verification"]["checked"]
    with as_tenant(tenant_a):
        assert Subject.objects.get(external_id="chat").speakers == ["Caroline"]
    # Caroline still has a message after one of hers is forgotten: her name stays.
    run(tenant_a, memory_forget(tenant=tenant_a, memory=first, actor=actor))
    with as_tenant(tenant_a):
        assert Subject.objects.get(external_id="chat").speakers == ["Caroline"]


@pytest.mark.django_db
def test_erasure_verification_finds_a_speaker_left_without_events(tenant_a, actor):
    _append(tenant_a, "chat", actor, [("Caroline", "Hi")])
    with as_tenant(tenant_a):
        Subject.objects.filter(external_id="chat").update(speakers=["Caroline", "Zed"])
    result = erasure_verify(tenant=tenant_a, subject_ref="chat", scope="memory", texts=set(), memory_ids=[],
                            event_ids=[])
    assert not result["passed"] and result["residue"] == {"speakers_without_events": 1}
