"""The unchanged mem0ai client (MemoryClient and AsyncMemoryClient, host= our service) against a
live gunicorn and a real worker: every call the issue lists, the mapping of its ids, and the
answers it gets for what we do not support."""
import asyncio

import httpx
import pytest
from mem0 import AsyncMemoryClient, MemoryClient
from mem0.exceptions import MemoryError as Mem0Error
from mem0.exceptions import MemoryNotFoundError, ValidationError

from memoryapp.models import Memory
from tests.conftest import as_tenant
from tests.doors.conftest import new_key
from tests.workers.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_settle")]


def job_status(base, key, job_id) -> dict:
    response = httpx.get(f"{base}/v1/event/{job_id}/", headers={"Authorization": f"Token {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def wait_job(base, key, job_id) -> dict:
    return wait_for(lambda: (body := job_status(base, key, job_id))["status"] in ("SUCCEEDED", "FAILED") and body,
                    message=f"job {job_id}")


@pytest.fixture
def key(tenant_a):
    return new_key(tenant_a)


@pytest.fixture
def client(server, key):
    return MemoryClient(api_key=key, host=server)


def test_ping_answers_an_organisation_and_a_project_and_a_bad_key_is_refused_with_detail(server, client, tenant_a):
    assert client.org_id == tenant_a.slug and client.project_id
    with pytest.raises(ValueError, match="Unknown or revoked API key"):
        MemoryClient(api_key="mk_nope_nope", host=server)


def test_explicit_add_get_update_history_delete_through_the_client(server, client, key):
    added = client.add("I live in Lisbon.", user_id="alice", infer=False, metadata={"topic": "home"})
    [first] = added["results"]
    assert first["event"] == "ADD" and first["memory"] == "I live in Lisbon." and first["id"].startswith("mem_")
    got = client.get(first["id"])
    assert got["memory"] == "I live in Lisbon." and got["user_id"] == "alice" and got["metadata"] == {"topic": "home"}
    assert got["agent_id"] is None and got["source"] == "user"

    updated = client.update(first["id"], text="I live in Porto.")
    assert updated["memory"] == "I live in Porto." and updated["id"] != first["id"]
    assert updated["metadata"] == {"topic": "home"}  # kept through the new version
    # The old id names the chain: it reads, and acts on, the current version.
    assert client.get(first["id"])["id"] == updated["id"]
    again = client.update(first["id"], text="I live in Braga.")
    assert again["memory"] == "I live in Braga." and client.get(updated["id"])["memory"] == "I live in Braga."
    history = client.history(first["id"])
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "UPDATE"]
    assert [h["new_memory"] for h in history] == ["I live in Lisbon.", "I live in Porto.", "I live in Braga."]
    assert history[1]["old_memory"] == "I live in Lisbon." and {h["memory_id"] for h in history} == {again["id"]}

    deleted = client.delete(first["id"])
    assert deleted["job"].startswith("job_") and wait_job(server, key, deleted["job"])["status"] == "SUCCEEDED"
    for memory_id in (first["id"], updated["id"], again["id"]):
        with pytest.raises(MemoryNotFoundError):
            client.get(memory_id)


def test_get_all_pages_with_count_next_previous_and_search_scores_in_0_1(client):
    client.add([{"role": "user", "content": f"My note number {i} is about gardening."} for i in range(5)],
               user_id="alice", infer=False)
    client.add("I am allergic to penicillin.", user_id="alice", infer=False)
    page1 = client.get_all(filters={"user_id": "alice"}, page=1, page_size=4)
    assert page1["count"] == 6 and len(page1["results"]) == 4 and page1["previous"] is None
    assert "page=2" in page1["next"]
    page2 = client.get_all(filters={"user_id": "alice"}, page=2, page_size=4)
    assert len(page2["results"]) == 2 and page2["next"] is None and "page=1" in page2["previous"]
    assert {m["id"] for m in page1["results"]}.isdisjoint({m["id"] for m in page2["results"]})

    found = client.search("what is the user allergic to?", filters={"user_id": "alice"}, top_k=3)
    results = found["results"]
    assert results and results[0]["memory"] == "I am allergic to penicillin." and len(results) <= 3
    assert all(0.0 <= r["score"] <= 1.0 for r in results)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    high = client.search("what is the user allergic to?", filters={"user_id": "alice"}, threshold=0.99)
    assert all(r["score"] >= 0.99 for r in high["results"])


def test_agent_run_and_app_ids_are_kept_beside_the_user_and_filter_with_and(client):
    client.add("I prefer window seats.", user_id="alice", agent_id="travel", run_id="trip-1", app_id="web",
               infer=False, metadata={"channel": "chat"})
    client.add("I prefer tea to coffee.", user_id="alice", agent_id="food", run_id="trip-2", infer=False)
    client.add("I drive a blue van.", agent_id="travel", infer=False)  # agent alone: its own subject

    both = client.get_all(filters={"user_id": "alice"})
    assert both["count"] == 2
    travel = client.get_all(filters={"AND": [{"user_id": "alice"}, {"agent_id": "travel"}]})
    assert [m["memory"] for m in travel["results"]] == ["I prefer window seats."]
    [seat] = travel["results"]
    assert (seat["user_id"], seat["agent_id"], seat["run_id"], seat["app_id"]) == ("alice", "travel", "trip-1", "web")
    assert seat["metadata"] == {"channel": "chat"}
    by_run = client.search("drinks", filters={"user_id": "alice", "run_id": "trip-2"})
    assert [m["memory"] for m in by_run["results"]] == ["I prefer tea to coffee."]
    by_meta = client.get_all(filters={"AND": [{"user_id": "alice"}, {"metadata": {"channel": "chat"}}]})
    assert [m["memory"] for m in by_meta["results"]] == ["I prefer window seats."]
    nothing = client.get_all(filters={"user_id": "alice", "run_id": "trip-9"})
    assert nothing["count"] == 0

    agent = client.get_all(filters={"agent_id": "travel"})
    assert [(m["memory"], m["user_id"], m["agent_id"]) for m in agent["results"]] == [
        ("I drive a blue van.", None, "travel")]
    entities = {(e["type"], e["name"]): e["total_memories"] for e in client.users()["results"]}
    assert entities == {("user", "alice"): 2, ("agent", "travel"): 1}


@pytest.mark.parametrize("filters, words", [
    ({"OR": [{"user_id": "alice"}, {"user_id": "bob"}]}, "OR filters are not supported"),
    ({"user_id": "*"}, "wildcard"),
    ({"user_id": {"in": ["alice", "bob"]}}, "Operators on user_id"),
    ({"AND": [{"user_id": "alice"}, {"user_id": "bob"}]}, "Two different values"),
    ({"run_id": "r1"}, "user_id (or an agent_id) is required"),
    ({"user_id": "alice", "categories": {"contains": "x"}}, "'categories' is not supported"),
])
def test_filters_we_cannot_answer_get_a_400_saying_what_is_supported(client, filters, words):
    client.add("I like jazz.", user_id="alice", infer=False)
    for call in (lambda: client.get_all(filters=filters), lambda: client.search("music", filters=filters)):
        with pytest.raises(ValidationError) as caught:
            call()
        assert words in caught.value.message and "Supported filters" in caught.value.message


def test_platform_extras_are_accepted_ignored_and_noted(client):
    added = client.add("I collect stamps.", user_id="alice", infer=False, custom_categories=[{"hobby": "x"}],
                       custom_instructions="only hobbies", enable_graph=True)
    assert added["results"][0]["event"] == "ADD"
    assert any("custom_categories" in n for n in added["notes"]) and any("enable_graph" in n for n in added["notes"])
    found = client.search("stamps", filters={"user_id": "alice"}, rerank=True, keyword_search=True, categories=["x"])
    assert found["results"] and any("rerank" in n for n in found["notes"])


def test_a_write_the_policy_refuses_is_reported_and_writes_nothing_of_the_request(client, tenant_a):
    secret = "my token is hf_" + "a1B2c3D4e5" * 4
    with pytest.raises(Mem0Error) as caught:
        client.add([{"role": "user", "content": "I like cycling."}, {"role": "user", "content": secret}],
                   user_id="alice", infer=False)
    assert caught.value.error_code == "HTTP_422" and "secret" in caught.value.message
    with as_tenant(tenant_a):
        assert not Memory.objects.filter(tenant=tenant_a).exists()


def test_bad_input_gets_a_clear_400_with_detail_and_nothing_is_written(server, key, client, tenant_a):
    headers = {"Authorization": f"Token {key}"}
    cases = [
        {"messages": [], "user_id": "alice", "infer": False},
        {"messages": [{"role": "robot", "content": "hi"}], "user_id": "alice", "infer": False},
        {"messages": [{"role": "user", "content": "..."}], "user_id": "alice", "infer": False},
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "alice", "surprise": 1},
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "a/b"},
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "alice", "timestamp": "yesterday"},
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "alice", "metadata": {"mem0": "mine"}},
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "alice", "metadata": "not an object"},
    ]
    for body in cases:
        response = httpx.post(f"{server}/v3/memories/add/", json=body, headers=headers, timeout=30)
        assert response.status_code == 400, (body, response.text)
        assert isinstance(response.json()["detail"], str) and response.json()["detail"]
    response = httpx.post(f"{server}/v3/memories/add/", content=b"{not json", timeout=30,
                          headers={**headers, "Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["detail"]
    assert httpx.get(f"{server}/v1/nothing-here/", headers=headers).json()["detail"]
    with pytest.raises(ValueError):
        client.update("mem_0123")  # the client's own check: nothing to change
    with pytest.raises(MemoryNotFoundError):
        client.update("not-an-id", text="x")
    with as_tenant(tenant_a):
        assert not Memory.objects.filter(tenant=tenant_a).exists()


def test_infer_true_queues_extraction_and_the_worker_writes_labelled_memories(server, client, key, celery_worker):
    added = client.add([{"role": "user", "content": "I live in Oslo and I work as a nurse."},
                        {"role": "assistant", "content": "Noted!"}],
                       user_id="alice", run_id="session-7", metadata={"channel": "voice"})
    assert added["status"] == "PENDING" and added["event_id"].startswith("job_")
    done = wait_job(server, key, added["event_id"])
    assert done["status"] == "SUCCEEDED" and done["event_type"] == "ADD"
    memories = client.get_all(filters={"user_id": "alice", "run_id": "session-7"})["results"]
    assert any("Oslo" in m["memory"] for m in memories)
    assert all(m["run_id"] == "session-7" and m["metadata"] == {"channel": "voice"} for m in memories)
    found = client.search("where does the user live?", filters={"user_id": "alice", "run_id": "session-7"})
    assert found["results"] and "Oslo" in found["results"][0]["memory"]
    assert client.get_all(filters={"user_id": "alice", "run_id": "session-8"})["count"] == 0


def test_delete_all_forgets_that_subject_only_with_a_receipt(server, client, key, celery_worker):
    client.add(["I play the cello.", "I like hiking."][0], user_id="alice", infer=False)
    client.add("I like hiking.", user_id="alice", agent_id="coach", infer=False)
    client.add("I play the cello too.", user_id="bob", infer=False)
    client.add("I am the coach.", agent_id="coach", infer=False)

    only_coach = client.delete_all(user_id="alice", agent_id="coach")
    assert wait_job(server, key, only_coach["job"])["results"]["removed"]["memories"] == 1
    assert [m["memory"] for m in client.get_all(filters={"user_id": "alice"})["results"]] == ["I play the cello."]

    everything = client.delete_all(filters={"user_id": "alice"})
    receipt = wait_job(server, key, everything["job"])["results"]
    assert receipt["removed"]["memories"] == 1 and receipt["verification"]["passed"] is True
    assert client.get_all(filters={"user_id": "alice"})["count"] == 0
    assert client.get_all(filters={"user_id": "bob"})["count"] == 1
    assert client.get_all(filters={"agent_id": "coach"})["count"] == 1


def test_delete_users_erases_the_subject(server, client, key, celery_worker):
    client.add("I like chess.", user_id="alice", infer=False)
    client.add("I like go.", user_id="bob", infer=False)
    client.add("I am a bot.", agent_id="helper", infer=False)
    assert client.delete_users(user_id="alice") == {"message": "Entity deleted successfully."}
    assert client.get_all(filters={"user_id": "alice"})["count"] == 0
    assert {e["name"] for e in client.users()["results"]} == {"bob", "helper"}
    client.delete_users(agent_id="helper")
    assert {e["name"] for e in client.users()["results"]} == {"bob"}
    with pytest.raises(ValidationError, match="label here, not a subject"):
        client.delete_users(run_id="r1")


def test_the_async_client_does_the_same(server, key, celery_worker):
    async def scenario():
        client = AsyncMemoryClient(api_key=key, host=server)
        added = await client.add("I am learning Japanese.", user_id="alice", infer=False)
        memory_id = added["results"][0]["id"]
        assert (await client.get(memory_id))["memory"] == "I am learning Japanese."
        found = await client.search("languages", filters={"user_id": "alice"})
        assert found["results"][0]["id"] == memory_id and 0 <= found["results"][0]["score"] <= 1
        updated = await client.update(memory_id, text="I am learning Korean.")
        assert (await client.history(memory_id))[-1]["new_memory"] == "I am learning Korean."
        assert (await client.get_all(filters={"user_id": "alice"}))["results"][0]["id"] == updated["id"]
        assert (await client.users())["results"][0]["name"] == "alice"
        await client.delete(memory_id)
        with pytest.raises(MemoryNotFoundError):
            await client.get(updated["id"])
        await client.async_client.aclose()

    asyncio.run(scenario())
