"""A client that never sends a `key` (mem0's, MCP's remember) still gets the current fact:
"I prefer tea now" after "I prefer coffee" supersedes it (history kept, as_of returns the
old value); said the same way without a word of change, the later one answers first and both
stay. Only the subject's own statements, only within the subject."""
import pytest

from tests.api.conftest import post, write

pytestmark = pytest.mark.django_db

FILLER = ["The plumber comes on Thursday.", "We watched a film about glaciers.",
          "My niece turns seven next month.", "The bakery on the corner closed down."]


def search(client, subject, query, **fields):
    response = post(client, f"subjects/{subject}/search", {"query": query, "k": 5, **fields})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_a_keyless_restatement_that_says_it_changed_supersedes(client_a):
    for text in FILLER:
        write(client_a, "alice", text, valid_from="2026-01-01T09:00:00Z")
    old = write(client_a, "alice", "I prefer coffee in the morning.", valid_from="2026-02-01T09:00:00Z")
    new = write(client_a, "alice", "I prefer green tea in the morning now.", valid_from="2026-05-01T09:00:00Z")
    stored = client_a.get(f"/api/v1/subjects/alice/memories/{old['id']}").json()
    assert stored["status"] == "superseded" and stored["superseded_by"] == new["id"]
    hits = search(client_a, "alice", "What does the user drink in the morning?")
    assert hits[0]["id"] == new["id"]
    assert old["id"] not in [h["id"] for h in hits]
    then = search(client_a, "alice", "What does the user drink in the morning?", as_of="2026-03-15T00:00:00Z")
    assert then[0]["id"] == old["id"]


def test_said_the_same_way_without_a_change_word_both_stay_and_the_later_answers_first(client_a):
    for text in FILLER:
        write(client_a, "alice", text, valid_from="2026-01-01T09:00:00Z")
    old = write(client_a, "alice", "User prefers window seats on long flights.", valid_from="2026-02-01T09:00:00Z")
    new = write(client_a, "alice", "User prefers aisle seats on long flights.", valid_from="2026-04-01T09:00:00Z")
    assert client_a.get(f"/api/v1/subjects/alice/memories/{old['id']}").json()["status"] == "active"
    # The question's words are the older statement's; the later one still answers it first.
    hits = search(client_a, "alice", "Does the user like window seats on long flights?")
    assert [h["id"] for h in hits[:2]] == [new["id"], old["id"]], hits
    assert hits[1]["score_details"]["answered_later_by"] == new["id"]


def test_a_restatement_never_reaches_another_subject_or_tenant(client_a, client_b):
    alice = write(client_a, "alice", "I prefer coffee in the morning.", valid_from="2026-02-01T09:00:00Z")
    other = write(client_b, "alice", "I prefer coffee in the morning.", valid_from="2026-02-01T09:00:00Z")
    write(client_a, "bob", "I prefer green tea in the morning now.", valid_from="2026-05-01T09:00:00Z")
    write(client_b, "carol", "I prefer green tea in the morning now.", valid_from="2026-05-01T09:00:00Z")
    assert client_a.get(f"/api/v1/subjects/alice/memories/{alice['id']}").json()["status"] == "active"
    assert client_b.get(f"/api/v1/subjects/alice/memories/{other['id']}").json()["status"] == "active"


def test_an_agents_inference_does_not_retire_what_the_person_said(client_a):
    old = write(client_a, "alice", "I prefer coffee in the morning.", valid_from="2026-02-01T09:00:00Z")
    write(client_a, "alice", "I prefer green tea in the morning now.", source="assistant",
          valid_from="2026-05-01T09:00:00Z")
    assert client_a.get(f"/api/v1/subjects/alice/memories/{old['id']}").json()["status"] == "active"


def test_the_supersession_audit_keeps_the_old_version_as_it_was(client_a, tenant_a):
    from memoryapp.models import AuditEntry
    from tests.conftest import as_tenant

    old = write(client_a, "alice", "I prefer coffee in the morning.", valid_from="2026-02-01T09:00:00Z")
    write(client_a, "alice", "I prefer green tea in the morning now.", valid_from="2026-05-01T09:00:00Z")
    with as_tenant(tenant_a):
        entry = AuditEntry.objects.get(action="memory_superseded", memory_id=old["id"].removeprefix("mem_"))
    assert entry.before["status"] == "active" and entry.before["valid_to"] is None
    assert entry.after["status"] == "superseded" and entry.after["valid_to"] is not None
