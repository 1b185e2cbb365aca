"""`/mcp/`: the MCP server over streamable HTTP on the running service (stateless, JSON responses).

How it is served by a WSGI server: the POST reaches this view like any v1 request (the key's
authentication, throttling, the request's transaction bound to the key's tenant, JSON errors,
metrics). The view then hands the raw HTTP exchange to the MCP SDK's own stateless
streamable-HTTP handler, run to completion in an event loop of this request thread's own, so the
SDK, not this code, speaks the protocol (both the initialize handshake and the 2026-07-28
single-exchange requests). The tools' database work runs in that same thread, on the request's
own connection and inside its transaction, exactly as a v1 view's does: no thread hand-offs, and
nothing outlives the request; gunicorn's sync/gthread workers need no ASGI server. A stateless
server has no stream to offer on GET and no session to DELETE: both answer 405.

The tools (memory_mcp/tools.py) are the stdio server's; here their backend calls the same
functions the v1 views call, so a tool validates, audits and answers exactly like its v1 route.
"""
import asyncio
import contextvars
import functools
import json
import threading
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError, transaction
from django.http import HttpResponse
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.exceptions import ValidationError

from api.errors import is_lock_conflict
from api.serializers import ContextIn, MemoryCorrectionIn, MemoryIn, MemoryListIn, SearchIn
from api.views.base import SUBJECT_ID, ApiView
from api.views.memories import (
    memory_correction,
    memory_create,
    memory_forgetting,
    memory_history_answer,
    memory_page,
)
from api.views.search import context_answer, search_answer
from memory_mcp.tools import ToolFailure, build_server
from memoryapp.errors import ApplicationError, PolicyRejected

# For a key not bound to a subject: the subject for every tool of this request, so that a client
# configured once (a header beside Authorization) need not name it in each call.
SUBJECT_HEADER = "X-Memory-Subject"
# Response headers of the SDK's answer that mean something to an MCP client.
PASSED_HEADERS = frozenset({"content-type", "mcp-protocol-version", "www-authenticate"})


@dataclass
class _Call:
    request: Any  # the authenticated DRF request
    subject: str | None  # fixed for every tool: the key's bound subject or SUBJECT_HEADER
    lock_conflict: OperationalError | None = None


_current: contextvars.ContextVar[_Call] = contextvars.ContextVar("mcp_call")


def _invalid(exc: ValidationError) -> ToolFailure:
    detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
    details = json.loads(json.dumps(detail, default=str))
    return ToolFailure("invalid_request", f"The request is not valid: {json.dumps(details)}", details)


def _in_savepoint(fn):
    """Run one write tool's work in a savepoint of the request's transaction: a refusal undoes
    what it did, except a write-policy refusal, whose audit entry must stay (as in the v1 API)."""
    call = _current.get()
    refusal = None
    try:
        with transaction.atomic():
            try:
                return fn(call.request)
            except PolicyRejected as exc:
                refusal = exc
    except (ApplicationError, ValidationError, OperationalError, InterfaceError) as exc:
        raise _failure(call, exc) from None
    raise ToolFailure(refusal.code, refusal.message, refusal.details)


def _read(fn):
    """A read tool's work: it writes only its read-audit entry, last, so it needs no savepoint
    (two round trips fewer on the hot path); a database error still undoes the request."""
    call = _current.get()
    try:
        return fn(call.request)
    except (ApplicationError, ValidationError, OperationalError, InterfaceError) as exc:
        if isinstance(exc, (OperationalError, InterfaceError)):
            transaction.set_rollback(True)
        raise _failure(call, exc) from None


def _failure(call: _Call, exc: Exception) -> ToolFailure:
    if isinstance(exc, ApplicationError):
        return ToolFailure(exc.code, exc.message, exc.details)
    if isinstance(exc, ValidationError):
        return _invalid(exc)
    if is_lock_conflict(exc):
        call.lock_conflict = exc  # the view runs the whole request again, as v1 views do
    return ToolFailure("memory_unavailable", "The memory store is temporarily unavailable; retry later.")


def _validated(serializer_class, data: dict) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _blocking(work, fn):
    """Run Django's synchronous database code from a tool. The event loop is this request's own
    and has nothing else to run meanwhile, so blocking it is what is wanted; Django refuses ORM
    calls while it sees a running loop in the thread (a guard for shared loops), so the loop is
    unset for the duration of the call."""
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        return work(fn)
    finally:
        asyncio.events._set_running_loop(loop)


async def _write(fn):
    return _blocking(_in_savepoint, fn)


async def _reading(fn):
    return _blocking(_read, fn)


class ServiceBackend:
    """The tools' backend inside the service: the v1 views' own steps, on the request's thread."""

    def subject(self, given: str | None) -> str:
        call = _current.get()
        subject = call.subject or given
        if not subject:
            raise ToolFailure("subject_required", "Say whose memories: this key is not bound to a subject.")
        if not SUBJECT_ID.match(subject):
            raise ToolFailure("invalid_subject", "A subject id is 1-200 URL-safe characters (letters, digits, "
                                                 "._~:@-), other than '.' and '..'.")
        bound = call.request.api_key.subject_ref
        if bound and bound != subject:
            raise ToolFailure("subject_forbidden", "This key is bound to another subject.")
        return subject

    async def remember(self, subject, fields):
        return await _write(lambda request: memory_create(request, subject, _validated(MemoryIn, fields)))

    async def search(self, subject, fields):
        return await _reading(lambda request: search_answer(request, subject, _validated(SearchIn, fields)))

    async def context(self, subject, fields):
        return await _reading(lambda request: context_answer(request, subject, _validated(ContextIn, fields)))

    async def list(self, subject, params):
        return await _reading(lambda request: memory_page(request, subject, _validated(MemoryListIn, params)))

    async def correct(self, subject, memory_id, fields):
        return await _write(lambda request: memory_correction(
            request, subject, memory_id, dict(_validated(MemoryCorrectionIn, fields))))

    async def forget(self, subject, memory_id):
        return await _write(lambda request: memory_forgetting(request, subject, memory_id))

    async def history(self, subject, memory_id):
        return await _reading(lambda request: memory_history_answer(request, subject, memory_id))


@functools.cache
def _servers() -> dict:
    """Built once per process (deriving the tools' schemas takes a while): keyed by whether the
    tools take a `subject` argument."""
    backend = ServiceBackend()
    return {asked: build_server(backend, subject_argument=asked) for asked in (False, True)}


def _asgi_scope(request) -> dict:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()]
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": request.method, "scheme": request.scheme, "path": request.path,
        "raw_path": request.path.encode(), "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "", "headers": headers, "client": (request.META.get("REMOTE_ADDR") or "", 0),
        "server": (request.get_host(), int(request.get_port() or 80)),
    }


async def _exchange(server, scope: dict, body: bytes) -> tuple[int, list, bytes]:
    """One HTTP exchange through the SDK's stateless JSON-response handler. The session manager
    (one task group) lives for this request only: nothing is shared between requests."""
    # The SDK's own MCP server object behind MCPServer; pinned SDK version (requirements.txt).
    manager = StreamableHTTPSessionManager(app=server._lowlevel_server, json_response=True, stateless=True)
    answer = {"status": 500, "headers": [], "body": b""}
    delivered = False

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"], answer["headers"] = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return answer["status"], answer["headers"], answer["body"]


_threads = threading.local()


def _event_loop() -> asyncio.Runner:
    """This request thread's event loop, made on its first MCP request and kept for its next."""
    runner = getattr(_threads, "runner", None)
    if runner is None:
        runner = _threads.runner = asyncio.Runner()
    return runner


class McpView(ApiView):
    schema = None  # not part of the v1 REST API's OpenAPI document

    def post(self, request):
        bound = request.api_key.subject_ref or None
        chosen = request.headers.get(SUBJECT_HEADER) or None
        if chosen is not None:
            if not SUBJECT_ID.match(chosen):
                raise ApplicationError("invalid_subject", f"{SUBJECT_HEADER} is not a valid subject id.", status=400)
            self.check_subject(request, chosen)
        call = _Call(request=request, subject=bound or chosen)
        token = _current.set(call)
        try:
            status, headers, body = _event_loop().run(
                _exchange(_servers()[call.subject is None], _asgi_scope(request), request.body),
                context=contextvars.copy_context(),
            )
        finally:
            _current.reset(token)
        if call.lock_conflict is not None:
            raise call.lock_conflict  # rolled back whole and run again by ApiView.dispatch
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.decode("latin-1").lower() in PASSED_HEADERS:
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response
