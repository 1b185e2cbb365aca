"""MemoryClient (sync) and AsyncMemoryClient: the agent API (v1 and its extensions), typed.

Both run the same Call objects (_calls.py). Writes carry an Idempotency-Key generated once per
call and reused by every retry of it, so a retried write is never stored twice."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import datetime
from typing import Any, cast

import httpx

from memory_client import _calls as calls
from memory_client.errors import MemoryConnectionError, error_for
from memory_client.types import (
    ConsoleLink, Context, Event, EventsAccepted, Health, History, Job, JobRef, KeyInfo, Memory, MemoryPage,
    MemoryStatus, MemoryType, NamespaceInfo, NamespacePage, ScoredMemory, Sensitivity, SourceKind,
)

__all__ = ["MemoryClient", "AsyncMemoryClient"]

DEFAULT_TIMEOUT = 30.0
USER_AGENT = "memory-client/0.1"
FINISHED = ("succeeded", "failed")


class _Base:
    def __init__(self, base_url: str, api_key: str, *, max_retries: int = 3, backoff: float = 0.25):
        if not api_key:
            raise ValueError("An API key is required.")
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff = backoff
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json",
                         "User-Agent": USER_AGENT}

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise error_for(response.status_code, body, dict(response.headers))
        return body

    def _delay(self, call: calls.Call, attempt: int, *, error: BaseException | None = None,
               response: httpx.Response | None = None) -> float | None:
        if attempt >= self.max_retries:
            return None
        retry_after = None
        if response is not None and response.headers.get("retry-after"):
            try:
                retry_after = float(response.headers["retry-after"])
            except ValueError:
                retry_after = None
        return calls.retry_delay(call, attempt, backoff=self.backoff, error=error,
                                 status=response.status_code if response is not None else None,
                                 retry_after=retry_after)

    @staticmethod
    def _unreachable(exc: Exception) -> MemoryConnectionError:
        return MemoryConnectionError(f"The memory service could not be reached: {type(exc).__name__}: {exc}",
                                     details={"exception": type(exc).__name__})


class MemoryClient(_Base):
    """The agent API over HTTP, synchronously.

    `MemoryClient(base_url, api_key)`; `max_retries` (default 3) for connection failures, 429
    and 5xx answers; pass `http_client` (an httpx.Client) to control transport, proxies or TLS.
    Use it as a context manager, or call close()."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT, max_retries: int = 3,
                 backoff: float = 0.25, http_client: httpx.Client | None = None):
        super().__init__(base_url, api_key, max_retries=max_retries, backoff=backoff)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: calls.Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method, self.base_url + call.path, params=call.params, json=call.body,
                    headers={**self._headers, **(call.headers or {})},
                )
            except httpx.TransportError as exc:
                delay = self._delay(call, attempt, error=exc)
                if delay is None:
                    raise self._unreachable(exc) from exc
            else:
                delay = self._delay(call, attempt, response=response) if response.status_code >= 429 else None
                if delay is None:
                    return self._answer(response)
            time.sleep(delay)
            attempt += 1

    # The service and the key.

    def health(self) -> Health:
        return cast(Health, self._run(calls.health()))

    def key_info(self) -> KeyInfo:
        """The calling key: its prefix, name, and the subject it is bound to (or None)."""
        return cast(KeyInfo, self._run(calls.key_info()))

    # Events and jobs.

    def append_events(self, subject: str, events: Iterable[Event] | Event) -> EventsAccepted:
        """Append one event (a dict) or many (a list, at most 1000). Re-sent event_ids are duplicates."""
        payload = cast(dict, events) if isinstance(events, dict) else [dict(e) for e in events]
        return cast(EventsAccepted, self._run(calls.events_append(subject, payload)))

    def get_job(self, job_id: str) -> Job:
        return cast(Job, self._run(calls.job_get(job_id)))

    def wait_for_job(self, job_id: str, *, timeout: float = 60.0, interval: float = 0.25) -> Job:
        """Poll until the job has succeeded or failed; TimeoutError if it has not within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(job_id)
            if job["status"] in FINISHED:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"Job {job_id} is still {job['status']} after {timeout} s.")
            time.sleep(interval)

    # Memories.

    def write_memory(
        self, subject: str, statement: str, *, memory_type: MemoryType | None = None, namespace: str | None = None,
        source: SourceKind | None = None, key: str | None = None, valid_from: datetime | str | None = None,
        confidence: float | None = None, importance: float | None = None, sensitivity: Sensitivity | None = None,
        expires_at: datetime | str | None = None, metadata: dict[str, Any] | None = None,
        exact_key: bool | None = None, idempotency_key: str | None = None, **extra: Any,
    ) -> Memory:
        """An explicit write (201 with the memory; `supersedes` filled when it replaced one)."""
        return cast(Memory, self._run(calls.memory_write(
            subject, statement, idempotency_key=idempotency_key, extra=extra, memory_type=memory_type,
            namespace=namespace, source=source, key=key, valid_from=valid_from, confidence=confidence,
            importance=importance, sensitivity=sensitivity, expires_at=expires_at, metadata=metadata,
            exact_key=exact_key,
        )))

    def list_memories(
        self, subject: str, *, status: MemoryStatus | None = None, memory_type: MemoryType | None = None,
        namespace: str | None = None, namespace_match: str | None = None, key: str | None = None,
        metadata: dict[str, Any] | None = None, q: str | None = None, cursor: str | None = None,
        limit: int | None = None, **extra: Any,
    ) -> MemoryPage:
        """One page, newest first; `next_cursor` is None at the end."""
        return cast(MemoryPage, self._run(calls.memory_list(
            subject, metadata=metadata, extra=extra, status=status, memory_type=memory_type, namespace=namespace,
            namespace_match=namespace_match, key=key, q=q, cursor=cursor, limit=limit,
        )))

    def iter_memories(self, subject: str, **filters: Any) -> Iterator[Memory]:
        """Every memory that list_memories(**filters) selects, page after page."""
        cursor = None
        while True:
            page = self.list_memories(subject, cursor=cursor, **filters)
            yield from page["results"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def get_memory(self, subject: str, memory_id: str) -> Memory:
        return cast(Memory, self._run(calls.memory_get(subject, memory_id)))

    def correct_memory(
        self, subject: str, memory_id: str, *, statement: str | None = None, memory_type: MemoryType | None = None,
        namespace: str | None = None, source: SourceKind | None = None, valid_from: datetime | str | None = None,
        confidence: float | None = None, importance: float | None = None, sensitivity: Sensitivity | None = None,
        expires_at: datetime | str | None = None, metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None, **extra: Any,
    ) -> Memory:
        """A correction: a new version that supersedes this one (the new version is returned)."""
        return cast(Memory, self._run(calls.memory_correct(
            subject, memory_id, idempotency_key=idempotency_key, extra=extra, statement=statement,
            memory_type=memory_type, namespace=namespace, source=source, valid_from=valid_from,
            confidence=confidence, importance=importance, sensitivity=sensitivity, expires_at=expires_at,
            metadata=metadata,
        )))

    def forget_memory(self, subject: str, memory_id: str) -> JobRef:
        """Forget it and everything derived from it: gone from every read at once; a job deletes it."""
        return cast(JobRef, self._run(calls.memory_forget(subject, memory_id)))

    def memory_history(self, subject: str, memory_id: str) -> History:
        return cast(History, self._run(calls.memory_history(subject, memory_id)))

    # Reads by meaning.

    def search(
        self, subject: str, query: str, *, k: int | None = None, as_of: datetime | str | None = None,
        memory_types: list[MemoryType] | None = None, namespace: str | None = None,
        include_superseded: bool | None = None, min_score: float | None = None, **extra: Any,
    ) -> list[ScoredMemory]:
        """The best memories for `query`, best first (`extra`: known_at, purpose, max_sensitivity, …)."""
        answer = self._run(calls.search(
            subject, query, extra=extra, k=k, as_of=as_of, memory_types=memory_types, namespace=namespace,
            include_superseded=include_superseded, min_score=min_score,
        ))
        return cast(list[ScoredMemory], answer["results"])

    def context(self, subject: str, query: str, *, token_budget: int | None = None, **extra: Any) -> Context:
        """Text ready for a prompt: the relevant memories, dated and sourced, within `token_budget`."""
        return cast(Context, self._run(calls.context(subject, query, extra=extra, token_budget=token_budget)))

    def list_namespaces(self, subject: str, *, prefix: str | None = None, cursor: str | None = None,
                        limit: int | None = None) -> NamespacePage:
        """Extension: the namespaces holding the subject's active memories, with counts."""
        return cast(NamespacePage, self._run(calls.namespaces(subject, prefix=prefix, cursor=cursor, limit=limit)))

    def iter_namespaces(self, subject: str, *, prefix: str | None = None) -> Iterator[NamespaceInfo]:
        cursor = None
        while True:
            page = self.list_namespaces(subject, prefix=prefix, cursor=cursor)
            yield from page["namespaces"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    # The whole subject.

    def erase_subject(self, subject: str) -> JobRef:
        """Erase the subject and everything about it; the finished job's result is the receipt."""
        return cast(JobRef, self._run(calls.subject_erase(subject)))

    def request_export(self, subject: str) -> JobRef:
        """Start an export; the succeeded job's `result["download"]` names the export."""
        return cast(JobRef, self._run(calls.export_request(subject)))

    def download_export(self, export: str) -> dict[str, Any]:
        """The export document (events, memories with history and lineage, audit), parsed.
        `export`: its id, or the finished export job's `result["download"]`."""
        return cast(dict, self._run(calls.export_download(export)))

    def console_link(self, subject: str) -> ConsoleLink:
        """A single-use sign-in link to the console as that subject's user."""
        return cast(ConsoleLink, self._run(calls.console_link(subject)))


class AsyncMemoryClient(_Base):
    """The same operations as MemoryClient, awaitable (httpx.AsyncClient underneath)."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT, max_retries: int = 3,
                 backoff: float = 0.25, http_client: httpx.AsyncClient | None = None):
        super().__init__(base_url, api_key, max_retries=max_retries, backoff=backoff)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self, call: calls.Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, self.base_url + call.path, params=call.params, json=call.body,
                    headers={**self._headers, **(call.headers or {})},
                )
            except httpx.TransportError as exc:
                delay = self._delay(call, attempt, error=exc)
                if delay is None:
                    raise self._unreachable(exc) from exc
            else:
                delay = self._delay(call, attempt, response=response) if response.status_code >= 429 else None
                if delay is None:
                    return self._answer(response)
            await asyncio.sleep(delay)
            attempt += 1

    async def health(self) -> Health:
        return cast(Health, await self._run(calls.health()))

    async def key_info(self) -> KeyInfo:
        return cast(KeyInfo, await self._run(calls.key_info()))

    async def append_events(self, subject: str, events: Iterable[Event] | Event) -> EventsAccepted:
        payload = cast(dict, events) if isinstance(events, dict) else [dict(e) for e in events]
        return cast(EventsAccepted, await self._run(calls.events_append(subject, payload)))

    async def get_job(self, job_id: str) -> Job:
        return cast(Job, await self._run(calls.job_get(job_id)))

    async def wait_for_job(self, job_id: str, *, timeout: float = 60.0, interval: float = 0.25) -> Job:
        deadline = time.monotonic() + timeout
        while True:
            job = await self.get_job(job_id)
            if job["status"] in FINISHED:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"Job {job_id} is still {job['status']} after {timeout} s.")
            await asyncio.sleep(interval)

    async def write_memory(
        self, subject: str, statement: str, *, memory_type: MemoryType | None = None, namespace: str | None = None,
        source: SourceKind | None = None, key: str | None = None, valid_from: datetime | str | None = None,
        confidence: float | None = None, importance: float | None = None, sensitivity: Sensitivity | None = None,
        expires_at: datetime | str | None = None, metadata: dict[str, Any] | None = None,
        exact_key: bool | None = None, idempotency_key: str | None = None, **extra: Any,
    ) -> Memory:
        return cast(Memory, await self._run(calls.memory_write(
            subject, statement, idempotency_key=idempotency_key, extra=extra, memory_type=memory_type,
            namespace=namespace, source=source, key=key, valid_from=valid_from, confidence=confidence,
            importance=importance, sensitivity=sensitivity, expires_at=expires_at, metadata=metadata,
            exact_key=exact_key,
        )))

    async def list_memories(
        self, subject: str, *, status: MemoryStatus | None = None, memory_type: MemoryType | None = None,
        namespace: str | None = None, namespace_match: str | None = None, key: str | None = None,
        metadata: dict[str, Any] | None = None, q: str | None = None, cursor: str | None = None,
        limit: int | None = None, **extra: Any,
    ) -> MemoryPage:
        return cast(MemoryPage, await self._run(calls.memory_list(
            subject, metadata=metadata, extra=extra, status=status, memory_type=memory_type, namespace=namespace,
            namespace_match=namespace_match, key=key, q=q, cursor=cursor, limit=limit,
        )))

    async def iter_memories(self, subject: str, **filters: Any) -> AsyncIterator[Memory]:
        cursor = None
        while True:
            page = await self.list_memories(subject, cursor=cursor, **filters)
            for memory in page["results"]:
                yield memory
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def get_memory(self, subject: str, memory_id: str) -> Memory:
        return cast(Memory, await self._run(calls.memory_get(subject, memory_id)))

    async def correct_memory(
        self, subject: str, memory_id: str, *, statement: str | None = None, memory_type: MemoryType | None = None,
        namespace: str | None = None, source: SourceKind | None = None, valid_from: datetime | str | None = None,
        confidence: float | None = None, importance: float | None = None, sensitivity: Sensitivity | None = None,
        expires_at: datetime | str | None = None, metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None, **extra: Any,
    ) -> Memory:
        return cast(Memory, await self._run(calls.memory_correct(
            subject, memory_id, idempotency_key=idempotency_key, extra=extra, statement=statement,
            memory_type=memory_type, namespace=namespace, source=source, valid_from=valid_from,
            confidence=confidence, importance=importance, sensitivity=sensitivity, expires_at=expires_at,
            metadata=metadata,
        )))

    async def forget_memory(self, subject: str, memory_id: str) -> JobRef:
        return cast(JobRef, await self._run(calls.memory_forget(subject, memory_id)))

    async def memory_history(self, subject: str, memory_id: str) -> History:
        return cast(History, await self._run(calls.memory_history(subject, memory_id)))

    async def search(
        self, subject: str, query: str, *, k: int | None = None, as_of: datetime | str | None = None,
        memory_types: list[MemoryType] | None = None, namespace: str | None = None,
        include_superseded: bool | None = None, min_score: float | None = None, **extra: Any,
    ) -> list[ScoredMemory]:
        answer = await self._run(calls.search(
            subject, query, extra=extra, k=k, as_of=as_of, memory_types=memory_types, namespace=namespace,
            include_superseded=include_superseded, min_score=min_score,
        ))
        return cast(list[ScoredMemory], answer["results"])

    async def context(self, subject: str, query: str, *, token_budget: int | None = None, **extra: Any) -> Context:
        return cast(Context, await self._run(calls.context(subject, query, extra=extra, token_budget=token_budget)))

    async def list_namespaces(self, subject: str, *, prefix: str | None = None, cursor: str | None = None,
                              limit: int | None = None) -> NamespacePage:
        return cast(NamespacePage, await self._run(calls.namespaces(subject, prefix=prefix, cursor=cursor,
                                                                    limit=limit)))

    async def iter_namespaces(self, subject: str, *, prefix: str | None = None) -> AsyncIterator[NamespaceInfo]:
        cursor = None
        while True:
            page = await self.list_namespaces(subject, prefix=prefix, cursor=cursor)
            for namespace in page["namespaces"]:
                yield namespace
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def erase_subject(self, subject: str) -> JobRef:
        return cast(JobRef, await self._run(calls.subject_erase(subject)))

    async def request_export(self, subject: str) -> JobRef:
        return cast(JobRef, await self._run(calls.export_request(subject)))

    async def download_export(self, export: str) -> dict[str, Any]:
        return cast(dict, await self._run(calls.export_download(export)))

    async def console_link(self, subject: str) -> ConsoleLink:
        return cast(ConsoleLink, await self._run(calls.console_link(subject)))
