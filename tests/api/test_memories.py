import pytest

from memoryapp.models import AuditEntry, Memory
from tests.api.conftest import assert_error, post, write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db

MEMORY_FIELDS = {
    "id", "subject", "memory_type", "namespace", "statement", "status", "source", "evidence", "confidence",
    "importance", "sensitivity", "valid_from", "valid_to", "recorded_at", "supersedes", "superseded_by",
    "derived_from", "expires_at", "metadata", "index_versions",
}


def test_explicit_write_returns_201_with_the_contract_memory_object(client_a):
    m = write(client_a, "alice", "I prefer answers with the conclusion first.", namespace="support-agent/preference",
              importance=0.9, metadata={"from": "settings"})
    assert MEMORY_FIELDS <= set(m)
    assert m["id"].startswith("mem_") and m["subject"] == "alice" and m["status"] == "active"
    assert m["memory_type"] == "semantic" and m["namespace"] == "support-agent/preference"
    assert m["source"] == {"kind": "user_explicit", "event_id": None}
    assert m["importance"] == 0.9 and m["metadata"] == {"from": "settings"}
    assert m["supersedes"] == [] and m["superseded_by"] is None and m["valid_to"] is None
    assert m["index_versions"]["embedding"] and m["index_versions"]["extractor"]
    assert m["valid_from"].endswith("+00:00")


def test_write_with_a_key_supersedes_the_previous_value(client_a):
    old = write(client_a, "alice", "I live in Paris.", key="user:home_city")
    new = write(client_a, "alice", "I moved to Berlin.", key="user:home_city")
    assert new["supersedes"] == [old["id"]]
    again = client_a.get(f"/api/v1/subjects/alice/memories/{old['id']}").json()
    assert again["status"] == "superseded" and again["superseded_by"] == new["id"]


def test_policy_refusal_is_422_and_its_audit_entry_is_kept(tenant_a, client_a):
    response = post(client_a, "subjects/alice/memories",
                    {"statement": "My password is hunter2hunter2 and my AWS key is AKIAIOSFODNN7EXAMPLE"})
    body = assert_error(response, 422, "policy_rejected")
    assert "secret" in body["error"]["message"].lower()
    with as_tenant(tenant_a):
        assert AuditEntry.objects.filter(tenant=tenant_a, action="policy_refused").count() == 1
        assert not Memory.objects.filter(tenant=tenant_a).exists()


def test_get_one_memory_and_other_tenant_or_subject_gets_404(client_a, client_b):
    m = write(client_a, "alice", "I am allergic to peanuts.")
    assert client_a.get(f"/api/v1/subjects/alice/memories/{m['id']}").json()["statement"] == m["statement"]
    # The same id under tenant B's "alice", or under another subject of tenant A: the same 404.
    assert_error(client_b.get(f"/api/v1/subjects/alice/memories/{m['id']}"), 404, "memory_not_found")
    assert_error(client_a.get(f"/api/v1/subjects/bob/memories/{m['id']}"), 404, "memory_not_found")
    assert_error(client_a.get("/api/v1/subjects/alice/memories/not-an-id"), 404, "memory_not_found")


def test_correction_returns_the_new_version_superseding_the_old(client_a, client_b):
    m1 = write(client_a, "alice", "I prefer answers with the conclusion first.")
    response = client_a.patch(f"/api/v1/subjects/alice/memories/{m1['id']}",
                              {"statement": "I prefer answers with the evidence first."}, format="json")
    assert response.status_code == 200
    m2 = response.json()
    assert m2["id"] != m1["id"] and m2["supersedes"] == [m1["id"]] and m2["source"]["kind"] == "user_explicit"
    assert_error(client_b.patch(f"/api/v1/subjects/alice/memories/{m2['id']}", {"statement": "x"}, format="json"),
                 404)
    # The old version is no longer current: correcting it again is a clear 409.
    assert_error(client_a.patch(f"/api/v1/subjects/alice/memories/{m1['id']}", {"statement": "y"}, format="json"),
                 409, "memory_not_current")


def test_empty_correction_is_400(client_a):
    m = write(client_a, "alice", "I like jazz.")
    assert_error(client_a.patch(f"/api/v1/subjects/alice/memories/{m['id']}", {}, format="json"), 400)


def test_history_lists_versions_oldest_first(client_a, client_b):
    m1 = write(client_a, "alice", "I drive a Golf.")
    m2 = client_a.patch(f"/api/v1/subjects/alice/memories/{m1['id']}", {"statement": "I drive a Polo."},
                        format="json").json()
    history = client_a.get(f"/api/v1/subjects/alice/memories/{m2['id']}/history").json()
    assert [v["id"] for v in history["versions"]] == [m1["id"], m2["id"]]
    assert history["sources"] == [] and history["derived"] == []
    assert_error(client_b.get(f"/api/v1/subjects/alice/memories/{m2['id']}/history"), 404)


def test_list_paginates_with_an_opaque_cursor_and_filters(client_a, client_b):
    ids = [write(client_a, "alice", f"Fact number {i} about alice.", namespace="a/b")["id"] for i in range(5)]
    write(client_a, "alice", "I like green tea.", namespace="other")
    seen, cursor = [], None
    while True:
        path = "/api/v1/subjects/alice/memories?limit=2&namespace=a" + (f"&cursor={cursor}" if cursor else "")
        page = client_a.get(path).json()
        assert len(page["results"]) <= 2
        seen += [m["id"] for m in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))  # newest first, each exactly once
    assert [m["statement"] for m in client_a.get("/api/v1/subjects/alice/memories?q=green").json()["results"]] == [
        "I like green tea."]
    assert client_b.get("/api/v1/subjects/alice/memories").json() == {"results": [], "next_cursor": None}
    assert_error(client_a.get("/api/v1/subjects/alice/memories?cursor=garbage"), 400, "invalid_cursor")
    assert_error(client_a.get("/api/v1/subjects/alice/memories?limit=501"), 400)
    assert_error(client_a.get("/api/v1/subjects/alice/memories?status=bogus"), 400)
    assert_error(client_a.get("/api/v1/subjects/alice/memories?colour=red"), 400)


def test_delete_memory_is_202_with_a_job_and_hides_it(client_a, client_b):
    m = write(client_a, "alice", "I have a dog named Rex.")
    assert_error(client_b.delete(f"/api/v1/subjects/alice/memories/{m['id']}"), 404)
    response = client_a.delete(f"/api/v1/subjects/alice/memories/{m['id']}")
    assert response.status_code == 202 and response.json()["job"].startswith("job_")
    assert_error(client_a.get(f"/api/v1/subjects/alice/memories/{m['id']}"), 404)


def test_idempotency_key_replays_the_same_answer_and_refuses_another_body(tenant_a, client_a, client_b):
    body = {"statement": "I speak Portuguese."}
    first = post(client_a, "subjects/alice/memories", body, HTTP_IDEMPOTENCY_KEY="k-1")
    again = post(client_a, "subjects/alice/memories", body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json() and again["Idempotent-Replayed"] == "true"
    other = post(client_a, "subjects/alice/memories", {"statement": "I speak Greek."}, HTTP_IDEMPOTENCY_KEY="k-1")
    assert_error(other, 409, "idempotency_key_reused")
    with as_tenant(tenant_a):
        assert Memory.objects.filter(tenant=tenant_a).count() == 1
    # Another tenant's identical key is its own.
    assert post(client_b, "subjects/alice/memories", body, HTTP_IDEMPOTENCY_KEY="k-1").json()["id"] != first.json()["id"]


def test_idempotent_policy_refusal_is_replayed_without_a_second_audit(tenant_a, client_a):
    body = {"statement": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
    a = post(client_a, "subjects/alice/memories", body, HTTP_IDEMPOTENCY_KEY="k-2")
    b = post(client_a, "subjects/alice/memories", body, HTTP_IDEMPOTENCY_KEY="k-2")
    assert a.status_code == b.status_code == 422 and a.json() == b.json()
    with as_tenant(tenant_a):
        assert AuditEntry.objects.filter(tenant=tenant_a, action="policy_refused").count() == 1
