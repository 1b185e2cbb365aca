"""Extensions of issue 15: the person's answers to what was inferred about them (confirm,
reject) and to facts that disagree (conflicts). Each is the person's word, so the key must be
allowed to claim user_explicit (403 source_not_allowed otherwise)."""
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.authentication import claim_source
from api.representations import memory_json
from api.schemas import ConflictListOut, ConflictResolvedOut, MemoryOut, errors
from api.serializers import ConflictResolveIn
from api.views.base import ApiView
from memoryapp.models import SourceKind
from memoryapp.selectors.conflicts import conflicts_list
from memoryapp.selectors.memories import memory_get
from memoryapp.services.candidates import memory_confirm, memory_reject
from memoryapp.services.conflicts import conflict_resolve
from memoryapp.services.reads import read_audit_record


def _as_person(request, subject: str, operation: str) -> None:
    claim_source(request, subject=subject, source_kind=SourceKind.USER_EXPLICIT, operation=operation)


class MemoryConfirmView(ApiView):
    @extend_schema(operation_id="memory_confirm", request=None, responses={200: MemoryOut, **errors(403, 404, 409)},
                   description="The person confirms an inference (status candidate): answers the current fact it "
                               "became, in the person's name.")
    def post(self, request, subject, memory_id):
        memory = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=memory_id)
        _as_person(request, subject, "memory_confirm")
        fact = memory_confirm(tenant=request.tenant, memory=memory, actor=self.actor(request))
        return Response(memory_json(memory_get(tenant=request.tenant, subject_ref=subject, memory_id=fact.public_id)))


class MemoryRejectView(ApiView):
    @extend_schema(operation_id="memory_reject", request=None, responses={200: MemoryOut, **errors(403, 404, 409)},
                   description="The person rejects an inference (status candidate): it becomes rejected.")
    def post(self, request, subject, memory_id):
        memory = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=memory_id)
        _as_person(request, subject, "memory_reject")
        memory_reject(tenant=request.tenant, memory=memory, actor=self.actor(request))
        return Response(memory_json(memory_get(tenant=request.tenant, subject_ref=subject, memory_id=memory_id)))


def conflict_json(conflict) -> dict:
    return {"id": conflict.id, "namespace": conflict.namespace, "key": conflict.key,
            "memories": [memory_json(m) for m in conflict.memories]}


class ConflictsView(ApiView):
    @extend_schema(operation_id="conflict_list", responses={200: ConflictListOut, **errors(403)})
    def get(self, request, subject):
        conflicts = conflicts_list(tenant=request.tenant, subject_ref=subject)
        read_audit_record(tenant=request.tenant, actor=self.actor(request), subject_ref=subject,
                          operation="conflicts", memory_ids=[m.pk for c in conflicts for m in c.memories])
        return Response({"conflicts": [conflict_json(c) for c in conflicts]})


class ConflictResolveView(ApiView):
    @extend_schema(operation_id="conflict_resolve", request=ConflictResolveIn,
                   responses={200: ConflictResolvedOut, **errors(403, 404, 422)})
    def post(self, request, subject, conflict_id):
        data = self.validated(ConflictResolveIn, request.data)
        _as_person(request, subject, "conflict_resolve")
        remaining = conflict_resolve(
            tenant=request.tenant, subject_ref=subject, conflict_id=conflict_id, resolution=data["resolution"],
            memory_id=data.get("memory_id"), statement=data.get("statement"), actor=self.actor(request),
        )
        current = [memory_get(tenant=request.tenant, subject_ref=subject, memory_id=m.public_id) for m in remaining]
        return Response({"conflict": conflict_id, "resolution": data["resolution"],
                         "memories": [memory_json(m) for m in current]})
