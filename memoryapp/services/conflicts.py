"""The person settles a conflict (seed 001 §7): keep one of the disagreeing facts, keep them all
as true, or replace them with a correct statement. Each resolution is audited and the conflict
flag is cleared on what remains."""
from django.db import transaction
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import Memory, SourceKind, Tenant
from memoryapp.selectors.conflicts import CONFLICT_FLAG, Conflict, conflict_get
from memoryapp.selectors.memories import subject_find
from memoryapp.services.audit import audit_record
from memoryapp.services.memories import (
    MemoryDraft, _DatabaseLookup, _write, lock_subject, memory_snapshot, policy_check,
)
from memoryapp.tenancy import tenant_activate

KEEP, KEEP_ALL, CORRECT = "keep", "keep_all", "correct"
RESOLUTIONS = (KEEP, KEEP_ALL, CORRECT)


def conflict_resolve(*, tenant: Tenant, subject_ref: str, conflict_id: str, resolution: str, actor: Actor,
                     memory_id: str | None = None, statement: str | None = None) -> list[Memory]:
    """Settle one conflict; returns the memories current under its key afterwards.

    - keep (`memory_id`): that memory stays; the others are retired as claims that never held
      (status_reason "conflict_resolved").
    - keep_all: every one stays, as true together (the flag is cleared).
    - correct (`statement`): a new fact in the person's name replaces them all.
    """
    if resolution not in RESOLUTIONS:
        raise ApplicationError("invalid_request", "Unknown resolution.",
                               {"resolution": [f"One of {list(RESOLUTIONS)}."]})
    if resolution == KEEP and not memory_id:
        raise ApplicationError("invalid_request", "Name the memory to keep.", {"memory_id": ["Required to keep one."]})
    if resolution == CORRECT and not (statement or "").strip():
        raise ApplicationError("invalid_request", "Send the correct statement.",
                               {"statement": ["Required to correct."]})
    vector = None
    if resolution == CORRECT:
        probe = MemoryDraft(statement=statement, source_kind=SourceKind.USER_EXPLICIT)
        policy_check(tenant=tenant, subject_ref=subject_ref, draft=probe, actor=actor)
        vector = embeddings.embed_text(statement, partition=tenant.pk)
    return _conflict_resolve(tenant=tenant, subject_ref=subject_ref, conflict_id=conflict_id, resolution=resolution,
                             actor=actor, memory_id=memory_id, statement=statement, vector=vector)


def _retire_others(*, tenant, members, kept, actor, subject_ref, conflict) -> list[Memory]:
    """The person said `kept` is right: the others are claims that never held."""
    retired = []
    for other in members:
        if other.pk == kept.pk:
            continue
        before = memory_snapshot(other)
        other.status, other.status_reason = Memory.Status.SUPERSEDED, "conflict_resolved"
        other.valid_to, other.superseded_by = other.valid_from, kept
        other.save(update_fields=["status", "status_reason", "valid_to", "superseded_by"])
        retired.append(other)
        audit_record(tenant=tenant, actor=actor, action="memory_superseded", subject_ref=subject_ref,
                     memory_id=other.id, before=before, after=memory_snapshot(other),
                     details={"superseded_by": kept.public_id, "conflict": conflict.id})
    return retired


@transaction.atomic
def _conflict_resolve(*, tenant, subject_ref, conflict_id, resolution, actor, memory_id, statement, vector):
    tenant_activate(tenant=tenant)
    # An unknown subject answers like an unknown conflict: nothing tells whether the subject exists.
    subject = subject_find(tenant=tenant, external_id=subject_ref)
    if subject is None:
        raise NotFound("conflict")
    lock_subject(tenant=tenant, subject_id=subject.pk)
    conflict: Conflict = conflict_get(tenant=tenant, subject_ref=subject_ref, conflict_id=conflict_id)
    members = list(Memory.objects.select_for_update().filter(
        tenant=tenant, pk__in=[m.pk for m in conflict.memories], status=Memory.Status.ACTIVE, erasing=False,
    ).order_by("valid_from", "recorded_at", "id"))
    now = timezone.now()
    retired: list[Memory] = []
    new: Memory | None = None
    if resolution == KEEP:
        kept = next((m for m in members if m.public_id == memory_id), None)
        if kept is None:
            raise ApplicationError("invalid_request", "That memory is not one of this conflict's.",
                                   {"memory_id": ["Not one of this conflict's memories."]})
        retired = _retire_others(tenant=tenant, members=members, kept=kept, actor=actor, subject_ref=subject_ref,
                                 conflict=conflict)
    elif resolution == CORRECT:
        draft = MemoryDraft(statement=statement, namespace=conflict.namespace, key=conflict.key,
                            source_kind=SourceKind.USER_EXPLICIT, valid_from=now)
        result = _write(tenant=tenant, subject=subject, subject_ref=subject_ref, draft=draft, actor=actor,
                        embedding=vector, supersede=members, lookup=_DatabaseLookup(), record=audit_record)
        new = result.memory
        if result.created:
            retired = [m for m in members if m.pk != new.pk]
        else:
            # The correct statement is one of them word for word: that one is kept.
            retired = _retire_others(tenant=tenant, members=members, kept=new, actor=actor, subject_ref=subject_ref,
                                     conflict=conflict)
    remaining = list(Memory.objects.filter(
        tenant=tenant, subject=subject, namespace=conflict.namespace, key=conflict.key,
        status=Memory.Status.ACTIVE, erasing=False,
    ).order_by("valid_from", "recorded_at", "id"))
    for memory in remaining:
        if CONFLICT_FLAG in memory.flags:
            memory.flags = [f for f in memory.flags if f != CONFLICT_FLAG]
            memory.save(update_fields=["flags"])
    audit_record(
        tenant=tenant, actor=actor, action="conflict_resolved", subject_ref=subject_ref, target=conflict.id,
        details={"resolution": resolution, "key": conflict.key, "namespace": conflict.namespace,
                 "memories": [m.public_id for m in conflict.memories], "retired": [m.public_id for m in retired],
                 "kept": [m.public_id for m in remaining], "new": new.public_id if new else None},
    )
    return remaining
