"""A query that names a person who speaks in the subject's events treats the name as who said
it (the speaker boost), not as words to match: as words it only favours the short messages that
greet that person."""
import pytest

from memoryapp import retrieval
from memoryapp.models import Subject
from memoryapp.query import query_match_text
from memoryapp.retrieval import memory_search, search_text
from memoryapp.services.events import EventInput, event_append
from tests.conftest import as_tenant
from tests.maintenance.conftest import run


@pytest.mark.parametrize("query, speakers, expected", [
    ("Where did Caroline go yesterday?", {"caroline"}, "Where did go yesterday?"),
    ("What are Melanie's pets' names?", {"melanie"}, "What are pets' names?"),
    ("What do Jon and Gina have in common?", {"jon", "gina"}, "What do and have in common?"),
    # Only capitalised words are names: the verb survives a speaker called Will.
    ("What will Will cook?", {"will"}, "What will cook?"),
    # A name that is not a speaker's is content ("Who is Luna?" asks about Luna).
    ("Who is Luna, Caroline's cat?", {"caroline"}, "Who is Luna, cat?"),
    # Nothing but names: kept whole rather than searching for nothing.
    ("Caroline", {"caroline"}, "Caroline"),
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
        assert search_text(tenant=tenant_a, subject_ref="chat", query="What did Mary say to Caroline?") == \
            "What did say to?"
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
    hits = memory_search(tenant=tenant_a, subject_ref="chat", query=question, k=4, record_access=False)
    assert hits[0].memory.source_event.event_id == "t1"
    greeting = next(h for h in hits if h.memory.source_event.event_id == "t0")
    assert greeting.details["text_score"] == 0  # "Caroline" twice in a short message is no match
    # With the names matched as words, the greetings that repeat her name come first: the case
    # this exists for.
    monkeypatch.setattr(retrieval, "search_text", lambda *, tenant, subject_ref, query, info=None: query)
    as_words = memory_search(tenant=tenant_a, subject_ref="chat", query=question, k=4, record_access=False)
    assert as_words[0].memory.source_event.event_id != "t1"


@pytest.mark.django_db
def test_forgetting_a_speakers_only_message_forgets_the_speaker(tenant_a, actor):
    from memoryapp.models import Memory
    from memoryapp.services.memories import memory_forget

    run(tenant_a, _append(tenant_a, "chat", actor, [("Caroline", "I adopted a cat named Luna."),
                                                  ("Zed", "Nice to meet you all.")]))
    with as_tenant(tenant_a):
        zed = Memory.objects.get(memory_type="episodic", source_event__speaker="Zed")
    job = run(tenant_a, memory_forget(tenant=tenant_a, memory=zed, actor=actor))
    assert job.result["verification"]["passed"]
    with as_tenant(tenant_a):
        assert Subject.objects.get(external_id="chat").speakers == ["Caroline"]
