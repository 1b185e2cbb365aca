"""MCP over streamable HTTP at /mcp/ on a live gunicorn, with the SDK's own client: the tools,
and the same isolation as the v1 API (tenant from the key, the key's subject binding)."""
import asyncio
import time

import httpx
import pytest
from mcp import MCPError

from tests.doors.mcp_clients import TOOLS, call, http_client, refusal, schemas

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

UNKNOWN_ID = "mem_" + "0" * 32


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_tools_carry_their_hints_and_a_bound_key_is_never_asked_for_a_subject(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a_alice"]) as client:
            bound = await schemas(client)
        async with http_client(live_service, keys["a"]) as client:
            unbound = await schemas(client)
        return bound, unbound

    bound, unbound = run(scenario())
    assert TOOLS <= set(bound) and TOOLS <= set(unbound)
    for name in ("recall", "get_context", "list_memories", "memory_history"):
        assert bound[name].annotations.read_only_hint is True, name
    assert bound["forget_memory"].annotations.destructive_hint is True
    assert bound["remember"].annotations.read_only_hint is False
    assert not any("subject" in tool.input_schema["properties"] for tool in bound.values())
    # An unbound key names the subject in every call.
    assert all("subject" in tool.input_schema["required"] for tool in unbound.values())


def test_remember_recall_correct_and_history_work_end_to_end(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a_alice"]) as client:
            written = (await call(client, "remember", statement="My favourite colour is teal."))["memory"]
            found = await call(client, "recall", query="What is my favourite colour?", k=3)
            context = await call(client, "get_context", query="favourite colour")
            listed = await call(client, "list_memories", text="teal")
            corrected = await call(client, "correct_memory", memory_id=written["id"],
                                   statement="My favourite colour is orange.")
            after = await call(client, "recall", query="What is my favourite colour?", k=3)
            history = await call(client, "memory_history", memory_id=corrected["memory"]["id"])
            return written, found, context, listed, corrected, after, history

    written, found, context, listed, corrected, after, history = run(scenario())
    assert written["id"].startswith("mem_") and written["statement"] == "My favourite colour is teal."
    assert found["results"][0]["id"] == written["id"] and 0 <= found["results"][0]["score"] <= 1
    assert "teal" in context["context"] and written["id"] in [m["id"] for m in context["memories"]]
    assert [m["id"] for m in listed["results"]] == [written["id"]]
    new = corrected["memory"]
    assert new["id"] != written["id"] and new["supersedes"] == [written["id"]] and "orange" in new["statement"]
    assert written["id"] not in [m["id"] for m in after["results"]]
    assert after["results"][0]["id"] == new["id"]
    assert [v["id"] for v in history["versions"]] == [written["id"], new["id"]]


def test_a_forgotten_memory_is_gone_at_once_and_the_worker_finishes_the_deletion(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a_alice"]) as client:
            kept = (await call(client, "remember", statement="I play the cello."))["memory"]
            gone = (await call(client, "remember", statement="My locker code hint is the blue door."))["memory"]
            answer = await call(client, "forget_memory", memory_id=gone["id"])
            found = await call(client, "recall", query="locker blue door", k=10)
            listed = await call(client, "list_memories")
            again = await refusal(client, "memory_history", memory_id=gone["id"])
            return kept, gone, answer, found, listed, again

    kept, gone, answer, found, listed, again = run(scenario())
    assert answer["forgotten"] == gone["id"] and answer["job"].startswith("job_")
    assert gone["id"] not in [m["id"] for m in found["results"]]
    assert [m["id"] for m in listed["results"]] == [kept["id"]]
    assert "memory_not_found" in again
    # The deletion job, run by the real worker, as the v1 API reports it.
    deadline = time.monotonic() + 90
    while True:
        job = httpx.get(f"{live_service}/api/v1/jobs/{answer['job']}",
                        headers={"Authorization": f"Bearer {keys['a_alice']}"}, timeout=60).json()
        if job["status"] in ("succeeded", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert job["status"] == "succeeded", job


def test_another_tenants_key_sees_nothing_and_foreign_ids_fail_like_unknown_ones(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a_alice"]) as client:
            theirs = (await call(client, "remember", statement="My sister lives in Porto."))["memory"]
        # Tenant B has its own "alice": a different person.
        async with http_client(live_service, keys["b"], **{"X-Memory-Subject": "alice"}) as client:
            found = await call(client, "recall", query="sister Porto")
            context = await call(client, "get_context", query="sister")
            listed = await call(client, "list_memories")
            answers = {tool: await refusal(client, tool, memory_id=theirs["id"], **extra)
                       for tool, extra in (("memory_history", {}), ("forget_memory", {}),
                                           ("correct_memory", {"statement": "My sister lives in Faro."}))}
            unknown = await refusal(client, "memory_history", memory_id=UNKNOWN_ID)
        async with http_client(live_service, keys["a_alice"]) as client:
            still = await call(client, "memory_history", memory_id=theirs["id"])
        return theirs, found, context, listed, answers, unknown, still

    theirs, found, context, listed, answers, unknown, still = run(scenario())
    assert found["results"] == [] and listed["results"] == [] and context["memories"] == []
    assert "Porto" not in context["context"]
    assert all(text.replace(tool, "X") == unknown.replace("memory_history", "X") for tool, text in answers.items())
    assert "memory_not_found" in unknown
    assert [v["statement"] for v in still["versions"]] == [theirs["statement"]]


def test_a_bound_key_reaches_only_its_subject(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a"]) as client:
            bobs = (await call(client, "remember", subject="bob", statement="Bob drives a red van."))["memory"]
        async with http_client(live_service, keys["a_alice"]) as client:
            found = await call(client, "recall", query="red van")
            listed = await call(client, "list_memories", text="van")
            foreign = await refusal(client, "memory_history", memory_id=bobs["id"])
            forget = await refusal(client, "forget_memory", memory_id=bobs["id"])
            unknown = await refusal(client, "memory_history", memory_id=UNKNOWN_ID)
        async with http_client(live_service, keys["a_bob"]) as client:
            still = await call(client, "recall", query="red van")
        return bobs, found, listed, foreign, forget, unknown, still

    bobs, found, listed, foreign, forget, unknown, still = run(scenario())
    assert found["results"] == [] and listed["results"] == []
    assert foreign == unknown and "memory_not_found" in foreign and "memory_not_found" in forget
    assert [m["id"] for m in still["results"]][:1] == [bobs["id"]]
    # Naming another subject in the header is refused like another subject in a v1 path.
    refused = httpx.post(f"{live_service}/mcp/", json=_list_tools_message(),
                         headers={**MCP_HEADERS, "Authorization": f"Bearer {keys['a_alice']}",
                                  "X-Memory-Subject": "bob"}, timeout=60)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "subject_forbidden"


def test_an_unbound_key_names_the_subject_in_each_call_or_once_in_a_header(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a"]) as client:
            missing = await refusal(client, "recall", query="anything")
            bad = await refusal(client, "recall", subject="../etc", query="anything")
            written = (await call(client, "remember", subject="carol", statement="Carol's cat is Miso."))["memory"]
        async with http_client(live_service, keys["a"], **{"X-Memory-Subject": "carol"}) as client:
            tools = await schemas(client)
            found = await call(client, "recall", query="cat's name")
        return missing, bad, written, tools, found

    missing, bad, written, tools, found = run(scenario())
    assert "subject" in missing and "required" in missing.lower()
    assert "invalid_subject" in bad
    assert not any("subject" in tool.input_schema["properties"] for tool in tools.values())
    assert found["results"][0]["id"] == written["id"]


def test_bad_input_and_policy_refusals_are_clear_tool_errors(live_service, keys):
    async def scenario():
        async with http_client(live_service, keys["a_alice"]) as client:
            empty = await refusal(client, "remember", statement="...")
            secret = await refusal(client, "remember", statement="My AWS key is AKIAIOSFODNN7EXAMPLE")
            namespace = await refusal(client, "remember", statement="I like tea.", namespace="bad namespace!")
            cursor = await refusal(client, "list_memories", cursor="not-a-cursor")
            listed = await call(client, "list_memories")
        return empty, secret, namespace, cursor, listed

    empty, secret, namespace, cursor, listed = run(scenario())
    assert "invalid_request" in empty and "statement" in empty
    assert "policy_rejected" in secret and "AKIAIOSFODNN7EXAMPLE" not in secret
    assert "invalid_request" in namespace and "namespace" in namespace
    assert "invalid_cursor" in cursor
    assert listed["results"] == []  # nothing of the refused writes was kept


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def _list_tools_message() -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_a_missing_or_unknown_key_is_refused_before_any_tool_runs(live_service, keys):
    for headers in ({}, {"Authorization": "Bearer mk_000000000000_" + "x" * 43},
                    {"Authorization": f"Token {keys['a']}"}):
        response = httpx.post(f"{live_service}/mcp/", json=_list_tools_message(), headers={**MCP_HEADERS, **headers},
                              timeout=60)
        assert response.status_code == 401, (headers, response.text)
        assert response.json()["error"]["code"] == "unauthenticated"

    async def scenario(key):
        async with http_client(live_service, key) as client:
            await client.list_tools()

    # The SDK's client reports the 401 as an MCP error (code -32603), from inside its task groups.
    for key in (None, "mk_000000000000_" + "x" * 43):
        with pytest.raises(BaseException) as raised:
            run(scenario(key))
        assert _flatten(raised.value) and all(isinstance(e, MCPError) for e in _flatten(raised.value)), raised.value


def _flatten(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _flatten(inner)]
    return [error]


def test_the_stateless_server_offers_no_stream_and_no_session(live_service, keys):
    authorization = {"Authorization": f"Bearer {keys['a']}"}
    listed = httpx.post(f"{live_service}/mcp", json=_list_tools_message(), headers={**MCP_HEADERS, **authorization},
                        timeout=60)
    assert listed.status_code == 200 and "mcp-session-id" not in listed.headers
    assert {t["name"] for t in listed.json()["result"]["tools"]} >= TOOLS
    for method in ("GET", "DELETE"):
        response = httpx.request(method, f"{live_service}/mcp/", headers={**MCP_HEADERS, **authorization}, timeout=60)
        assert response.status_code == 405, (method, response.text)
