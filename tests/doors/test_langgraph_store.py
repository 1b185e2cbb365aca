"""memory_client.langgraph.MemoryStore against a live gunicorn and a real worker: LangGraph's
store operations, supersession on re-put, deletes invisible at once, the namespace mapping,
isolation through the store, and LangMem's memory tools running on it."""
import asyncio
import json

import pytest

from tests.doors.python_client import wait_until_jobs_settle  # (and this checkout's memory_client first)
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from memory_client import MemoryClient, PermissionDeniedError
from memory_client.langgraph import MemoryStore

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def settled(live_service):
    yield
    wait_until_jobs_settle()


def store_for(base_url, key, **options):
    return MemoryStore(base_url=base_url, api_key=key, **options)


def test_put_get_search_and_list_namespaces_round_trip(live_service, keys):
    store = store_for(live_service, keys["a"])
    food = {"content": "Alice loves spicy ramen.", "kind": "food", "tags": ["noodles", "spicy"]}
    store.put(("alice", "prefs"), "food", food)
    store.put(("alice", "prefs"), "drink", {"kind": "drink", "name": "oolong"})  # no "content": JSON text
    store.put(("alice", "notes", "2026"), "trip", {"content": "Alice visits Kyoto in May."})

    item = store.get(("alice", "prefs"), "food")
    assert item.value == food and item.key == "food" and item.namespace == ("alice", "prefs")
    assert item.created_at.tzinfo is not None
    assert store.get(("alice", "prefs"), "missing") is None
    assert store.get(("alice", "elsewhere"), "food") is None  # the namespace is exact

    hits = store.search(("alice",), query="What noodles does Alice like?", limit=2)
    assert hits[0].key == "food" and hits[0].value == food and 0 <= hits[0].score <= 1
    assert [i.key for i in store.search(("alice", "prefs"), filter={"kind": "drink"})] == ["drink"]
    assert [i.key for i in store.search(("alice",), filter={"kind": {"$ne": "drink"}, "tags": ["noodles", "spicy"]})
            ] == ["food"]
    assert store.search(("alice",), filter={"tags": ["noodles"]}) == []  # values match exactly, not by containment
    assert {i.key for i in store.search(("alice", "notes"))} == {"trip"}  # a prefix reaches deeper namespaces
    assert len(store.search(("alice",), limit=2)) == 2 and len(store.search(("alice",), offset=2)) == 1

    assert store.list_namespaces(prefix=("alice",)) == [("alice", "notes", "2026"), ("alice", "prefs")]
    assert store.list_namespaces(prefix=("alice",), max_depth=2) == [("alice", "notes"), ("alice", "prefs")]
    assert store.list_namespaces(prefix=("alice",), suffix=("2026",)) == [("alice", "notes", "2026")]
    assert store.list_namespaces(prefix=("alice", "*", "2026")) == [("alice", "notes", "2026")]


def test_values_land_as_statements_and_metadata_the_rest_api_shows(live_service, keys):
    store = store_for(live_service, keys["a"])
    store.put(("alice", "prefs"), "drink", {"kind": "drink", "name": "oolong"})
    store.put(("alice", "prefs"), "book", {"title": "Dune", "note": "Alice is rereading Dune."}, index=["note"])
    with MemoryClient(live_service, keys["a"]) as rest:
        drink, = rest.list_memories("alice", key="drink")["results"]
        book, = rest.list_memories("alice", key="book")["results"]
    assert drink["namespace"] == "prefs" and drink["statement"] == json.dumps(
        {"kind": "drink", "name": "oolong"}, sort_keys=True)
    assert drink["metadata"] == {"value": {"kind": "drink", "name": "oolong"}} and drink["source"]["kind"] == (
        "user_explicit")
    assert book["statement"] == "Alice is rereading Dune."


def test_labels_that_are_not_namespace_segments_are_encoded_reversibly(live_service, keys):
    store = store_for(live_service, keys["a"])
    namespace = ("alice", "Zoë's notes", "a b/c")
    store.put(namespace, "k", {"content": "Alice's note with odd labels."})
    assert store.get(namespace, "k").value == {"content": "Alice's note with odd labels."}
    assert store.list_namespaces(prefix=("alice",)) == [namespace]
    assert store.search(("alice", "Zoë's notes"))[0].namespace == namespace
    with MemoryClient(live_service, keys["a"]) as rest:
        stored, = rest.list_memories("alice", key="k")["results"]
    assert all(segment.startswith("b64.") for segment in stored["namespace"].split("/"))


def test_re_put_supersedes_the_keys_value_and_only_the_current_one_is_read(live_service, keys):
    store = store_for(live_service, keys["a"])
    store.put(("alice", "home"), "city", {"content": "Alice lives in Paris."})
    store.put(("alice", "home"), "city", {"content": "Alice lives in Lisbon."})
    assert store.get(("alice", "home"), "city").value == {"content": "Alice lives in Lisbon."}
    hits = store.search(("alice",), query="Where does Alice live?", limit=5)
    assert [h.value["content"] for h in hits if h.key == "city"] == ["Alice lives in Lisbon."]
    with MemoryClient(live_service, keys["a"]) as rest:
        versions = rest.list_memories("alice", key="city")["results"]
    assert [(m["statement"], m["status"]) for m in versions] == [
        ("Alice lives in Lisbon.", "active"), ("Alice lives in Paris.", "superseded")]
    assert versions[0]["supersedes"] == [versions[1]["id"]]
    # The same value under two keys stays two items; re-putting an identical value changes nothing.
    store.put(("alice", "home"), "other", {"content": "Alice lives in Lisbon."})
    store.put(("alice", "home"), "city", {"content": "Alice lives in Lisbon."})
    assert {i.key for i in store.search(("alice", "home"))} == {"city", "other"}
    with MemoryClient(live_service, keys["a"]) as rest:
        assert len(rest.list_memories("alice", key="city")["results"]) == 2


def test_delete_is_a_forget_that_is_invisible_at_once(live_service, keys):
    store = store_for(live_service, keys["a"])
    store.put(("alice", "secrets"), "locker", {"content": "Alice's locker is number 42."})
    store.put(("alice", "secrets"), "locker", {"content": "Alice's locker is number 43."})
    store.put(("alice", "keep"), "pet", {"content": "Alice has a cat."})
    with MemoryClient(live_service, keys["a"]) as rest:
        ids = [m["id"] for m in rest.list_memories("alice", key="locker")["results"]]
        store.delete(("alice", "secrets"), "locker")
        assert store.get(("alice", "secrets"), "locker") is None
        assert [i.key for i in store.search(("alice",), query="locker number")] == ["pet"]
        assert store.list_namespaces(prefix=("alice",)) == [("alice", "keep")]
        assert rest.list_memories("alice", key="locker")["results"] == []  # every version, at once
        assert len(ids) == 2 and not {h["id"] for h in rest.search("alice", "locker number 42", k=10,
                                                                   include_superseded=True)} & set(ids)
    store.delete(("alice", "secrets"), "locker")  # deleting what is not there is no error
    store.put(("alice", "secrets"), "locker", {"content": "Alice's new locker is number 7."})
    assert store.get(("alice", "secrets"), "locker").value["content"] == "Alice's new locker is number 7."


def test_batch_runs_every_op_kind_in_order(live_service, keys):
    store = store_for(live_service, keys["a"])
    results = store.batch([
        PutOp(("alice", "b"), "one", {"content": "Batch fact one about owls."}),
        GetOp(("alice", "b"), "one"),
        SearchOp(("alice",), query="owls", limit=1),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("alice",)),), max_depth=None, limit=10, offset=0),
        PutOp(("alice", "b"), "one", None),
        GetOp(("alice", "b"), "one"),
    ])
    assert results[0] is None and results[1].value == {"content": "Batch fact one about owls."}
    assert results[2][0].key == "one" and results[3] == [("alice", "b")]
    assert results[4] is None and results[5] is None


def test_the_subject_position_is_configurable(live_service, keys):
    store = store_for(live_service, keys["a"], subject_index=1)
    store.put(("memories", "bob", "work"), "role", {"content": "Bob is a nurse."})
    assert store.get(("memories", "bob", "work"), "role").value == {"content": "Bob is a nurse."}
    assert store.list_namespaces(prefix=("memories", "bob")) == [("memories", "bob", "work")]
    with MemoryClient(live_service, keys["a"]) as rest:
        stored, = rest.list_memories("bob", key="role")["results"]
    assert stored["namespace"] == "memories/work"
    fixed = store_for(live_service, keys["a"], subject="bob")
    assert fixed.get(("memories", "work"), "role").value == {"content": "Bob is a nurse."}
    assert ("memories", "work") in fixed.list_namespaces()
    with pytest.raises(ValueError):
        store.search(("memories",))  # an unbound key must name the subject


def test_the_async_operations(live_service, keys):
    store = store_for(live_service, keys["a"])

    async def scenario():
        await store.aput(("alice", "async"), "plant", {"content": "Alice waters the fern on Sundays."})
        await store.aput(("alice", "async"), "plant", {"content": "Alice waters the fern on Mondays."})
        got = await store.aget(("alice", "async"), "plant")
        found = await store.asearch(("alice",), query="When is the fern watered?")
        spaces = await store.alist_namespaces(prefix=("alice",))
        await store.adelete(("alice", "async"), "plant")
        gone = await store.aget(("alice", "async"), "plant")
        await store.aclose()
        return got, found, spaces, gone

    got, found, spaces, gone = asyncio.run(scenario())
    assert got.value == {"content": "Alice waters the fern on Mondays."}
    assert found[0].key == "plant" and "Mondays" in found[0].value["content"]
    assert spaces == [("alice", "async")] and gone is None


def test_isolation_through_the_store(live_service, keys):
    store_for(live_service, keys["a"]).put(("alice", "health"), "allergy", {"content": "Alice is allergic to nuts."})
    store_for(live_service, keys["a"]).put(("bob", "health"), "allergy", {"content": "Bob is allergic to cats."})

    other_tenant = store_for(live_service, keys["b"])
    assert other_tenant.get(("alice", "health"), "allergy") is None
    assert other_tenant.search(("alice",), query="allergic") == [] and other_tenant.search(("alice",)) == []
    assert other_tenant.list_namespaces(prefix=("alice",)) == []
    other_tenant.delete(("alice", "health"), "allergy")  # finds nothing to forget
    assert store_for(live_service, keys["a"]).get(("alice", "health"), "allergy") is not None

    bob = store_for(live_service, keys["a_bob"])
    assert bob.get(("bob", "health"), "allergy").value == {"content": "Bob is allergic to cats."}
    assert [i.namespace for i in bob.search(())] == [("bob", "health")]  # the key's own subject
    assert bob.list_namespaces() == [("bob", "health")]
    for attempt in (lambda: bob.get(("alice", "health"), "allergy"), lambda: bob.search(("alice",)),
                    lambda: bob.put(("alice", "health"), "allergy", {"content": "Overwritten."}),
                    lambda: bob.delete(("alice", "health"), "allergy"),
                    lambda: bob.list_namespaces(prefix=("alice",))):
        with pytest.raises(PermissionDeniedError):
            attempt()
    assert store_for(live_service, keys["a"]).get(("alice", "health"), "allergy").value == {
        "content": "Alice is allergic to nuts."}


def test_langmem_memory_tools_run_on_the_store(live_service, keys):
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = store_for(live_service, keys["a"])
    manage = create_manage_memory_tool(namespace=("alice", "langmem"), store=store)
    search = create_search_memory_tool(namespace=("alice", "langmem"), store=store)

    created = manage.invoke({"content": "Alice prefers window seats on trains.", "action": "create"})
    memory_id = created.rsplit(" ", 1)[-1]
    assert created.startswith("created memory ")
    found = json.loads(search.invoke({"query": "Which seat does Alice like?"}))
    assert found[0]["key"] == memory_id and found[0]["value"] == {"content": "Alice prefers window seats on trains."}
    assert found[0]["namespace"] == ["alice", "langmem"]

    manage.invoke({"content": "Alice prefers aisle seats on trains.", "action": "update", "id": memory_id})
    assert store.get(("alice", "langmem"), memory_id).value == {"content": "Alice prefers aisle seats on trains."}
    found = json.loads(search.invoke({"query": "Which seat does Alice like?"}))
    assert [m["value"]["content"] for m in found] == ["Alice prefers aisle seats on trains."]

    assert manage.invoke({"action": "delete", "id": memory_id}) == f"Deleted memory {memory_id}"
    assert json.loads(search.invoke({"query": "Which seat does Alice like?"})) == []
    assert store.get(("alice", "langmem"), memory_id) is None

    # A namespace template: the subject comes from the run's config.
    templated = create_manage_memory_tool(namespace=("{langgraph_user_id}", "langmem"), store=store)
    created = templated.invoke({"content": "Bob takes his coffee black.", "action": "create"},
                               config={"configurable": {"langgraph_user_id": "bob"}})
    assert store.get(("bob", "langmem"), created.rsplit(" ", 1)[-1]).value == {"content": "Bob takes his coffee black."}
