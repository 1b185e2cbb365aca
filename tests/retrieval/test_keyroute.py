"""Query-to-attribute routing: a question names an attribute in words its stored fact may never
use; the facts filed under the key it asks about are preferred, and nothing else changes."""
import pytest

from memoryapp import embeddings
from memoryapp.extraction import extract_candidates
from memoryapp.keyroute import key_weight, keys_for_query
from memoryapp.retrieval import RELEVANCE, memory_search
from memoryapp.services.memories import MemoryDraft, memory_write


def routed(question: str) -> dict:
    return dict(keys_for_query(embeddings.embed_text(question, partition=None)))


@pytest.mark.parametrize("question, key", [
    ("What does the user do for a living?", "user:job"),
    ("What is the user's profession?", "user:job"),
    ("What does the user do in their spare time?", "user:hobby"),
    ("Which dish does the user like best?", "user:preference:food"),
    ("Who is the user's employer?", "user:employer"),
    ("What car does the user drive?", "user:car"),
    ("What city does the user live in?", "user:home_city"),
    ("am I allergic to anything", "user:allergy:"),
])
def test_a_question_about_an_attribute_routes_to_its_key_first(question, key):
    keys = keys_for_query(embeddings.embed_text(question, partition=None))
    assert keys and keys[0] == (key, 1.0)


@pytest.mark.parametrize("question", [
    "What did Caroline do last weekend?", "When did Melanie paint a sunrise?", "How many kids does Maria have?",
    "Summarise the meeting notes", "What is Jon's job?",
])
def test_questions_about_no_stored_attribute_route_nowhere(question):
    assert routed(question) == {}


def test_key_weight_matches_exact_keys_and_families():
    assert key_weight("user:job", {"user:job": 1.0}) == 1.0
    assert key_weight("user:allergy:peanuts", {"user:allergy:": 0.8}) == 0.8
    assert key_weight("user:employer", {"user:job": 1.0}) == 0.0
    assert key_weight("", {"user:job": 1.0}) == 0.0


def _fact(tenant, subject, text, actor):
    [candidate] = extract_candidates(text, role="user")
    return memory_write(tenant=tenant, subject_ref=subject, actor=actor, draft=MemoryDraft(
        statement=candidate.statement, key=candidate.key, source_kind="user")).memory


@pytest.mark.django_db
def test_the_fact_filed_under_the_asked_attribute_wins_without_sharing_a_word(tenant_a, tenant_b, actor, monkeypatch):
    job = _fact(tenant_a, "alice", "I work as a pilot.", actor)
    home = _fact(tenant_a, "alice", "I live in Montreal.", actor)
    _fact(tenant_a, "alice", "My favourite drink is chai.", actor)
    assert (job.key, home.key) == ("user:job", "user:home_city")
    question = "What does the user do for a living?"
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query=question, k=3)
    assert hits[0].memory.pk == job.pk
    # Without the routing the lexical accident ("living" ~ "lives") puts the home city first:
    # this is the case the routing exists for.
    monkeypatch.setitem(RELEVANCE, "key", 0)
    unrouted = memory_search(tenant=tenant_a, subject_ref="alice", query=question, k=3)
    assert unrouted[0].memory.pk == home.pk
    # The boost is for this subject's facts only: another tenant's identical fact never shows.
    _fact(tenant_b, "alice", "I work as a pilot.", actor)
    monkeypatch.undo()
    again = memory_search(tenant=tenant_a, subject_ref="alice", query=question, k=10)
    assert {h.memory.tenant_id for h in again} == {tenant_a.pk}
