import pytest

from memoryapp.models import Event
from tests.api.conftest import assert_error, post
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def event(event_id, content="I just adopted a cat called Miso.", **kw):
    return {"event_id": event_id, "role": "user", "content": content, **kw}


def test_one_event_is_accepted_with_202_and_a_job(tenant_a, client_a):
    response = post(client_a, "subjects/alice/events", event("e1", occurred_at="2026-09-12T09:00:00+02:00"))
    assert response.status_code == 202
    body = response.json()
    assert body["job"].startswith("job_")
    [item] = body["events"]
    assert item["event_id"] == "e1" and item["duplicate"] is False and item["status"] == "pending"
    assert item["id"].startswith("evt_")
    with as_tenant(tenant_a):
        stored = Event.objects.get(tenant=tenant_a, event_id="e1")
        assert stored.source_kind == "user" and stored.occurred_at.isoformat() == "2026-09-12T07:00:00+00:00"


def test_resent_event_is_a_duplicate_and_polls_the_first_job(tenant_a, client_a):
    first = post(client_a, "subjects/alice/events", event("e1")).json()
    again = post(client_a, "subjects/alice/events", event("e1", content="changed"))
    assert again.status_code == 202
    assert again.json()["events"][0]["duplicate"] is True and again.json()["job"] == first["job"]
    with as_tenant(tenant_a):
        assert Event.objects.get(tenant=tenant_a, event_id="e1").content == "I just adopted a cat called Miso."


def test_batch_mixes_new_and_duplicate_events(client_a):
    post(client_a, "subjects/alice/events", event("e1"))
    body = post(client_a, "subjects/alice/events", {"events": [event("e1"), event("e2"), event("e2")]}).json()
    assert [(e["event_id"], e["duplicate"]) for e in body["events"]] == [("e1", True), ("e2", False), ("e2", True)]


def test_same_event_id_in_another_tenant_or_subject_is_a_different_event(client_a, client_b):
    post(client_a, "subjects/alice/events", event("e1"))
    assert post(client_b, "subjects/alice/events", event("e1")).json()["events"][0]["duplicate"] is False
    assert post(client_a, "subjects/bob/events", event("e1")).json()["events"][0]["duplicate"] is False


def test_source_defaults_from_the_role_and_can_be_external(tenant_a, client_a):
    post(client_a, "subjects/alice/events", {"events": [
        {"event_id": "a", "role": "assistant", "content": "Noted."},
        {"event_id": "w", "role": "tool", "source": "external", "content": "web page text"},
    ]})
    with as_tenant(tenant_a):
        kinds = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "source_kind"))
    assert kinds == {"a": "assistant", "w": "external"}


@pytest.mark.parametrize("body,field", [
    ({"event_id": "e", "role": "user", "content": "x" * 32_001}, "content"),
    ({"role": "user", "content": "x"}, "event_id"),
    ({"event_id": "e" * 201, "role": "user", "content": "x"}, "event_id"),
    ({"event_id": "e", "role": "boss", "content": "x"}, "role"),
    ({"event_id": "e", "role": "user", "content": "x", "occurred_at": "yesterday"}, "occurred_at"),
    ({"event_id": "e", "role": "user", "content": "x", "metadata": [1]}, "metadata"),
    ({"event_id": "e", "role": "user", "content": "x", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},
     "metadata"),
    ({"events": []}, "events"),
])
def test_invalid_events_are_400_naming_the_field(client_a, body, field):
    details = assert_error(post(client_a, "subjects/alice/events", body), 400, "invalid_request")["error"]["details"]
    assert field in str(details)


def test_batch_over_1000_events_is_400(client_a):
    batch = {"events": [event(f"e{i}", "x") for i in range(1001)]}
    assert_error(post(client_a, "subjects/alice/events", batch), 400, "invalid_request")


def test_unknown_fields_are_400_with_their_names(client_a):
    body = assert_error(post(client_a, "subjects/alice/events", event("e1", colour="red", size=3)), 400)
    assert body["error"]["details"]["unknown_fields"] == ["colour", "size"]
