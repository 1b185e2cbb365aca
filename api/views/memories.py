import base64
import binascii
from datetime import datetime

from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from api.authentication import api_key_actor, claim_source
from api.idempotency import idempotent
from api.representations import event_json, memory_json
from api.schemas import IDEMPOTENCY_KEY, HistoryOut, JobRefOut, MemoryOut, MemoryPageOut, NamespacePageOut, errors
from api.serializers import HistoryIn, MemoryCorrectionIn, MemoryIn, MemoryListIn, NamespacesIn
from api.views.base import ApiView
from memoryapp.errors import ApplicationError
from memoryapp.timebounds import MAX_TIME, MIN_TIME, utc_offset_problem
from memoryapp.selectors.memories import memory_written, memory_get, memory_history, memory_list, memory_namespaces
from memoryapp.services.memories import MemoryDraft, memory_correct, memory_forget, memory_write
from memoryapp.services.reads import read_audit_record


def cursor_encode(memory) -> str:
    raw = f"{memory.recorded_at.isoformat()}|{memory.id.hex}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_decode(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        when, _, pk = raw.partition("|")
        recorded_at = datetime.fromisoformat(when)
        int(pk, 16)
        if len(pk) != 32 or recorded_at.tzinfo is None:
            raise ValueError
        # A forged cursor's time goes straight into the query: hold it to the rules of any time sent.
        if utc_offset_problem(recorded_at) or not MIN_TIME <= recorded_at <= MAX_TIME:
            raise ValueError
        return recorded_at, pk
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ApplicationError("invalid_cursor", "The cursor is not one this API returned.") from None


# The answers themselves, apart from the views, so that every door onto the agent API (these
# views, and the MCP tools at /mcp/) runs the same steps: validated input in, contract JSON out.
# `request` is an authenticated API request (its tenant and key), inside its transaction.

def memory_create(request, subject: str, data: dict) -> dict:
    source_kind = claim_source(request, subject=subject, source_kind=data.get("source"), operation="memory_write")
    draft = MemoryDraft(
        statement=data["statement"], memory_type=data["memory_type"], namespace=data["namespace"],
        source_kind=source_kind, key=data["key"], exact_key=data.get("exact_key", False),
        confidence=data["confidence"], importance=data["importance"], sensitivity=data["sensitivity"],
        valid_from=data.get("valid_from"), expires_at=data.get("expires_at"), metadata=data["metadata"],
    )
    result = memory_write(tenant=request.tenant, subject_ref=subject, draft=draft, actor=api_key_actor(request.api_key))
    return memory_json(memory_written(tenant=request.tenant, subject_ref=subject, memory=result.memory))


def memory_page(request, subject: str, params: dict) -> dict:
    limit = params["limit"]
    memories = memory_list(
        tenant=request.tenant, subject_ref=subject, status=params.get("status"),
        memory_type=params.get("memory_type"), namespace=params.get("namespace"), q=params.get("q"),
        namespace_exact=params.get("namespace_match") == "exact", key=params.get("key"),
        metadata=params.get("metadata"),
    )
    if params.get("cursor"):
        recorded_at, pk = cursor_decode(params["cursor"])
        memories = memories.filter(Q(recorded_at__lt=recorded_at) | Q(recorded_at=recorded_at, id__lt=pk))
    page = list(memories[: limit + 1])
    next_cursor = cursor_encode(page[limit - 1]) if len(page) > limit else None
    page = page[:limit]
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="list",
        memory_ids=[m.pk for m in page], query=params.get("q"),
    )
    return {"results": [memory_json(m) for m in page], "next_cursor": next_cursor}


def memory_correction(request, subject: str, memory_id: str, changes: dict) -> dict:
    changes = dict(changes)
    memory = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=memory_id)
    source_kind = claim_source(request, subject=subject, source_kind=changes.pop("source", None),
                               operation="memory_correct")
    new = memory_correct(tenant=request.tenant, memory=memory, actor=api_key_actor(request.api_key),
                         source_kind=source_kind, **changes)
    new = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=new.public_id)
    return memory_json(new)


def memory_forgetting(request, subject: str, memory_id: str) -> dict:
    memory = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=memory_id)
    job = memory_forget(tenant=request.tenant, memory=memory, actor=api_key_actor(request.api_key))
    return {"job": job.public_id}


def memory_history_answer(request, subject: str, memory_id: str, known_at=None) -> dict:
    history = memory_history(tenant=request.tenant, subject_ref=subject, memory_id=memory_id, known_at=known_at)
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="history",
        memory_ids=[m.pk for m in history["versions"] + history["derived"]],
    )
    return {
        "versions": [{**memory_json(m), "changes": [change_json(c) for c in history["changes"].get(m.pk, [])]}
                     for m in history["versions"]],
        "sources": [event_json(e) for e in history["sources"]],
        "derived": [memory_json(m) for m in history["derived"]],
    }


def change_json(change) -> dict:
    """Extension: one recorded change of a version: when, and what it replaced."""
    return {"changed_at": change.changed_at.isoformat(), "status_before": change.status,
            "valid_to_before": change.valid_to.isoformat() if change.valid_to else None}


class MemoriesView(ApiView):
    @extend_schema(operation_id="memory_write", request=MemoryIn, parameters=[IDEMPOTENCY_KEY],
                   responses={201: MemoryOut, **errors(403, 409, 422)})
    def post(self, request, subject):
        data = self.validated(MemoryIn, request.data)
        return idempotent(request, lambda: (status.HTTP_201_CREATED, memory_create(request, subject, data)))

    @extend_schema(operation_id="memory_list", parameters=[MemoryListIn], responses={200: MemoryPageOut, **errors(403)})
    def get(self, request, subject):
        params = self.validated(MemoryListIn, request.query_params)
        return Response(memory_page(request, subject, params))


class MemoryView(ApiView):
    @extend_schema(operation_id="memory_get", responses={200: MemoryOut, **errors(403, 404)})
    def get(self, request, subject, memory_id):
        memory = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=memory_id)
        read_audit_record(tenant=request.tenant, actor=self.actor(request), subject_ref=subject, operation="get",
                          memory_ids=[memory.pk])
        return Response(memory_json(memory))

    @extend_schema(operation_id="memory_correct", request=MemoryCorrectionIn, parameters=[IDEMPOTENCY_KEY],
                   responses={200: MemoryOut, **errors(403, 404, 409, 422)})
    def patch(self, request, subject, memory_id):
        changes = dict(self.validated(MemoryCorrectionIn, request.data))
        return idempotent(request, lambda: (status.HTTP_200_OK, memory_correction(request, subject, memory_id, changes)))

    @extend_schema(operation_id="memory_forget", request=None, responses={202: JobRefOut, **errors(403, 404)})
    def delete(self, request, subject, memory_id):
        return Response(memory_forgetting(request, subject, memory_id), status=status.HTTP_202_ACCEPTED)


class MemoryHistoryView(ApiView):
    @extend_schema(operation_id="memory_history", parameters=[HistoryIn],
                   responses={200: HistoryOut, **errors(400, 403, 404)})
    def get(self, request, subject, memory_id):
        params = self.validated(HistoryIn, request.query_params)
        return Response(memory_history_answer(request, subject, memory_id, known_at=params.get("known_at")))


class NamespacesView(ApiView):
    """Extension: the namespaces of a subject's current memories (what the LangGraph store's
    list_namespaces reads). Names and counts only, no memory content."""

    @extend_schema(operation_id="namespace_list", parameters=[NamespacesIn],
                   responses={200: NamespacePageOut, **errors(403)})
    def get(self, request, subject):
        params = self.validated(NamespacesIn, request.query_params)
        limit = params["limit"]
        rows = memory_namespaces(tenant=request.tenant, subject_ref=subject, prefix=params.get("prefix"),
                                 after=params.get("cursor"), limit=limit + 1)
        next_cursor = rows[limit - 1]["namespace"] if len(rows) > limit else None
        return Response({
            "namespaces": [{"namespace": r["namespace"], "memories": r["memories"],
                            "last_recorded_at": r["last_recorded_at"].isoformat()} for r in rows[:limit]],
            "next_cursor": next_cursor,
        })
