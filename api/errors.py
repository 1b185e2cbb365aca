"""The one place where errors become HTTP answers: `{"error": {"code", "message", "details"}}`.

Domain errors (ApplicationError) carry their own code and status; DRF's own exceptions (bad
JSON, auth, throttling, wrong method) are translated to the same shape. A database that cannot
be reached is a 503 `memory_unavailable`, never an empty answer.
"""
import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.http import JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from memoryapp.errors import ApplicationError, PolicyRejected

logger = logging.getLogger(__name__)

_DRF_CODES = {
    exceptions.ParseError: "invalid_json",
    exceptions.AuthenticationFailed: "unauthenticated",
    exceptions.NotAuthenticated: "unauthenticated",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
}


# deadlock_detected, serialization_failure: the transaction lost a race and was rolled back
# whole; running it again is safe. Not lock_not_available (55P03): nothing here locks NOWAIT, so
# it means the request already waited its whole lock timeout, and waiting again would make the
# answer late by that much per attempt (it is a 503 memory_unavailable instead).
LOCK_CONFLICT_SQLSTATES = frozenset({"40P01", "40001"})


def sqlstate(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return getattr(cause, "sqlstate", None) or getattr(exc, "sqlstate", None) or ""


def is_lock_conflict(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and sqlstate(exc) in LOCK_CONFLICT_SQLSTATES


def error_body(code: str, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_json_response(code: str, message: str, status_code: int, details: dict | None = None) -> JsonResponse:
    """For answers given outside DRF's response cycle (the database fails before a view runs)."""
    return JsonResponse(error_body(code, message, details), status=status_code)


def unavailable_body() -> dict:
    return error_body("memory_unavailable", "The memory store is temporarily unavailable; retry later.")


def _rollback() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            connection.set_rollback(True)


def _validation_details(detail) -> dict:
    if isinstance(detail, dict):
        return {str(k): v for k, v in detail.items()}
    return {"non_field_errors": detail if isinstance(detail, list) else [detail]}


def exception_handler(exc, context):
    """REST_FRAMEWORK's EXCEPTION_HANDLER. A write-policy refusal keeps the transaction (its audit
    entry was recorded in its own savepoint and must survive); every other error rolls back."""
    if isinstance(exc, PolicyRejected):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status)
    if is_lock_conflict(exc):
        return None  # re-raised to the view's dispatch, which runs the request again
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    _rollback()
    headers = {}
    if isinstance(exc, ApplicationError):
        body, code = error_body(exc.code, exc.message, exc.details), exc.status
    elif isinstance(exc, exceptions.ValidationError):
        body = error_body("invalid_request", "The request is not valid.", _validation_details(exc.detail))
        code = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, exceptions.APIException):
        name = next((c for t, c in _DRF_CODES.items() if isinstance(exc, t)), exc.default_code)
        message = str(exc.detail) if not isinstance(exc.detail, (dict, list)) else exc.default_detail
        body, code = error_body(name, str(message)), exc.status_code
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
            body["error"]["details"] = {"retry_after": int(headers["Retry-After"])}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
    elif isinstance(exc, RequestDataTooBig):
        body = error_body("payload_too_large", "The request body is too large.")
        code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    elif isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable: %s", type(exc).__name__)
        body, code = unavailable_body(), status.HTTP_503_SERVICE_UNAVAILABLE
    elif isinstance(exc, DatabaseError):
        # Bad input must be caught before the database; reaching here is our bug, not the caller's.
        logger.exception("database error")
        body, code = error_body("internal_error", "An internal error occurred."), 500
    else:
        return None
    return Response(body, status=code, headers=headers)
