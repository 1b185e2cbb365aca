"""`Idempotency-Key` for explicit writes: the same key with the same body gets the stored answer
again; the same key with another body is refused (409 `idempotency_key_reused`).

A transaction-scoped advisory lock on (tenant, scope, key) makes a concurrent retry wait for the
first attempt to commit and then replay its answer, rather than writing twice.
"""
import hashlib

from django.db import connection
from rest_framework.response import Response

from api.errors import error_body
from memoryapp.errors import ApplicationError, PolicyRejected
from memoryapp.models import IdempotencyRecord, Memory, Subject
from memoryapp.selectors.memories import parse_public_id
from memoryapp.services.audit import canonical_json

HEADER = "Idempotency-Key"
MAX_KEY = 200


def _scope(request) -> str:
    scope = f"{request.method} {request.path}"
    return scope if len(scope) <= 200 else f"{request.method} sha256:{hashlib.sha256(scope.encode()).hexdigest()}"


def _erased_since(request, record: IdempotencyRecord) -> bool:
    """Whether the stored answer names something being erased: the subject of the request
    (erasing, or a new person with the same id), or the memory it returned. Erasure deletes the
    record later; until then it must not hand the content back."""
    if record.status_code >= 400:
        return False  # a refusal wrote nothing and holds no content
    subject_ref = (getattr(request, "resolver_match", None) and request.resolver_match.kwargs.get("subject")) or ""
    if subject_ref:
        subject = Subject.objects.filter(tenant=request.tenant, external_id=subject_ref).first()
        if subject is None or subject.status != Subject.Status.ACTIVE or subject.created_at > record.created_at:
            return True
    memory_id = parse_public_id((record.response or {}).get("id", "") if isinstance(record.response, dict) else "",
                                "mem")
    if memory_id is not None:
        return not Memory.objects.filter(tenant=request.tenant, pk=memory_id, erasing=False).exists()
    return False


def idempotent(request, perform) -> Response:
    """Run `perform() -> (status, body)` at most once per Idempotency-Key. Needs the request's
    tenant-bound transaction (the API view's)."""
    key = request.headers.get(HEADER)
    if key is None:
        status, body = perform()
        return Response(body, status=status)
    if not key or len(key) > MAX_KEY or not key.isascii() or not key.isprintable():
        raise ApplicationError("invalid_idempotency_key", f"{HEADER} is 1-{MAX_KEY} printable ASCII characters.")
    tenant = request.tenant
    scope = _scope(request)
    request_hash = hashlib.sha256(canonical_json(request.data).encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"idem:{tenant.pk}:{scope}:{key}"])
    record = IdempotencyRecord.objects.filter(tenant=tenant, scope=scope, key=key).first()
    if record is not None:
        if record.request_hash != request_hash:
            raise ApplicationError(
                "idempotency_key_reused", f"This {HEADER} was already used with a different request body.",
                {"idempotency_key": key}, status=409,
            )
        if _erased_since(request, record):
            raise ApplicationError(
                "erased", "What this request wrote has been erased since; its answer is not replayed.",
                {"idempotency_key": key}, status=409,
            )
        return Response(record.response, status=record.status_code, headers={"Idempotent-Replayed": "true"})

    def store(status, body):
        IdempotencyRecord.objects.create(
            tenant=tenant, scope=scope, key=key, request_hash=request_hash, status_code=status, response=body
        )

    try:
        status, body = perform()
    except PolicyRejected as exc:
        # The refusal is kept (not rolled back), so its answer is replayed like a success.
        store(exc.status, error_body(exc.code, exc.message, exc.details))
        raise
    store(status, body)
    return Response(body, status=status)
