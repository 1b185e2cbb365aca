"""Both times: `known_at` answers what the store believed at a recorded time, even after a
correction edited the old version's valid_to; other subjects and tenants never show through."""
from datetime import timedelta

from django.utils import timezone

from tests.api.conftest import assert_error, post, write

LIVES = "Where do I live?"


def _correct(client, subject, memory_id, statement):
    response = client.patch(f"/api/v1/subjects/{subject}/memories/{memory_id}", {"statement": statement},
                            format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _search(client, subject, **body):
    response = post(client, f"subjects/{subject}/search", {"query": LIVES, "k": 10, **body})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def _statements(results):
    return [r["statement"] for r in results]


def test_search_known_at_sees_the_version_believed_then_not_its_correction(client_a, client_b):
    old = write(client_a, "alice", "I live in Lisbon.")
    write(client_a, "bob", "I live in Madrid.")
    write(client_b, "alice", "I live in Oslo.")
    believed = timezone.now()
    new = _correct(client_a, "alice", old["id"], "I live in Porto.")
    assert new["supersedes"] == [old["id"]]

    then = _search(client_a, "alice", known_at=believed.isoformat())
    assert _statements(then) == ["I live in Lisbon."]
    now = _search(client_a, "alice")
    assert _statements(now) == ["I live in Porto."]
    # Another subject of the tenant, and the other tenant's subject with the same id, at that time.
    assert _statements(_search(client_a, "bob", known_at=believed.isoformat())) == ["I live in Madrid."]
    assert _statements(_search(client_b, "alice", known_at=believed.isoformat())) == ["I live in Oslo."]


def test_known_at_before_anything_was_recorded_finds_nothing_and_the_future_means_now(client_a):
    before = timezone.now()
    old = write(client_a, "alice", "I live in Lisbon.")
    _correct(client_a, "alice", old["id"], "I live in Porto.")
    assert _search(client_a, "alice", known_at=before.isoformat()) == []
    later = (timezone.now() + timedelta(days=30)).isoformat()
    assert _statements(_search(client_a, "alice", known_at=later)) == ["I live in Porto."]


def test_known_at_with_as_of_reads_valid_time_as_then_known(client_a):
    old = write(client_a, "alice", "I live in Lisbon.", valid_from="2026-01-01T00:00:00+00:00")
    believed = timezone.now()
    _correct(client_a, "alice", old["id"], "I live in Porto.")
    # Valid time far ahead, as known before the correction: Lisbon had no end then.
    far = (timezone.now() + timedelta(days=400)).isoformat()
    assert _statements(_search(client_a, "alice", as_of=far, known_at=believed.isoformat())) == ["I live in Lisbon."]
    # The same valid time as known now: Lisbon ended at the correction.
    assert "I live in Lisbon." not in _statements(_search(client_a, "alice", as_of=far))


def test_context_known_at_builds_from_what_was_believed_then(client_a):
    old = write(client_a, "alice", "I live in Lisbon.")
    believed = timezone.now()
    _correct(client_a, "alice", old["id"], "I live in Porto.")
    response = post(client_a, "subjects/alice/context", {"query": LIVES, "known_at": believed.isoformat()})
    assert response.status_code == 200, response.content
    assert "Lisbon" in response.json()["context"] and "Porto" not in response.json()["context"]


def test_history_keeps_what_a_correction_changed_and_answers_known_at(client_a, client_b):
    old = write(client_a, "alice", "I live in Lisbon.")
    believed = timezone.now()
    new = _correct(client_a, "alice", old["id"], "I live in Porto.")

    versions = client_a.get(f"/api/v1/subjects/alice/memories/{new['id']}/history").json()["versions"]
    first = next(v for v in versions if v["id"] == old["id"])
    assert first["status"] == "superseded" and first["valid_to"] is not None
    assert [(c["status_before"], c["valid_to_before"]) for c in first["changes"]] == [("active", None)]

    response = client_a.get(f"/api/v1/subjects/alice/memories/{new['id']}/history",
                            {"known_at": believed.isoformat()})
    assert response.status_code == 200, response.content
    versions = response.json()["versions"]
    assert [(v["id"], v["status"], v["valid_to"], v["superseded_by"], v["changes"]) for v in versions] == [
        (old["id"], "active", None, None, [])]
    # The other tenant's key cannot read it, whatever the time.
    assert_error(client_b.get(f"/api/v1/subjects/alice/memories/{new['id']}/history",
                              {"known_at": believed.isoformat()}), 404)


def test_a_bad_known_at_is_a_400_naming_the_field(client_a):
    write(client_a, "alice", "I live in Lisbon.")
    for body in ({"known_at": "yesterday"}, {"known_at": 12}):
        body = assert_error(post(client_a, "subjects/alice/search", {"query": LIVES, **body}), 400)
        assert "known_at" in body["error"]["details"]
    body = assert_error(client_a.get("/api/v1/subjects/alice/memories/mem_00/history", {"known_at": "x"}), 400)
    assert "known_at" in body["error"]["details"]


def test_a_context_known_at_an_earlier_time_states_nothing_learned_later(client_a):
    old = write(client_a, "alice", "I live in Lisbon.", key="user:home_city")
    believed = timezone.now()
    _correct(client_a, "alice", old["id"], "I live in Porto.")
    now = post(client_a, "subjects/alice/context", {"query": LIVES}).json()
    assert "Porto" in now["context"] and "Lisbon" not in now["context"]
    then = post(client_a, "subjects/alice/context", {"query": LIVES, "known_at": believed.isoformat()}).json()
    # The profile holds what is current now (Porto): an earlier view leaves it out.
    assert "Lisbon" in then["context"] and "Porto" not in then["context"]
    assert then["profile"]["facts"] == []


def test_the_narrowest_namespace_is_chosen_among_versions_recorded_by_known_at(client_a):
    write(client_a, "alice", "I live in Lisbon.", namespace="travel", key="user:home_city")
    believed = timezone.now()
    write(client_a, "alice", "For work trips I live in Porto.", namespace="travel/work", key="user:home_city")
    now = _search(client_a, "alice", working_namespace="travel/work")
    assert _statements(now) == ["For work trips I live in Porto."]
    then = _search(client_a, "alice", working_namespace="travel/work", known_at=believed.isoformat())
    assert _statements(then) == ["I live in Lisbon."]


def test_a_narrower_version_retired_since_still_wins_as_known_then(client_a):
    write(client_a, "alice", "I live in Lisbon.", namespace="travel", key="user:home_city")
    narrow = write(client_a, "alice", "For work trips I live in Porto.", namespace="travel/work", key="user:home_city")
    believed = timezone.now()
    _correct(client_a, "alice", narrow["id"], "For work trips I live in Braga.")
    then = _search(client_a, "alice", working_namespace="travel/work", known_at=believed.isoformat())
    # Then, the work rule held and hid the general one; its correction was not yet known.
    assert _statements(then) == ["For work trips I live in Porto."]
    assert _statements(_search(client_a, "alice", working_namespace="travel/work")) == [
        "For work trips I live in Braga."]
