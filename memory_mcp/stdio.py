"""`memory-mcp`: the MCP server over stdio, for desktop assistants and IDE agents.

It talks to the service's v1 REST API with httpx, so it runs wherever the agent does; the
service enforces the key's tenant and subject binding exactly as for any other v1 client.

Configuration (environment):
- MEMORY_API_URL: the service's base URL, e.g. http://127.0.0.1:8000 (required)
- MEMORY_API_KEY: an API key of the tenant (required)
- MEMORY_SUBJECT: whose memories, needed only when the key is not bound to a subject. With a
  bound key the tools take no subject; with an unbound key and no MEMORY_SUBJECT every tool takes
  a required `subject` argument.
"""
import os
import sys
from urllib.parse import quote

import anyio
import httpx

from memory_mcp.tools import ToolFailure, build_server

TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class ConfigurationError(Exception):
    pass


class RestBackend:
    """The tools' backend over the v1 REST API. A v1 error answer becomes a ToolFailure with the
    same code and message, so a model reads the API's own refusal."""

    def __init__(self, client: httpx.AsyncClient, fixed_subject: str | None):
        self.client = client
        self.fixed_subject = fixed_subject

    def subject(self, given: str | None) -> str:
        subject = self.fixed_subject or given
        if not subject:
            raise ToolFailure("subject_required", "Say whose memories: this key is not bound to a subject.")
        return subject

    async def _call(self, method: str, path: str, *, json=None, params=None) -> dict:
        try:
            response = await self.client.request(method, f"/api/v1/{path}", json=json, params=params)
        except httpx.HTTPError as exc:
            raise ToolFailure("memory_unavailable",
                              f"The memory service could not be reached ({type(exc).__name__}); retry later.") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success and isinstance(body, dict):
            return body
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and "code" in error:
            raise ToolFailure(error["code"], error.get("message", ""), error.get("details"))
        raise ToolFailure("memory_unavailable", f"The memory service answered HTTP {response.status_code}.")

    @staticmethod
    def _subject_path(subject: str) -> str:
        return f"subjects/{quote(subject, safe='')}"

    def _memory_path(self, subject: str, memory_id: str) -> str:
        return f"{self._subject_path(subject)}/memories/{quote(memory_id, safe='')}"

    async def remember(self, subject, fields):
        return await self._call("POST", f"{self._subject_path(subject)}/memories", json=fields)

    async def search(self, subject, fields):
        return await self._call("POST", f"{self._subject_path(subject)}/search", json=fields)

    async def context(self, subject, fields):
        return await self._call("POST", f"{self._subject_path(subject)}/context", json=fields)

    async def list(self, subject, params):
        return await self._call("GET", f"{self._subject_path(subject)}/memories", params=params)

    async def correct(self, subject, memory_id, fields):
        return await self._call("PATCH", self._memory_path(subject, memory_id), json=fields)

    async def forget(self, subject, memory_id):
        return await self._call("DELETE", self._memory_path(subject, memory_id))

    async def history(self, subject, memory_id):
        return await self._call("GET", f"{self._memory_path(subject, memory_id)}/history")


def _settings(environ) -> tuple[str, str, str | None]:
    url = environ.get("MEMORY_API_URL", "").strip().rstrip("/")
    key = environ.get("MEMORY_API_KEY", "").strip()
    subject = environ.get("MEMORY_SUBJECT", "").strip() or None
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError("Set MEMORY_API_URL to the memory service's base URL, e.g. http://127.0.0.1:8000")
    if not key:
        raise ConfigurationError("Set MEMORY_API_KEY to an API key of your tenant (manage.py create_api_key).")
    return url, key, subject


async def _bound_subject(client: httpx.AsyncClient) -> str | None:
    """The subject the key is bound to (None for an unbound key), from GET /api/v1/key; refuses
    to start on a key the service does not accept, rather than failing every tool call later."""
    try:
        response = await client.get("/api/v1/key")
    except httpx.HTTPError as exc:
        raise ConfigurationError(f"Cannot reach the memory service at {client.base_url}: {exc}") from None
    if response.status_code == 401:
        raise ConfigurationError("The memory service refused MEMORY_API_KEY (unknown or revoked key).")
    if not response.is_success:
        raise ConfigurationError(f"GET /api/v1/key answered HTTP {response.status_code}.")
    return response.json().get("subject")


async def serve(environ=os.environ) -> None:
    url, key, subject = _settings(environ)
    headers = {"Authorization": f"Bearer {key}", "User-Agent": "memory-mcp"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=TIMEOUT) as client:
        bound = await _bound_subject(client)
        if bound and subject and subject != bound:
            raise ConfigurationError(f"MEMORY_SUBJECT is {subject!r} but the key is bound to another subject.")
        fixed = bound or subject
        server = build_server(RestBackend(client, fixed), subject_argument=fixed is None)
        await server.run_stdio_async()


def main() -> None:
    try:
        anyio.run(serve)
    except ConfigurationError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
