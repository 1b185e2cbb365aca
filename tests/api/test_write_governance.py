"""Issue 15, the write path: inferences wait for the person (candidates), a key claims no more
authority than it was given (max_source), and conflicts are put to the person to settle. Every
read and change is checked against another tenant and another subject too."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from memoryapp.actors import Actor
from memoryapp.models import ApiKey, AuditEntry, Memory, Tenant
from memoryapp.policy import held_as_candidate
from memoryapp.selectors.memories import subject_get
from memoryapp.services.consolidation import consolidation_merge
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.services.tenants import api_key_create
from tests.api.conftest import assert_error, make_client, post, write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db

SYSTEM = Actor("system", "tests")
CITY = "user:home_city"


def capped_client(tenant, max_source: str, subject_ref: str = "") -> APIClient:
    _, raw = api_key_create(tenant=tenant, subject_ref=subject_ref, name="capped", actor=SYSTEM,
                            max_source=max_source)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.raw_key = raw
    return client


def statements(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["statement"] for r in response.json()["results"]]


def search(client, subject, query):
    return statements(post(client, f"subjects/{subject}/search", {"query": query, "k": 10}))


def context_text(client, subject, query) -> str:
    response = post(client, f"subjects/{subject}/context", {"query": query})
    assert response.status_code == 200, response.content
    return str(response.json())


def actions(tenant) -> list[str]:
    with as_tenant(tenant):
        return list(AuditEntry.objects.filter(tenant=tenant).order_by("id").values_list("action", flat=True))


# --- 2. Inferences are candidates -----------------------------------------------------------

def test_an_assistants_inference_waits_as_a_candidate_that_search_context_and_current_lists_leave_out(client_a):
    guess = write(client_a, "alice", "Alice probably lives in Lisbon.", key=CITY, source="assistant")
    assert guess["status"] == "candidate"
    assert "Alice probably lives in Lisbon." not in search(client_a, "alice", "Where does Alice live? Lisbon")
    assert "Lisbon" not in context_text(client_a, "alice", "Where does Alice live?")
    current = client_a.get("/api/v1/subjects/alice/memories", {"status": "active"}).json()["results"]
    assert current == []
    waiting = client_a.get("/api/v1/subjects/alice/memories", {"status": "candidate"}).json()["results"]
    assert [m["id"] for m in waiting] == [guess["id"]]


def test_a_tool_inference_is_a_candidate_too_and_an_episode_is_kept_as_the_record_of_what_was_said():
    assert held_as_candidate(memory_type="semantic", source_kind="tool", accept_inferences=False)
    assert not held_as_candidate(memory_type="episodic", source_kind="assistant", accept_inferences=False)
    assert not held_as_candidate(memory_type="semantic", source_kind="user", accept_inferences=False)
    assert not held_as_candidate(memory_type="semantic", source_kind="assistant", accept_inferences=True)


def test_confirming_a_candidate_makes_it_the_persons_current_fact_and_is_audited(client_a, tenant_a):
    old = write(client_a, "alice", "I live in Porto.", key=CITY, source="system")
    guess = write(client_a, "alice", "Alice lives in Lisbon.", key=CITY, source="assistant")
    response = post(client_a, f"subjects/alice/memories/{guess['id']}/confirm")
    assert response.status_code == 200, response.content
    fact = response.json()
    assert fact["status"] == "active" and fact["source"]["kind"] == "user_explicit"
    assert fact["statement"] == "Alice lives in Lisbon." and fact["confidence"] == 1.0
    assert client_a.get(f"/api/v1/subjects/alice/memories/{guess['id']}").json()["status"] == "superseded"
    assert client_a.get(f"/api/v1/subjects/alice/memories/{old['id']}").json()["status"] == "superseded"
    assert "Alice lives in Lisbon." in search(client_a, "alice", "Where does Alice live? Lisbon")
    assert "candidate_confirmed" in actions(tenant_a)
    # Once confirmed it is no longer waiting: a second answer is refused, not applied twice.
    assert_error(post(client_a, f"subjects/alice/memories/{guess['id']}/confirm"), 409, "not_candidate")


def test_rejecting_a_candidate_keeps_it_out_for_good_and_is_audited(client_a, tenant_a):
    guess = write(client_a, "alice", "Alice is vegetarian.", source="tool")
    response = post(client_a, f"subjects/alice/memories/{guess['id']}/reject")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "rejected"
    assert "Alice is vegetarian." not in search(client_a, "alice", "Is Alice vegetarian?")
    assert_error(post(client_a, f"subjects/alice/memories/{guess['id']}/confirm"), 409, "not_candidate")
    assert "candidate_rejected" in actions(tenant_a)


def test_a_later_user_statement_of_the_same_keyed_value_confirms_the_candidate_and_another_rejects_it(tenant_a):
    def draft(statement, source, value):
        return MemoryDraft(statement=statement, key=CITY, source_kind=source, metadata={"value": value})

    same = memory_write(tenant=tenant_a, subject_ref="alice", actor=SYSTEM,
                        draft=draft("The user lives in Lisbon.", "assistant", "Lisbon")).memory
    other = memory_write(tenant=tenant_a, subject_ref="bob", actor=SYSTEM,
                         draft=draft("The user lives in Lisbon.", "assistant", "Lisbon")).memory
    said = memory_write(tenant=tenant_a, subject_ref="alice", actor=SYSTEM,
                        draft=draft("I'm in Lisbon these days.", "user", "lisbon")).memory
    with as_tenant(tenant_a):
        same.refresh_from_db()
        other.refresh_from_db()
    assert (same.status, same.status_reason, same.superseded_by_id) == ("superseded", "confirmed", said.pk)
    # Bob's candidate is another person's: untouched by what Alice said.
    assert other.status == "candidate"
    contradicted = memory_write(tenant=tenant_a, subject_ref="bob", actor=SYSTEM,
                                draft=draft("I live in Madrid.", "user_explicit", "Madrid")).memory
    with as_tenant(tenant_a):
        other.refresh_from_db()
    assert (other.status, other.status_reason, other.superseded_by_id) == ("rejected", "contradicted",
                                                                           contradicted.pk)


def test_a_user_correcting_a_candidate_replaces_it_with_their_own_word(client_a):
    guess = write(client_a, "alice", "Alice lives in Lisbon.", key=CITY, source="assistant")
    response = client_a.patch(f"/api/v1/subjects/alice/memories/{guess['id']}",
                              {"statement": "I live in Porto."}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "active"
    replaced = client_a.get(f"/api/v1/subjects/alice/memories/{guess['id']}").json()
    assert (replaced["status"], replaced["status_reason"]) == ("superseded", "superseded_by_person")


def test_a_tenant_that_accepts_inferences_stores_them_as_current_and_the_setting_is_audited(client_a, tenant_a):
    out = StringIO()
    call_command("tenant_settings", "--tenant", tenant_a.slug, "--accept-inferences", "on", stdout=out)
    assert "accept-inferences on" in out.getvalue()
    assert Tenant.objects.get(pk=tenant_a.pk).accept_inferences
    assert "tenant_settings_changed" in actions(tenant_a)
    client = make_client(Tenant.objects.get(pk=tenant_a.pk))
    assert write(client, "alice", "Alice lives in Lisbon.", source="assistant")["status"] == "active"
    with pytest.raises(CommandError):
        call_command("tenant_settings", "--tenant", "no-such-tenant", stdout=StringIO())


def test_nobody_outside_the_subject_or_tenant_can_confirm_or_reject_a_candidate(client_a, client_b, tenant_a):
    guess = write(client_a, "alice", "Alice lives in Lisbon.", source="assistant")
    for verb in ("confirm", "reject"):
        assert_error(post(client_b, f"subjects/alice/memories/{guess['id']}/{verb}"), 404)
        assert_error(post(client_a, f"subjects/bob/memories/{guess['id']}/{verb}"), 404)
        assert_error(post(make_client(tenant_a, "bob"), f"subjects/alice/memories/{guess['id']}/{verb}"), 403,
                     "subject_forbidden")
    assert client_a.get(f"/api/v1/subjects/alice/memories/{guess['id']}").json()["status"] == "candidate"
    assert client_b.get("/api/v1/subjects/alice/memories", {"status": "candidate"}).json()["results"] == []


# --- 3. Authority is not self-declared --------------------------------------------------------

def test_a_key_claiming_more_than_its_max_source_is_refused_audited_and_nothing_is_written(tenant_a):
    agent = capped_client(tenant_a, "assistant")
    body = assert_error(post(agent, "subjects/alice/memories", {"statement": "I live in Rome.", "source": "user"}),
                        403, "source_not_allowed")
    assert body["error"]["details"] == {"source": "user", "max_source": "assistant"}
    assert "source_refused" in actions(tenant_a)
    with as_tenant(tenant_a):
        assert not Memory.objects.filter(tenant=tenant_a).exists()
    # Without a claim it writes with its own cap: an inference, waiting for the person.
    written = write(agent, "alice", "Alice lives in Rome.")
    assert (written["source"]["kind"], written["status"]) == ("assistant", "candidate")
    assert agent.get("/api/v1/key").json()["max_source"] == "assistant"


def test_the_cap_holds_for_corrections_events_confirmations_and_conflicts(client_a, tenant_a):
    agent = capped_client(tenant_a, "tool")
    fact = write(client_a, "alice", "I live in Lisbon.", key=CITY)
    assert_error(agent.patch(f"/api/v1/subjects/alice/memories/{fact['id']}",
                             {"statement": "I live in Rome.", "source": "user_explicit"}, format="json"),
                 403, "source_not_allowed")
    # A correction without a source speaks as the key's cap: lower than the user's fact, refused.
    assert agent.patch(f"/api/v1/subjects/alice/memories/{fact['id']}", {"statement": "I live in Rome."},
                       format="json").status_code == 409
    # An event's role implies its source: a user turn is more than a tool key may claim.
    assert_error(post(agent, "subjects/alice/events", {"event_id": "e1", "role": "user", "content": "Hi"}),
                 403, "source_not_allowed")
    assert_error(post(agent, "subjects/alice/events", {"event_id": "e2", "role": "tool", "content": "x",
                                                       "source": "system"}), 403, "source_not_allowed")
    tool_turn = {"event_id": "e3", "role": "tool", "content": "Done."}
    assert post(agent, "subjects/alice/events", tool_turn).status_code == 202
    guess = write(client_a, "alice", "Alice likes jazz.", source="assistant")
    assert_error(post(agent, f"subjects/alice/memories/{guess['id']}/confirm"), 403, "source_not_allowed")
    assert_error(post(agent, "subjects/alice/conflicts/cfl_0/resolve", {"resolution": "keep_all"}), 403,
                 "source_not_allowed")
    assert client_a.get(f"/api/v1/subjects/alice/memories/{fact['id']}").json()["status"] == "active"


def test_the_cap_holds_on_the_mem0_door(tenant_a):
    _, raw = api_key_create(tenant=tenant_a, name="mem0", actor=SYSTEM, max_source="assistant")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    body = {"messages": [{"role": "user", "content": "I live in Rome."}], "user_id": "alice", "infer": False}
    response = client.post("/v3/memories/add/", body, format="json")
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "source_not_allowed"
    body["infer"] = True
    assert client.post("/v3/memories/add/", body, format="json").status_code == 403
    body["messages"][0]["role"] = "assistant"
    assert client.post("/v3/memories/add/", body, format="json").status_code == 202


def test_create_api_key_takes_a_max_source_and_the_default_keeps_the_contract(tenant_a):
    out = StringIO()
    call_command("create_api_key", "--tenant", tenant_a.slug, "--max-source", "tool", stdout=out)
    assert "at most source 'tool'" in out.getvalue()
    prefix = out.getvalue().strip().splitlines()[-1].split("_")[1]
    with as_tenant(tenant_a):
        assert ApiKey.objects.get(prefix=prefix).max_source == "tool"
    with pytest.raises(CommandError):
        call_command("create_api_key", "--tenant", tenant_a.slug, "--max-source", "root", stdout=StringIO())
    uncapped = make_client(tenant_a)
    assert write(uncapped, "alice", "I live in Lisbon.")["source"]["kind"] == "user_explicit"


def test_a_merge_carries_its_weakest_sources_trust_and_confidence(tenant_a):
    memory_write(tenant=tenant_a, subject_ref="alice", actor=SYSTEM,
                 draft=MemoryDraft(statement="I'm allergic to peanuts.", source_kind="user_explicit"))
    memory_write(tenant=tenant_a, subject_ref="alice", actor=SYSTEM,
                 draft=MemoryDraft(statement="I am allergic to peanuts.", source_kind="system", confidence=0.6))
    with as_tenant(tenant_a):
        subject = subject_get(tenant=tenant_a, external_id="alice")
    consolidation_merge(tenant=tenant_a, subject=subject)
    with as_tenant(tenant_a):
        merged = Memory.objects.get(tenant=tenant_a, status="active", metadata__consolidated_from=2)
    assert (merged.source_kind, merged.confidence) == ("system", 0.6)


# --- 4. Conflicts go to the person ----------------------------------------------------------

def conflicting(client, subject="alice"):
    first = write(client, subject, "I work at Acme.", key="user:employer", source="system")
    second = write(client, subject, "I work at Globex.", key="user:employer", source="user")
    return first, second


def conflicts(client, subject="alice"):
    response = client.get(f"/api/v1/subjects/{subject}/conflicts")
    assert response.status_code == 200, response.content
    return response.json()["conflicts"]


def test_disagreeing_facts_are_listed_with_dates_and_sources_and_an_id(client_a):
    first, second = conflicting(client_a)
    [conflict] = conflicts(client_a)
    assert conflict["id"].startswith("cfl_") and conflict["key"] == "user:employer"
    assert [m["id"] for m in conflict["memories"]] == [first["id"], second["id"]]
    assert {m["source"]["kind"] for m in conflict["memories"]} == {"system", "user"}
    assert all(m["valid_from"] and m["recorded_at"] for m in conflict["memories"])


def test_keeping_one_retires_the_other_clears_the_flag_and_is_audited(client_a, tenant_a):
    first, second = conflicting(client_a)
    [conflict] = conflicts(client_a)
    response = post(client_a, f"subjects/alice/conflicts/{conflict['id']}/resolve",
                    {"resolution": "keep", "memory_id": second["id"]})
    assert response.status_code == 200, response.content
    [kept] = response.json()["memories"]
    assert kept["id"] == second["id"] and "conflict" not in kept["flags"]
    assert client_a.get(f"/api/v1/subjects/alice/memories/{first['id']}").json()["status"] == "superseded"
    assert conflicts(client_a) == []
    assert "conflict_resolved" in actions(tenant_a)
    assert_error(post(client_a, f"subjects/alice/conflicts/{conflict['id']}/resolve", {"resolution": "keep_all"}),
                 404, "conflict_not_found")


def test_keeping_all_keeps_both_current_without_the_flag(client_a):
    first, second = conflicting(client_a)
    [conflict] = conflicts(client_a)
    response = post(client_a, f"subjects/alice/conflicts/{conflict['id']}/resolve", {"resolution": "keep_all"})
    assert response.status_code == 200, response.content
    assert sorted(m["id"] for m in response.json()["memories"]) == sorted([first["id"], second["id"]])
    assert all("conflict" not in m["flags"] for m in response.json()["memories"])
    assert conflicts(client_a) == []


def test_correcting_replaces_both_with_the_persons_statement(client_a):
    first, second = conflicting(client_a)
    [conflict] = conflicts(client_a)
    response = post(client_a, f"subjects/alice/conflicts/{conflict['id']}/resolve",
                    {"resolution": "correct", "statement": "I work at Initech."})
    assert response.status_code == 200, response.content
    [now] = response.json()["memories"]
    assert (now["statement"], now["source"]["kind"]) == ("I work at Initech.", "user_explicit")
    for old in (first, second):
        assert client_a.get(f"/api/v1/subjects/alice/memories/{old['id']}").json()["status"] == "superseded"


def test_a_bad_resolution_is_a_400_naming_the_field_and_changes_nothing(client_a):
    conflicting(client_a)
    [conflict] = conflicts(client_a)
    path = f"subjects/alice/conflicts/{conflict['id']}/resolve"
    assert "resolution" in assert_error(post(client_a, path, {}), 400)["error"]["details"]
    assert "memory_id" in assert_error(post(client_a, path, {"resolution": "keep"}), 400)["error"]["details"]
    assert "statement" in assert_error(post(client_a, path, {"resolution": "correct"}), 400)["error"]["details"]
    outsider = write(client_a, "bob", "I work at Acme.")
    assert "memory_id" in assert_error(post(client_a, path, {"resolution": "keep", "memory_id": outsider["id"]}),
                                       400)["error"]["details"]
    secret = {"resolution": "correct", "statement": "My AWS key is AKIAIOSFODNN7EXAMPLE"}
    assert_error(post(client_a, path, secret), 422)
    assert len(conflicts(client_a)) == 1


def test_another_tenant_or_subject_neither_sees_nor_settles_a_conflict(client_a, client_b, tenant_a):
    conflicting(client_a)
    [conflict] = conflicts(client_a)
    assert conflicts(client_b) == [] and conflicts(client_a, "bob") == []
    for client, subject in ((client_b, "alice"), (client_a, "bob")):
        assert_error(post(client, f"subjects/{subject}/conflicts/{conflict['id']}/resolve",
                          {"resolution": "keep_all"}), 404, "conflict_not_found")
    assert_error(make_client(tenant_a, "bob").get("/api/v1/subjects/alice/conflicts"), 403, "subject_forbidden")
    assert len(conflicts(client_a)) == 1


def test_the_cap_holds_on_the_mcp_door_where_remember_speaks_with_the_keys_cap(tenant_a):
    agent = capped_client(tenant_a, "assistant", subject_ref="alice")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"statement": "Alice is probably a night owl."}}}
    response = agent.post("/mcp/", call, format="json", HTTP_ACCEPT="application/json, text/event-stream")
    assert response.status_code == 200, response.content
    assert "error" not in response.json(), response.json()
    with as_tenant(tenant_a):
        memory = Memory.objects.get(tenant=tenant_a, statement="Alice is probably a night owl.")
    assert (memory.source_kind, memory.status) == ("assistant", "candidate")


def test_a_confirmed_or_superseded_inference_was_never_a_fact_so_no_as_of_returns_it(client_a):
    guess = write(client_a, "alice", "Alice lives in Lisbon.", key=CITY, source="assistant",
                  valid_from="2026-01-01T00:00:00Z")
    assert post(client_a, f"subjects/alice/memories/{guess['id']}/confirm").status_code == 200
    then = statements(post(client_a, "subjects/alice/search",
                           {"query": "Where does Alice live? Lisbon", "as_of": "2026-02-01T00:00:00Z"}))
    assert "Alice lives in Lisbon." not in then
    replaced = client_a.get(f"/api/v1/subjects/alice/memories/{guess['id']}").json()
    assert replaced["valid_to"] == replaced["valid_from"]
