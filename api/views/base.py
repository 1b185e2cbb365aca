"""What every agent-API view shares: its own transaction, the subject check, errors and metrics.

Views are exempt from ATOMIC_REQUESTS and open the transaction themselves, so that a database
that cannot even be reached still gets the API's JSON 503 instead of Django's HTML 500.
"""

import logging
import random
import re
import time

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError, transaction
from rest_framework import status
from rest_framework.views import APIView

from api.authentication import api_key_actor
from api.errors import error_json_response, is_lock_conflict, sqlstate
from api.metrics import LOCK_CONFLICT_RETRIES, REQUEST_SECONDS
from api.parsers import BoundedJSONParser
from memoryapp.errors import ApplicationError


logger = logging.getLogger("api.access")

# Services take locks in one order (events, subject, memories; the audit chain only after
# commit), so a deadlock should not happen; one that still does, or a serialization failure,
# is retried here whole rather than answered with a 503.
LOCK_CONFLICT_ATTEMPTS = 4

# Unreserved URL characters plus ':' and '@', which are safe in a path segment; but not "." or
# "..", which clients and proxies resolve as path steps, so such a subject could not be reached.
# (\Z, not $: "$" also matches before a final newline.)
SUBJECT_ID = re.compile(r"^(?!\.\.?\Z)[A-Za-z0-9._~:@-]{1,200}\Z")


class SubjectForbidden(ApplicationError):
    def __init__(self):
        super().__init__("subject_forbidden", "This key is bound to another subject.", status=403)


def _observe(request, response_status: int, started: float) -> None:
    match = getattr(request, "resolver_match", None)
    route = match.url_name if match and match.url_name else "unknown"
    elapsed = time.perf_counter() - started
    REQUEST_SECONDS.labels(route, request.method, str(response_status)).observe(elapsed)
    # Never the body, the query or a memory's content: only what identifies the call.
    api_key = getattr(request, "api_key", None)
    logger.info(
        "api %s %s %s %.1fms key=%s", request.method, route, response_status, elapsed * 1000,
        api_key.prefix if api_key else "-",
        extra={"route": route, "status": response_status, "duration_ms": round(elapsed * 1000, 1)},
    )


class ApiView(APIView):
    parser_classes = [BoundedJSONParser]
    # Whether this view runs inside a transaction bound to the key's tenant.
    transactional = True

    @classmethod
    def as_view(cls, **initkwargs):
        return transaction.non_atomic_requests(super().as_view(**initkwargs))

    def dispatch(self, request, *args, **kwargs):
        started = time.perf_counter()
        try:
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                # Read once, so a retried attempt parses the same body again.
                request.body  # noqa: B018
            for attempt in range(1, LOCK_CONFLICT_ATTEMPTS + 1):
                try:
                    response = self._attempt(request, *args, **kwargs)
                    break
                except OperationalError as exc:
                    if not is_lock_conflict(exc) or attempt == LOCK_CONFLICT_ATTEMPTS:
                        raise
                    # A deadlock or serialization failure rolled the whole attempt back: nothing
                    # of it was written, so it is simply run again, after a short random pause.
                    logger.warning("lock conflict (%s); attempt %d again", sqlstate(exc), attempt + 1)
                    match = getattr(request, "resolver_match", None)
                    LOCK_CONFLICT_RETRIES.labels(match.url_name if match else "unknown", sqlstate(exc)).inc()
                    time.sleep(random.uniform(0.01, 0.05) * attempt)
        except RequestDataTooBig:
            response = error_json_response("payload_too_large", "The request body is too large.", 413)
        except (OperationalError, InterfaceError):
            logger.warning("database unavailable")
            response = error_json_response(
                "memory_unavailable", "The memory store is temporarily unavailable; retry later.",
                status.HTTP_503_SERVICE_UNAVAILABLE,
            )
        except Exception:
            logger.exception("unhandled error in %s", type(self).__name__)
            response = error_json_response("internal_error", "An internal error occurred.", 500)
        # Answers carry people's memories: no browser or proxy cache may keep them.
        if not response.has_header("Cache-Control"):
            response["Cache-Control"] = "no-store"
        _observe(request, response.status_code, started)
        return response

    def _attempt(self, request, *args, **kwargs):
        if not self.transactional:
            return super().dispatch(request, *args, **kwargs)
        with transaction.atomic():
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        subject = kwargs.get("subject")
        if subject is not None:
            if not SUBJECT_ID.match(subject):
                raise ApplicationError(
                    "invalid_subject",
                    "A subject id is 1-200 URL-safe characters (letters, digits, ._~:@-), other than '.' and '..'.",
                    status=400,
                )
            self.check_subject(request, subject)

    @staticmethod
    def check_subject(request, subject_ref: str) -> None:
        bound = request.api_key.subject_ref
        if bound and bound != subject_ref:
            raise SubjectForbidden()

    @staticmethod
    def actor(request):
        return api_key_actor(request.api_key)

    @staticmethod
    def validated(serializer_class, data):
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
