"""The v1 API's isolation, through the mem0 door: another tenant's key sees and touches nothing;
a subject-bound key reaches only its subject, whatever it names (filters, ids, delete_all,
delete_users, entities, job ids)."""
import httpx
import pytest
from mem0 import MemoryClient
from mem0.exceptions import MemoryError as Mem0Error
from mem0.exceptions import MemoryNotFoundError

from tests.doors.conftest import new_key
from tests.doors.test_mem0_client import wait_job

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_settle")]


@pytest.fixture
def seeded(server, tenant_a):
    """Tenant A: alice and bob, each with a memory (bob's corrected once), an agent, and a job."""
    key = new_key(tenant_a)
    client = MemoryClient(api_key=key, host=server)
    alice = client.add("I am vegetarian.", user_id="alice", infer=False)["results"][0]["id"]
    bob_old = client.add("I live in Oslo.", user_id="bob", infer=False)["results"][0]["id"]
    bob = client.update(bob_old, text="I live in Bergen.")["id"]
    client.add("I am a scheduling bot.", agent_id="planner", infer=False)
    bob_job = client.add("I like skiing.", user_id="bob")["event_id"]  # infer=true: a job of bob's
    wait_job(server, key, bob_job)
    return {"client": client, "key": key, "alice": alice, "bob": bob, "bob_old": bob_old, "bob_job": bob_job}


def counts(client, **filters) -> int:
    return client.get_all(filters=filters)["count"]


def assert_status(call, status: int):
    with pytest.raises(Mem0Error) as caught:
        call()
    assert caught.value.error_code == f"HTTP_{status}", caught.value
    assert caught.value.message  # mem0's `detail`
    return caught.value


def test_another_tenants_key_sees_nothing_and_touches_nothing(server, seeded, tenant_b):
    other_key = new_key(tenant_b)
    other = MemoryClient(api_key=other_key, host=server)
    for memory_id in (seeded["alice"], seeded["bob"], seeded["bob_old"]):
        with pytest.raises(MemoryNotFoundError):
            other.get(memory_id)
        with pytest.raises(MemoryNotFoundError):
            other.history(memory_id)
        with pytest.raises(MemoryNotFoundError):
            other.update(memory_id, text="I eat meat.")
        with pytest.raises(MemoryNotFoundError):
            other.delete(memory_id)
    assert counts(other, user_id="alice") == 0 and counts(other, agent_id="planner") == 0
    assert other.search("food", filters={"user_id": "alice"})["results"] == []
    assert other.users()["results"] == []
    response = httpx.get(f"{server}/v1/event/{seeded['bob_job']}/", headers={"Authorization": f"Token {other_key}"})
    assert response.status_code == 404 and response.json()["detail"]

    # Its own alice is another person: erasing her leaves tenant A's alone.
    other.add("I eat fish.", user_id="alice", infer=False)
    wait_job(server, other_key, other.delete_all(user_id="alice")["job"])
    other.delete_users(user_id="alice")
    client = seeded["client"]
    assert [m["memory"] for m in client.get_all(filters={"user_id": "alice"})["results"]] == ["I am vegetarian."]
    assert client.get(seeded["bob_old"])["memory"] == "I live in Bergen."
    assert {e["name"] for e in client.users()["results"]} == {"alice", "bob", "planner"}


def test_a_subject_bound_key_reaches_only_its_subject(server, seeded, tenant_a):
    bound_key = new_key(tenant_a, "alice")
    bound = MemoryClient(api_key=bound_key, host=server)
    assert bound.get(seeded["alice"])["memory"] == "I am vegetarian."
    # No filters: the key's own subject.
    assert [m["memory"] for m in bound.get_all()["results"]] == ["I am vegetarian."]
    assert bound.search("food")["results"][0]["id"] == seeded["alice"]
    added = bound.add("I like tennis.", infer=False)["results"][0]
    assert bound.get(added["id"])["user_id"] == "alice"
    assert [(e["type"], e["name"]) for e in bound.users()["results"]] == [("user", "alice")]

    # Another subject named outright: 403, as on the v1 API.
    for call in (
        lambda: bound.get_all(filters={"user_id": "bob"}),
        lambda: bound.get_all(filters={"agent_id": "planner"}),
        lambda: bound.search("city", filters={"user_id": "bob"}),
        lambda: bound.add("I live in Rome.", user_id="bob", infer=False),
        lambda: bound.delete_all(user_id="bob"),
        lambda: bound.delete_users(user_id="bob"),
        lambda: bound.delete_users(agent_id="planner"),
    ):
        assert "another subject" in assert_status(call, 403).message
    # Another subject's ids, old or current: the same 404 as an unknown id.
    for memory_id in (seeded["bob"], seeded["bob_old"]):
        for call in (lambda m=memory_id: bound.get(m), lambda m=memory_id: bound.history(m),
                     lambda m=memory_id: bound.update(m, text="I live in Rome."),
                     lambda m=memory_id: bound.delete(m)):
            with pytest.raises(MemoryNotFoundError):
                call()
    response = httpx.get(f"{server}/v1/event/{seeded['bob_job']}/", headers={"Authorization": f"Token {bound_key}"})
    assert response.status_code == 404
    # A filter reaching for two subjects is refused, never answered as an empty page.
    assert_status(lambda: bound.get_all(filters={"OR": [{"user_id": "alice"}, {"user_id": "bob"}]}), 400)

    # delete_all() naming nobody is refused even with a bound key (the client drops None ids, so
    # delete_all(user_id=None) arrives bare), as mem0's own delete_all asks for a filter.
    assert_status(lambda: bound.delete_all(), 400)
    assert bound.get_all()["count"] == 2
    # delete_all() and delete_users() with this key: its own subject, nothing of bob's or the agent's.
    wait_job(server, bound_key, bound.delete_all(user_id="alice")["job"])
    assert bound.get_all()["count"] == 0
    client = seeded["client"]
    assert client.get(seeded["bob"])["memory"] == "I live in Bergen." and counts(client, agent_id="planner") == 1
    bound.delete_users(user_id="alice")
    assert {e["name"] for e in client.users()["results"]} == {"bob", "planner"}
