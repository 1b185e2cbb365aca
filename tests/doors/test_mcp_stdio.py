"""The `memory-mcp` stdio server, launched as a process by the SDK's own client, talking to a live
gunicorn over the v1 REST API: the tools, the subject rules and the same isolation as v1."""
import asyncio
import subprocess
import sys
import tomllib

import pytest
from mcp import MCPError

from tests.doors.mcp_clients import PROJECT_ROOT, TOOLS, call, refusal, schemas, stdio_client, stdio_parameters

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

UNKNOWN_ID = "mem_" + "0" * 32


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_console_script_is_declared_and_installed_by_the_set_up():
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["memory-mcp"] == "memory_mcp.stdio:main"
    assert "memory_mcp" in project["tool"]["setuptools"]["packages"]
    install_step = (PROJECT_ROOT / "Makefile").read_text().split("$(STAMP):", 1)[1].split("\ninstall:", 1)[0]
    assert "install --quiet --no-deps -e ." in install_step
    from memory_mcp.stdio import main

    assert callable(main)


def test_a_bound_key_needs_no_subject_and_every_tool_works(live_service, keys):
    async def scenario():
        async with stdio_client(live_service, keys["a_alice"]) as client:
            tools = await schemas(client)
            written = (await call(client, "remember", statement="I am allergic to peanuts."))["memory"]
            found = await call(client, "recall", query="allergies", k=3)
            context = await call(client, "get_context", query="what can I eat", token_budget=500)
            listed = await call(client, "list_memories", memory_type="semantic")
            corrected = (await call(client, "correct_memory", memory_id=written["id"],
                                    statement="I am allergic to hazelnuts."))["memory"]
            history = await call(client, "memory_history", memory_id=corrected["id"])
            forgotten = await call(client, "forget_memory", memory_id=corrected["id"])
            after = await call(client, "recall", query="allergies", k=3)
            return tools, written, found, context, listed, corrected, history, forgotten, after

    tools, written, found, context, listed, corrected, history, forgotten, after = run(scenario())
    assert set(tools) >= TOOLS
    assert not any("subject" in tool.input_schema["properties"] for tool in tools.values())
    assert tools["recall"].annotations.read_only_hint and tools["forget_memory"].annotations.destructive_hint
    assert written["id"].startswith("mem_")
    assert found["results"][0]["id"] == written["id"]
    assert "peanuts" in context["context"]
    assert written["id"] in [m["id"] for m in listed["results"]]
    assert corrected["supersedes"] == [written["id"]]
    assert [v["id"] for v in history["versions"]] == [written["id"], corrected["id"]]
    assert forgotten["job"].startswith("job_")
    assert not {written["id"], corrected["id"]} & {m["id"] for m in after["results"]}


def test_an_unbound_key_takes_the_subject_from_memory_subject_or_else_from_each_call(live_service, keys):
    async def scenario():
        async with stdio_client(live_service, keys["a"], subject="bob") as client:
            configured = await schemas(client)
            written = (await call(client, "remember", statement="Bob's team is called Falcons."))["memory"]
        async with stdio_client(live_service, keys["a"]) as client:
            asking = await schemas(client)
            as_bob = await call(client, "recall", subject="bob", query="team name")
            as_carol = await call(client, "recall", subject="carol", query="team name")
        return configured, written, asking, as_bob, as_carol

    configured, written, asking, as_bob, as_carol = run(scenario())
    assert not any("subject" in tool.input_schema["properties"] for tool in configured.values())
    assert all("subject" in tool.input_schema["required"] for tool in asking.values())
    assert [m["id"] for m in as_bob["results"]][:1] == [written["id"]]
    assert as_carol["results"] == []


def test_another_tenants_key_sees_nothing_and_foreign_ids_fail_like_unknown_ones(live_service, keys):
    async def scenario():
        async with stdio_client(live_service, keys["a_alice"]) as client:
            theirs = (await call(client, "remember", statement="My sister lives in Porto."))["memory"]
        # Tenant B has its own "alice": a different person.
        async with stdio_client(live_service, keys["b"], subject="alice") as client:
            found = await call(client, "recall", query="sister Porto")
            listed = await call(client, "list_memories")
            answers = {tool: await refusal(client, tool, memory_id=theirs["id"], **extra)
                       for tool, extra in (("memory_history", {}), ("forget_memory", {}),
                                           ("correct_memory", {"statement": "My sister lives in Faro."}))}
            unknown = await refusal(client, "memory_history", memory_id=UNKNOWN_ID)
        async with stdio_client(live_service, keys["a_alice"]) as client:
            still = await call(client, "memory_history", memory_id=theirs["id"])
        return theirs, found, listed, answers, unknown, still

    theirs, found, listed, answers, unknown, still = run(scenario())
    assert found["results"] == [] and listed["results"] == []
    assert all(text.replace(tool, "X") == unknown.replace("memory_history", "X") for tool, text in answers.items())
    assert "memory_not_found" in unknown
    assert [v["statement"] for v in still["versions"]] == [theirs["statement"]]


def test_a_bound_key_reaches_only_its_subject(live_service, keys):
    async def scenario():
        async with stdio_client(live_service, keys["a"], subject="bob") as client:
            bobs = (await call(client, "remember", statement="Bob drives a red van."))["memory"]
        async with stdio_client(live_service, keys["a_alice"]) as client:
            found = await call(client, "recall", query="red van")
            foreign = await refusal(client, "memory_history", memory_id=bobs["id"])
            unknown = await refusal(client, "memory_history", memory_id=UNKNOWN_ID)
        return found, foreign, unknown

    found, foreign, unknown = run(scenario())
    assert found["results"] == []
    assert foreign == unknown and "memory_not_found" in foreign


def test_a_key_bound_to_another_subject_than_memory_subject_is_refused_at_start(live_service, keys):
    async def scenario():
        async with stdio_client(live_service, keys["a_alice"], subject="bob") as client:
            await client.list_tools()

    with pytest.raises((MCPError, OSError, ExceptionGroup, RuntimeError)):
        run(scenario())
    done = _run_server(live_service, keys["a_alice"], subject="bob")
    assert done.returncode == 2 and "bound to another subject" in done.stderr


def test_a_missing_or_unknown_key_is_refused(live_service, keys):
    unknown = _run_server(live_service, "mk_000000000000_" + "x" * 43)
    assert unknown.returncode == 2 and "refused MEMORY_API_KEY" in unknown.stderr
    missing = _run_server(live_service, "")
    assert missing.returncode == 2 and "MEMORY_API_KEY" in missing.stderr

    async def scenario():
        async with stdio_client(live_service, "mk_000000000000_" + "x" * 43) as client:
            await client.list_tools()

    with pytest.raises((MCPError, OSError, ExceptionGroup, RuntimeError)):
        run(scenario())


def _run_server(base_url: str, key: str, subject: str | None = None) -> subprocess.CompletedProcess:
    parameters = stdio_parameters(base_url, key, subject)
    return subprocess.run([sys.executable, "-m", "memory_mcp"], env=parameters.env, cwd=parameters.cwd,
                          input="", capture_output=True, text=True, timeout=60, check=False)
