"""The person's answer to what an assistant or a tool inferred about them (issue 15, seed 001
§4.2 and §5). An inference is written as a candidate (policy.initial_status); it becomes a fact
only when the person confirms it here, or states the same keyed value themself
(memories.candidate_settle), or the tenant accepts inferences."""
from django.db import transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import Memory, SourceKind, Tenant
from memoryapp.selectors.memories import current_version
from memoryapp.services.audit import audit_record
from memoryapp.services.memories import (
    MemoryDraft, _DatabaseLookup, _write, lock_subject, memory_snapshot,
)
from memoryapp.tenancy import tenant_activate

# What the person's confirmation makes of an inference: their own explicit word.
CONFIRMED_SOURCE = SourceKind.USER_EXPLICIT


def _locked_candidate(*, tenant: Tenant, memory: Memory) -> Memory:
    lock_subject(tenant=tenant, subject_id=memory.subject_id)
    memory = Memory.objects.select_for_update().filter(pk=memory.pk, tenant=tenant, erasing=False).first()
    if memory is None:
        raise NotFound("memory")
    if memory.status != Memory.Status.CANDIDATE:
        raise ApplicationError("not_candidate", "This memory is not an inference waiting for confirmation.",
                               {"status": memory.status}, status=409)
    return memory


@transaction.atomic
def memory_confirm(*, tenant: Tenant, memory: Memory, actor: Actor) -> Memory:
    """The person confirms an inference. It becomes a current fact in the person's name
    (source user_explicit, confidence 1.0), written through the same rules as any write under its
    key (it supersedes what it contradicts, settles the other candidates under the key); the
    candidate stays in history, confirmed, pointing to the fact. Returns the fact."""
    tenant_activate(tenant=tenant)
    candidate = _locked_candidate(tenant=tenant, memory=memory)
    subject = candidate.subject
    draft = MemoryDraft(
        statement=candidate.statement, memory_type=candidate.memory_type, namespace=candidate.namespace,
        source_kind=CONFIRMED_SOURCE, key=candidate.key, confidence=1.0, importance=candidate.importance,
        sensitivity=candidate.sensitivity, valid_from=timezone.now(), expires_at=candidate.expires_at,
        metadata=candidate.metadata, evidence=list(candidate.evidence.all()),
        extractor_version=candidate.extractor_version,
    )
    # An inferred correction names the memory it would replace: confirming it replaces that one.
    replaced = current_version(candidate.proposal_for) if candidate.proposal_for_id else None
    supersede = [replaced] if replaced is not None and replaced.status == Memory.Status.ACTIVE else None
    before = memory_snapshot(candidate)
    # Out of the candidates first, so the write below settles only the others under its key.
    candidate.status, candidate.status_reason = Memory.Status.SUPERSEDED, "confirmed"
    candidate.save(update_fields=["status", "status_reason"])
    result = _write(tenant=tenant, subject=subject, subject_ref=subject.external_id, draft=draft, actor=actor,
                    embedding=candidate.embedding, supersede=supersede, lookup=_DatabaseLookup(), record=audit_record)
    # The fact may be an identical one already current (reinforced) rather than a new row.
    # It was never a fact itself (the confirmed version holds from now): no as_of returns it.
    candidate.valid_to, candidate.superseded_by = candidate.valid_from, result.memory
    candidate.save(update_fields=["valid_to", "superseded_by"])
    audit_record(
        tenant=tenant, actor=actor, action="candidate_confirmed", subject_ref=subject.external_id,
        memory_id=candidate.id, before=before, after=memory_snapshot(candidate),
        details={"by": result.memory.public_id, "via": "confirmation"},
    )
    return result.memory


@transaction.atomic
def memory_reject(*, tenant: Tenant, memory: Memory, actor: Actor) -> Memory:
    """The person rejects an inference: it is never current, and stays in history as rejected."""
    tenant_activate(tenant=tenant)
    candidate = _locked_candidate(tenant=tenant, memory=memory)
    before = memory_snapshot(candidate)
    candidate.status, candidate.status_reason = Memory.Status.REJECTED, "rejected_by_person"
    candidate.valid_to = candidate.valid_from
    candidate.save(update_fields=["status", "status_reason", "valid_to"])
    audit_record(
        tenant=tenant, actor=actor, action="candidate_rejected", subject_ref=candidate.subject.external_id,
        memory_id=candidate.id, before=before, after=memory_snapshot(candidate), details={"via": "rejection"},
    )
    return candidate
