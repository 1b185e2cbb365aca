"""Issue 15, the read path: the profile is always loaded and has its own endpoint; sensitivity and
purpose are filtered before ranking and recorded; the narrowest namespace's version of a keyed
fact wins where the caller works (seed 001 §15); a conflict is shown as a conflict."""
import json

import pytest
from rest_framework.test import APIClient

from memoryapp.context import CONFLICT_LABEL, PROFILE_HEADER, count_tokens
from memoryapp.models import ReadAudit
from tests.api.conftest import assert_error, make_client, post, write

pytestmark = pytest.mark.django_db


def profile(client, subject, **params):
    response = client.get(f"/api/v1/subjects/{subject}/profile", params)
    assert response.status_code == 200, response.content
    return response.json()


def statements(profile_json) -> list[str]:
    return [i["statement"] for i in profile_json["facts"] + profile_json["preferences"]]


def found(client, subject, query, **fields) -> list[str]:
    response = post(client, f"subjects/{subject}/search", {"query": query, "k": 20, **fields})
    assert response.status_code == 200, response.content
    return [r["statement"] for r in response.json()["results"]]


def context(client, subject, query, **fields) -> dict:
    response = post(client, f"subjects/{subject}/context", {"query": query, **fields})
    assert response.status_code == 200, response.content
    return response.json()


# --- item 1: the profile -------------------------------------------------------------------

def test_context_starts_with_the_profile_whatever_the_query(client_a):
    write(client_a, "alice", "Alice lives in Bergen.", key="user:home_city", valid_from="2026-03-01T00:00:00+00:00")
    write(client_a, "alice", "Alice's timezone is Europe/Oslo.", key="user:timezone")
    write(client_a, "alice", "I went to a jazz concert last night.", memory_type="episodic")
    body = context(client_a, "alice", "What music events did I attend?")
    lines = body["context"].splitlines()
    assert lines[0] == PROFILE_HEADER
    assert "- [2026-03-01, source: user_explicit] Alice lives in Bergen." in lines
    assert any("Europe/Oslo" in line for line in lines[:3])
    assert "jazz concert" in body["context"]  # the query's own memory still follows
    assert body["profile"]["facts"] and body["tokens"] == count_tokens(body["context"])
    # A query unrelated to every stored memory still gets the profile.
    unrelated = context(client_a, "alice", "What is the half-life of carbon-14?")
    assert unrelated["context"].startswith(PROFILE_HEADER) and "Bergen" in unrelated["context"]
    assert unrelated["nothing_relevant"] is True and unrelated["memories"] == []


def test_the_profile_stays_within_the_token_budget(client_a):
    for i in range(16):
        write(client_a, "alice", f"Alice's attribute number {i} is a fairly long value of some kind.", key=f"user:a{i}")
    for budget in (1, 10, 40, 200, 1000):
        body = context(client_a, "alice", "attribute", token_budget=budget)
        assert body["tokens"] <= budget and body["tokens"] == count_tokens(body["context"])
    # At most half the budget goes to the profile: the query's memories keep room.
    body = context(client_a, "alice", "attribute", token_budget=200)
    profile_part = body["context"].split("Relevant memories")[0]
    assert count_tokens(profile_part) <= 100 + 1


def test_profile_endpoint_answers_only_for_the_keys_tenant_and_subject(client_a, client_b, tenant_a):
    write(client_a, "alice", "Alice lives in Bergen.", key="user:home_city")
    write(client_a, "bob", "Bob lives in Rome.", key="user:home_city")
    write(client_b, "alice", "Tenant B's Alice lives in Quito.", key="user:home_city")
    assert statements(profile(client_a, "alice")) == ["Alice lives in Bergen."]
    assert statements(profile(client_b, "alice")) == ["Tenant B's Alice lives in Quito."]
    assert statements(profile(client_b, "bob")) == []
    item = profile(client_a, "alice")["facts"][0]
    assert item["source"] == "user_explicit" and item["valid_from"] and item["memory_id"].startswith("mem_")
    bound = make_client(tenant_a, "alice")
    assert statements(profile(bound, "alice")) == ["Alice lives in Bergen."]
    assert_error(bound.get("/api/v1/subjects/bob/profile"), 403, "subject_forbidden")
    assert APIClient().get("/api/v1/subjects/alice/profile").status_code == 401


def test_profile_read_is_audited_with_its_purpose_and_bad_input_is_a_400(client_a, tenant_a):
    made = write(client_a, "alice", "Alice lives in Bergen.", key="user:home_city")
    profile(client_a, "alice", purpose="support")
    audit = ReadAudit.objects.filter(tenant=tenant_a, operation="profile").get()
    assert audit.purpose == "support" and [f"mem_{m.hex}" for m in audit.memory_ids] == [made["id"]]
    details = assert_error(client_a.get("/api/v1/subjects/alice/profile", {"max_sensitivity": "secret"}),
                           400, "invalid_request")["error"]["details"]
    assert "max_sensitivity" in details
    assert "purpose" in assert_error(client_a.get("/api/v1/subjects/alice/profile", {"purpose": "x" * 65}),
                                     400)["error"]["details"]
    assert "colour" in str(assert_error(client_a.get("/api/v1/subjects/alice/profile", {"colour": "x"}), 400))


# --- item 5: sensitivity and purpose -------------------------------------------------------

def test_special_memories_are_left_out_unless_asked_for(client_a, client_b):
    write(client_a, "alice", "Alice has type 1 diabetes.", sensitivity="special", key="user:health")
    write(client_a, "alice", "Alice has a dentist appointment on Friday.", sensitivity="personal")
    write(client_b, "alice", "Tenant B's Alice has asthma.", sensitivity="special")
    assert found(client_a, "alice", "health condition diabetes") == ["Alice has a dentist appointment on Friday."]
    # Filtered before ranking: with k=1 the one slot goes to what the read may see.
    assert found(client_a, "alice", "diabetes", k=1) == ["Alice has a dentist appointment on Friday."]
    assert "diabetes" not in context(client_a, "alice", "health condition diabetes")["context"]
    assert statements(profile(client_a, "alice")) == []
    asked = found(client_a, "alice", "health condition diabetes", max_sensitivity="special")
    assert "Alice has type 1 diabetes." in asked and not any("asthma" in s for s in asked)
    assert "diabetes" in context(client_a, "alice", "health", max_sensitivity="special")["context"]
    assert statements(profile(client_a, "alice", max_sensitivity="special")) == ["Alice has type 1 diabetes."]
    # Lower ceilings leave out more; another subject's special memory is never reached.
    assert found(client_a, "alice", "dentist", max_sensitivity="internal") == []
    assert found(client_a, "bob", "diabetes", max_sensitivity="special") == []


def test_purpose_restricted_memories_are_seen_only_by_a_read_for_that_purpose(client_a, client_b, tenant_a):
    write(client_a, "alice", "Alice's card ends in 4242.", purposes=["billing"])
    write(client_a, "alice", "Alice's card is due for renewal in May.", purposes=["billing", "Customer  Support"])
    # A client's own "purposes" metadata key restricts nothing (it may predate the extension).
    write(client_a, "alice", "Alice's card PIN reminder letter was sent.", metadata={"purposes": ["billing"]})
    write(client_a, "alice", "Alice asked about her card on the phone.")
    write(client_b, "alice", "Tenant B's card note for billing.", purposes=["billing"])
    query = "Alice's card"
    unrestricted = {"Alice asked about her card on the phone.", "Alice's card PIN reminder letter was sent."}
    assert set(found(client_a, "alice", query)) == unrestricted
    assert set(found(client_a, "alice", query, purpose="billing")) == {
        "Alice's card ends in 4242.", "Alice's card is due for renewal in May.", *unrestricted}
    assert set(found(client_a, "alice", query, purpose=" customer support ")) == {
        "Alice's card is due for renewal in May.", *unrestricted}
    assert "4242" not in context(client_a, "alice", query, purpose="marketing")["context"]
    assert "4242" in context(client_a, "alice", query, purpose="billing")["context"]
    # The purpose is recorded in the read audit, normalised as compared.
    audits = list(ReadAudit.objects.filter(tenant=tenant_a, operation__in=["search", "context"]).order_by("id"))
    assert [a.purpose for a in audits] == ["", "billing", "customer support", "marketing", "billing"]


def test_purposes_are_validated_on_write_and_survive_as_metadata(client_a):
    made = write(client_a, "alice", "Alice's IBAN is on file with the bank.", purposes=["Billing", "billing"])
    assert made["metadata"] == {"_purposes": ["billing"]}
    # Sent back as read (a client round trip), the reserved key is held to the same rules.
    again = write(client_a, "alice", "Alice's BIC is on file too.", metadata=made["metadata"])
    assert again["metadata"] == {"_purposes": ["billing"]}
    for body in ({"purposes": "billing"}, {"purposes": ["  "]}, {"metadata": {"_purposes": "billing"}},
                 {"purposes": ["billing"], "metadata": {"_purposes": ["billing"]}}):
        response = post(client_a, "subjects/alice/memories", {"statement": "Something.", **body})
        details = assert_error(response, 400, "invalid_request")["error"]["details"]
        assert "purposes" in str(details)
    for body in ({"purpose": 3}, {"max_sensitivity": "top"}, {"working_namespace": "a b"}):
        response = post(client_a, "subjects/alice/search", {"query": "card", **body})
        assert next(iter(body)) in assert_error(response, 400)["error"]["details"]


def mcp_call(client, tool: str, arguments: dict) -> dict:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = client.post("/mcp/", message, format="json", HTTP_ACCEPT="application/json, text/event-stream",
                           HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
    assert response.status_code == 200, response.content
    result = json.loads(response.content)["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


def test_mcp_and_mem0_doors_leave_special_out(client_a):
    write(client_a, "alice", "Alice is a practising Buddhist.", sensitivity="special")
    write(client_a, "alice", "Alice practises the piano daily.")
    recalled = mcp_call(client_a, "recall", {"subject": "alice", "query": "practising"})
    assert [r["statement"] for r in recalled["results"]] == ["Alice practises the piano daily."]
    built = mcp_call(client_a, "get_context", {"subject": "alice", "query": "practising"})
    assert "piano" in built["context"] and "Buddhist" not in built["context"]
    asked = mcp_call(client_a, "recall", {"subject": "alice", "query": "religion", "max_sensitivity": "special"})
    assert "Alice is a practising Buddhist." in [r["statement"] for r in asked["results"]]
    mem0 = APIClient()
    mem0.credentials(HTTP_AUTHORIZATION=f"Token {client_a.raw_key}")
    response = mem0.post("/v3/memories/search/", {"query": "practising", "user_id": "alice"}, format="json")
    assert response.status_code == 200, response.content
    assert [r["memory"] for r in response.json()["results"]] == ["Alice practises the piano daily."]


# --- item 8: scope precedence (seed 001 §15) ------------------------------------------------

def test_seed_15_the_finance_report_rule_applies_there_and_the_original_elsewhere(client_a, client_b, tenant_a):
    general = write(client_a, "alice", "For capacity plans, list both the GPU card count and GPU-hours.",
                    namespace="capacity-plans", key="user:capacity_report_format", importance=0.8)
    finance = write(client_a, "alice", "For financial reporting, give only GPU-hours, not the card count.",
                    namespace="capacity-plans/finance-report", key="user:capacity_report_format", importance=0.8)
    write(client_b, "alice", "Tenant B: always give the card count only.", namespace="capacity-plans/finance-report",
          key="user:capacity_report_format")
    # The original is kept, not overwritten.
    assert post(client_a, "subjects/alice/search", {"query": "GPU"}).status_code == 200
    assert client_a.get(f"/api/v1/subjects/alice/memories/{general['id']}").json()["status"] == "active"
    query = "How should I report GPU capacity?"

    in_finance = context(client_a, "alice", query, namespace="capacity-plans/finance-report")["context"]
    assert "only GPU-hours" in in_finance and "both the GPU card count" not in in_finance
    assert "applies in: capacity-plans/finance-report" in in_finance and "Tenant B" not in in_finance
    for elsewhere in ("capacity-plans", "capacity-plans/quarterly", "capacity-plans/finance-report-old"):
        text = context(client_a, "alice", query, namespace=elsewhere)["context"]
        assert "both the GPU card count" in text and "only GPU-hours" not in text, elsewhere

    def keyed(**fields):
        return found(client_a, "alice", query, **fields)

    assert keyed(working_namespace="capacity-plans/finance-report") == [finance["statement"]]
    assert keyed(working_namespace="capacity-plans/hr") == [general["statement"]]
    # Search's `namespace` keeps its prefix meaning: both versions are below capacity-plans.
    assert set(keyed(namespace="capacity-plans")) == {general["statement"], finance["statement"]}
    finance_profile = profile(client_a, "alice", namespace="capacity-plans/finance-report")
    assert statements(finance_profile) == [finance["statement"]]
    assert statements(profile(client_a, "alice", namespace="capacity-plans")) == [general["statement"]]
    # Tenant B has no general version: its finance rule, filed below capacity-plans, applies there.
    assert statements(profile(client_b, "alice", namespace="capacity-plans")) == [
        "Tenant B: always give the card count only."]


def test_working_in_a_namespace_includes_what_is_filed_below_it_but_not_a_siblings(client_a, client_b):
    # An agent working as "support-agent" reads its own "support-agent/preference" memories.
    write(client_a, "alice", "Alice wants answers with the conclusion first.", namespace="support-agent/preference")
    write(client_a, "alice", "Alice wants answers with a long preamble.", namespace="sales-agent/preference")
    write(client_b, "alice", "Tenant B: Alice wants answers in verse.", namespace="support-agent/preference")
    text = context(client_a, "alice", "How does Alice want answers?", namespace="support-agent")["context"]
    assert "conclusion first" in text and "long preamble" not in text and "verse" not in text
    # A keyed fact only below the working namespace applies there; the chain's own version wins.
    write(client_a, "alice", "Alice's reports use metric units.", namespace="reports/engineering", key="user:units")
    assert found(client_a, "alice", "units", working_namespace="reports") == ["Alice's reports use metric units."]
    write(client_a, "alice", "Alice's reports use imperial units.", namespace="reports", key="user:units")
    assert found(client_a, "alice", "units", working_namespace="reports") == ["Alice's reports use imperial units."]
    assert found(client_a, "alice", "units", working_namespace="reports/engineering") == [
        "Alice's reports use metric units."]


def test_a_narrower_version_the_read_may_not_see_does_not_hide_the_general_one(client_a):
    write(client_a, "alice", "Alice's emergency contact is her sister.", namespace="hr", key="user:emergency_contact")
    write(client_a, "alice", "In the clinic, Alice's emergency contact is her doctor.", namespace="hr/clinic",
          key="user:emergency_contact", sensitivity="special")
    text = context(client_a, "alice", "emergency contact", namespace="hr/clinic")["context"]
    assert "her sister" in text and "her doctor" not in text
    text = context(client_a, "alice", "emergency contact", namespace="hr/clinic", max_sensitivity="special")["context"]
    assert "her doctor" in text and "her sister" not in text


# --- item 4 (read side): conflicts ---------------------------------------------------------

def test_a_conflicted_fact_is_shown_as_a_conflict_with_both_sides(client_a, client_b, tenant_a):
    # Two tools disagree; the tenant takes tools' statements as facts (else they wait as candidates).
    tenant_a.accept_inferences = True
    tenant_a.save(update_fields=["accept_inferences"])
    write(client_a, "alice", "Alice works at Acme.", key="user:employer", source="tool", metadata={"speaker": "crm"},
          valid_from="2026-01-10T00:00:00+00:00")
    write(client_a, "alice", "Alice works at Globex.", key="user:employer", source="tool", metadata={"speaker": "hr"},
          valid_from="2026-02-10T00:00:00+00:00")
    write(client_b, "alice", "Tenant B's Alice works at Initech.", key="user:employer", source="tool")
    body = profile(client_a, "alice")
    assert statements(body) == []  # neither side is stated as the fact
    [conflict] = body["conflicts"]
    assert conflict["key"] == "user:employer"
    assert [v["statement"] for v in conflict["versions"]] == ["Alice works at Globex.", "Alice works at Acme."]
    assert {v["source"] for v in conflict["versions"]} == {"tool"}
    text = context(client_a, "alice", "Where does Alice work?")["context"]
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if CONFLICT_LABEL in line)
    assert "user:employer" in lines[head]
    assert lines[head + 1:head + 3] == ["  - [2026-02-10, source: tool] Alice works at Globex.",
                                        "  - [2026-01-10, source: tool] Alice works at Acme."]
    assert text.count("Alice works at") == 2 and "Initech" not in text
    assert profile(client_b, "alice")["conflicts"] == []


def test_the_profile_lists_every_fact_the_person_kept_as_true_together(client_a, client_b):
    first = write(client_a, "alice", "I work at Acme.", key="user:employer", source="system")
    write(client_a, "alice", "I work at Globex.", key="user:employer", source="user")
    [conflict] = client_a.get("/api/v1/subjects/alice/conflicts").json()["conflicts"]
    response = post(client_a, f"subjects/alice/conflicts/{conflict['id']}/resolve", {"resolution": "keep_all"})
    assert response.status_code == 200, response.content
    body = profile(client_a, "alice")
    assert body["conflicts"] == [] and set(statements(body)) == {"I work at Acme.", "I work at Globex."}
    assert first["statement"] not in str(profile(client_b, "alice"))
    # A top-level working namespace is every namespace, as in search.
    write(client_a, "alice", "I prefer tea.", namespace="drinks", key="user:drink")
    assert "I prefer tea." in str(profile(client_a, "alice", namespace=""))
