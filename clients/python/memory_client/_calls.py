"""What each operation sends, apart from how it is sent: the sync and the async client both run
these Call objects, so the two cannot drift apart. Also the retry rule they share."""
from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

import httpx

IDEMPOTENCY_HEADER = "Idempotency-Key"

# "always": safe to send again whatever happened to the last attempt (reads; writes carrying an
# Idempotency-Key or event ids). "unsent": only when the request surely did nothing (it never
# reached the service, or the service refused it before doing anything: 429, 503).
Retry = Literal["always", "unsent"]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, Any] | None = None
    body: Any = None
    retry: Retry = "always"
    headers: dict[str, str] | None = None


def _seg(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"Expected a non-empty string id, got {value!r}.")
    return quote(value, safe="~:@")


def _time(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _fields(**fields: Any) -> dict[str, Any]:
    """The fields that were given (None means: not sent, the service's default applies)."""
    return {k: _time(v) if isinstance(v, datetime) else v for k, v in fields.items() if v is not None}


def new_idempotency_key() -> str:
    return f"mc-{uuid.uuid4().hex}"


def subject_path(subject: str, rest: str = "") -> str:
    return f"/api/v1/subjects/{_seg(subject)}{rest}"


def health() -> Call:
    return Call("GET", "/api/v1/health")


def key_info() -> Call:
    return Call("GET", "/api/v1/key")


def events_append(subject: str, events: list[dict[str, Any]] | dict[str, Any]) -> Call:
    # Each event's event_id is its own idempotency key: re-sending changes nothing.
    body = events if isinstance(events, dict) else {"events": list(events)}
    return Call("POST", subject_path(subject, "/events"), body=body)


def job_get(job_id: str) -> Call:
    return Call("GET", f"/api/v1/jobs/{_seg(job_id)}")


def memory_write(subject: str, statement: str, *, idempotency_key: str | None, extra: dict[str, Any],
                 **fields: Any) -> Call:
    body = {"statement": statement, **_fields(**fields), **extra}
    return Call("POST", subject_path(subject, "/memories"), body=body,
                headers={IDEMPOTENCY_HEADER: idempotency_key or new_idempotency_key()})


def memory_list(subject: str, *, metadata: dict[str, Any] | None, extra: dict[str, Any], **filters: Any) -> Call:
    params = _fields(**filters)
    if metadata is not None:
        params["metadata"] = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)
    return Call("GET", subject_path(subject, "/memories"), params={**params, **extra})


def memory_get(subject: str, memory_id: str) -> Call:
    return Call("GET", subject_path(subject, f"/memories/{_seg(memory_id)}"))


def memory_correct(subject: str, memory_id: str, *, idempotency_key: str | None, extra: dict[str, Any],
                   **fields: Any) -> Call:
    body = {**_fields(**fields), **extra}  # `extra` is sent as is: {"expires_at": None} clears the expiry
    return Call("PATCH", subject_path(subject, f"/memories/{_seg(memory_id)}"), body=body,
                headers={IDEMPOTENCY_HEADER: idempotency_key or new_idempotency_key()})


def memory_forget(subject: str, memory_id: str) -> Call:
    return Call("DELETE", subject_path(subject, f"/memories/{_seg(memory_id)}"), retry="unsent")


def memory_history(subject: str, memory_id: str) -> Call:
    return Call("GET", subject_path(subject, f"/memories/{_seg(memory_id)}/history"))


def search(subject: str, query: str, *, extra: dict[str, Any], **fields: Any) -> Call:
    return Call("POST", subject_path(subject, "/search"), body={"query": query, **_fields(**fields), **extra})


def context(subject: str, query: str, *, extra: dict[str, Any], **fields: Any) -> Call:
    return Call("POST", subject_path(subject, "/context"), body={"query": query, **_fields(**fields), **extra})


def namespaces(subject: str, **params: Any) -> Call:
    return Call("GET", subject_path(subject, "/namespaces"), params=_fields(**params))


def subject_erase(subject: str) -> Call:
    return Call("DELETE", subject_path(subject), retry="unsent")


def export_request(subject: str) -> Call:
    return Call("POST", subject_path(subject, "/exports"), body={}, retry="unsent")


def export_download(export: str) -> Call:
    """`export`: the export's id, or the finished job's `result["download"]` (its path)."""
    export_id = export.rstrip("/").rsplit("/", 1)[-1]
    return Call("GET", f"/api/v1/exports/{_seg(export_id)}")


def console_link(subject: str) -> Call:
    return Call("POST", subject_path(subject, "/console-link"), body={}, retry="unsent")


# Transport failures where the request never reached the service: safe to resend anything.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def retry_delay(call: Call, attempt: int, *, backoff: float, error: BaseException | None = None,
                status: int | None = None, retry_after: float | None = None) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None: do not retry."""
    if error is not None:
        if not isinstance(error, httpx.TransportError):
            return None
        if call.retry == "unsent" and not isinstance(error, _UNSENT):
            return None
    elif status in (429, 503):
        pass  # refused before anything was done (rate limit; the database rolled back)
    elif status is not None and status >= 500:
        if call.retry != "always":
            return None
    else:
        return None
    delay = backoff * (2 ** attempt) * (0.5 + random.random())
    if retry_after is not None:
        delay = max(delay, min(retry_after, 60.0))
    return delay
