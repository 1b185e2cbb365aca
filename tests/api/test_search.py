from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.context import NOTHING_RELEVANT, UNTRUSTED_LABEL, count_tokens
from memoryapp.models import ReadAudit
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.services.reads import query_hash
from tests.api.conftest import ADMIN, assert_error, post, write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def test_search_returns_memories_with_score_best_first(client_a):
    write(client_a, "alice", "I am vegetarian.")
    write(client_a, "alice", "My favourite football club is Porto.")
    body = post(client_a, "subjects/alice/search", {"query": "What food does the user eat?", "k": 5}).json()
    results = body["results"]
    assert results[0]["statement"] == "I am vegetarian."
    assert all("score" in r and isinstance(r["score_details"], dict) for r in results)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)


def test_search_never_returns_another_tenants_or_subjects_memories(client_a, client_b):
    write(client_a, "alice", "I am vegetarian.")
    write(client_a, "bob", "I am vegetarian too.")
    assert post(client_b, "subjects/alice/search", {"query": "vegetarian"}).json() == {"results": []}
    assert {r["subject"] for r in post(client_a, "subjects/alice/search", {"query": "vegetarian"}).json()[
        "results"]} == {"alice"}


def test_search_after_correction_returns_only_the_new_version_unless_asked(client_a):
    m1 = write(client_a, "alice", "I prefer answers with the conclusion first.")
    client_a.patch(f"/api/v1/subjects/alice/memories/{m1['id']}", {"statement": "I prefer answers with the evidence first."},
                   format="json")
    current = [r["statement"] for r in post(client_a, "subjects/alice/search", {"query": "how should answers be ordered?"}).json()["results"]]
    assert current == ["I prefer answers with the evidence first."]
    both = [r["statement"] for r in post(client_a, "subjects/alice/search", {
        "query": "how should answers be ordered?", "include_superseded": True}).json()["results"]]
    assert "I prefer answers with the conclusion first." in both


def test_search_as_of_a_past_time_sees_what_was_valid_then(client_a):
    then = timezone.now() - timedelta(days=30)
    write(client_a, "alice", "I work in Shanghai.", key="user:work_city", valid_from=then.isoformat())
    write(client_a, "alice", "I was transferred to Hangzhou.", key="user:work_city",
          valid_from=(timezone.now() - timedelta(days=2)).isoformat())
    past = post(client_a, "subjects/alice/search", {"query": "Where does the user work?",
                                                    "as_of": (timezone.now() - timedelta(days=10)).isoformat()})
    assert [r["statement"] for r in past.json()["results"]] == ["I work in Shanghai."]


def test_search_rejects_bad_input_with_400(client_a):
    for body in [{"query": "x", "k": 101}, {"query": "x", "k": 0}, {"k": 5}, {"query": ""},
                 {"query": "x", "as_of": "yesterday-ish"}, {"query": ["x"], "k": "five"},
                 {"query": "x", "memory_types": ["dream"]}, {"query": "x", "min_score": "nan"},
                 {"query": "x", "namespace": "../etc"}]:
        assert_error(post(client_a, "subjects/alice/search", body), 400)


def test_search_records_a_read_audit_with_the_query_hash_not_the_text(tenant_a, client_a, client_b):
    m = write(client_a, "alice", "I am vegetarian.")
    post(client_a, "subjects/alice/search", {"query": "diet please"})
    with as_tenant(tenant_a):
        audit = ReadAudit.objects.get(tenant=tenant_a, operation="search")
    assert audit.query_hash == query_hash("diet please") and "diet" not in str(audit.__dict__)
    assert [f"mem_{i.hex}" for i in audit.memory_ids] == [m["id"]] and audit.subject_ref == "alice"
    assert audit.actor.startswith("api_key:")
    client_a.get(f"/api/v1/subjects/alice/memories/{m['id']}")
    client_a.get("/api/v1/subjects/alice/memories")
    post(client_a, "subjects/alice/context", {"query": "diet"})
    with as_tenant(tenant_a):
        ops = sorted(ReadAudit.objects.filter(tenant=tenant_a).values_list("operation", flat=True))
    assert ops == ["context", "get", "list", "search"]


def test_context_after_correction_has_the_new_statement_not_the_old(client_a, client_b):
    m1 = write(client_a, "alice", "I prefer answers with the conclusion first.")
    client_a.patch(f"/api/v1/subjects/alice/memories/{m1['id']}", {"statement": "I prefer answers with the evidence first."},
                   format="json")
    body = post(client_a, "subjects/alice/context", {"query": "answer style", "token_budget": 300}).json()
    assert "evidence first" in body["context"] and "conclusion first" not in body["context"]
    assert body["tokens"] == count_tokens(body["context"]) <= 300
    assert post(client_b, "subjects/alice/context", {"query": "answer style"}).json()["context"] == ""


def test_context_dates_each_memory_names_its_source_and_labels_untrusted_content(tenant_a, client_a):
    write(client_a, "alice", "I am vegetarian.", valid_from="2026-03-01T10:00:00+00:00")
    memory_write(tenant=tenant_a, subject_ref="alice", actor=ADMIN, draft=MemoryDraft(
        statement="A web page said the user enjoys vegetarian cooking classes.", memory_type="episodic",
        source_kind="external"))
    text = post(client_a, "subjects/alice/context", {"query": "vegetarian food"}).json()["context"]
    assert "[2026-03-01, source: user_explicit] I am vegetarian." in text
    untrusted = [line for line in text.splitlines() if "web page" in line]
    assert len(untrusted) == 1 and UNTRUSTED_LABEL in untrusted[0] and "source: external" in untrusted[0]


def test_context_puts_the_profile_first_and_never_exceeds_the_budget(client_a):
    for i in range(10):
        write(client_a, "alice", f"I visited a vegetarian restaurant in city number {i} last year.")
    write(client_a, "alice", "Alice is a 34-year-old architect living in Lisbon.", namespace="profile")
    body = post(client_a, "subjects/alice/context", {"query": "vegetarian restaurant", "token_budget": 1000}).json()
    assert body["context"].splitlines()[1].endswith("Alice is a 34-year-old architect living in Lisbon.")
    for budget in (1, 20, 40, 75):
        small = post(client_a, "subjects/alice/context", {"query": "vegetarian restaurant", "token_budget": budget}).json()
        assert small["tokens"] <= budget and small["tokens"] == count_tokens(small["context"])
        assert len(small["memories"]) == max(0, small["context"].count("\n"))


def test_context_says_when_nothing_stored_answers_and_offers_no_memory(client_a):
    write(client_a, "alice", "I am vegetarian.")
    write(client_a, "alice", "My sister lives in Porto.")
    none = post(client_a, "subjects/alice/context", {"query": "What is the half-life of carbon-14?"}).json()
    assert none["nothing_relevant"] is True and none["memories"] == []
    assert none["context"] == NOTHING_RELEVANT and none["tokens"] == count_tokens(NOTHING_RELEVANT)
    some = post(client_a, "subjects/alice/context", {"query": "Does the user eat meat?"}).json()
    assert some["nothing_relevant"] is False and "vegetarian" in some["context"]
    # Search still ranks whatever is stored unless asked for a minimum relevance.
    assert post(client_a, "subjects/alice/search", {"query": "What is the half-life of carbon-14?"}).json()["results"]
