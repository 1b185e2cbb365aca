"""The MCP SDK's own client, over streamable HTTP and over stdio, for the door tests."""
import contextlib
import json
import os
import sys
from pathlib import Path

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"remember", "recall", "get_context", "list_memories", "correct_memory", "forget_memory", "memory_history"}


@contextlib.asynccontextmanager
async def http_client(base_url: str, key: str | None, **headers):
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    async with (httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(f"{base_url}/mcp/", http_client=http)) as client):
        yield client


def stdio_parameters(base_url: str, key: str, subject: str | None = None) -> StdioServerParameters:
    """`python -m memory_mcp`: what the `memory-mcp` console script runs (the shared test venv is
    not pointed at this checkout by `pip install -e .`, so the module is launched directly)."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT_ROOT),
           "MEMORY_API_URL": base_url, "MEMORY_API_KEY": key}
    if subject:
        env["MEMORY_SUBJECT"] = subject
    return StdioServerParameters(command=sys.executable, args=["-m", "memory_mcp"], env=env, cwd=str(PROJECT_ROOT))


@contextlib.asynccontextmanager
async def stdio_client(base_url: str, key: str, subject: str | None = None):
    async with Client(stdio_parameters(base_url, key, subject)) as client:
        yield client


async def call(client, tool: str, **arguments) -> dict:
    """A tool's structured answer; fails the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def refusal(client, tool: str, **arguments) -> str:
    """A tool error's text; fails the test when the tool succeeded."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = " ".join(block.text for block in result.content)
    assert "Traceback" not in text and 'File "' not in text
    return text


async def schemas(client) -> dict:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)
