"""Every failure is a MemoryError subclass carrying the contract's error `code`, the HTTP
`status`, the `message` and the `details` the service sent."""
from __future__ import annotations

from typing import Any


class MemoryApiError(Exception):
    """An answer of 400 or more: `{"error": {"code", "message", "details"}}`."""

    def __init__(self, code: str, message: str, *, status: int | None = None, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.details = details or {}
        self.headers = headers or {}


class BadRequestError(MemoryApiError):
    """400: the request is not valid (`invalid_request`, `invalid_cursor`, `invalid_subject`, …)."""


class AuthenticationError(MemoryApiError):
    """401 `unauthenticated`: no key, or not a valid one."""


class PermissionDeniedError(MemoryApiError):
    """403: `subject_forbidden` (the key is bound to another subject), `source_not_allowed`, …"""


class NotFoundError(MemoryApiError):
    """404: `memory_not_found`, `job_not_found`, …; another tenant's or subject's ids alike."""


class ConflictError(MemoryApiError):
    """409: `idempotency_key_reused`, `erased`, `lock_conflict`, …"""


class PolicyRejectedError(MemoryApiError):
    """422 `policy_rejected`: the write policy refused to remember it; `details["reason"]` says why."""


class RateLimitedError(MemoryApiError):
    """429 `rate_limited`; `retry_after` in seconds, when the service said."""

    @property
    def retry_after(self) -> float | None:
        value = self.details.get("retry_after") or self.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None


class ServerError(MemoryApiError):
    """500 and other 5xx answers."""


class UnavailableError(ServerError):
    """503 `memory_unavailable` (or a failing part named by health): retry later."""


class MemoryConnectionError(MemoryApiError):
    """The service could not be reached, or the connection failed before an answer (code
    `connection_error`, no status). Raised after the retries are spent."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None):
        super().__init__("connection_error", message, details=details)


_BY_STATUS: dict[int, type[MemoryApiError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    409: ConflictError, 422: PolicyRejectedError, 429: RateLimitedError, 503: UnavailableError,
}


def error_for(status: int, body: Any, headers: dict[str, str] | None = None) -> MemoryApiError:
    """The exception for an error answer; a body that is not the contract's error object (a proxy's
    HTML page) still gives a code, `http_<status>`."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    else:
        code, message, details = f"http_{status}", f"HTTP {status} without the API's error object.", {}
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else MemoryApiError)
    return cls(code, message, status=status, details=details, headers=headers)
