"""Making an earlier version of a memory the current one again. Nothing is overwritten or
reopened: the earlier statement comes back as a new version that supersedes the one holding
now, so the history reads in order and every step is in the audit log."""
from django.db import transaction

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError
from memoryapp.models import Memory, Tenant
from memoryapp.selectors.memories import current_version
from memoryapp.services.audit import audit_record
from memoryapp.services.memories import MemoryDraft, _memory_supersede, policy_check
from memoryapp.tenancy import tenant_activate

RESTORABLE_FROM = (Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL)


def memory_restore(*, tenant: Tenant, memory: Memory, actor: Actor) -> Memory:
    """A new version carrying `memory`'s statement (an earlier, superseded version), superseding
    the version of its chain that holds now, as the person's own statement. A procedure's
    restored version waits for approval like any change to a procedure.

    The policy check runs first, outside the write's transaction (policy_check says why); the
    write, its supersession and the `memory_restored` entry are one transaction."""
    if memory.status != Memory.Status.SUPERSEDED or memory.erasing:
        raise ApplicationError("not_an_earlier_version", "Only an earlier version can be made current again.",
                               {"status": memory.status}, status=409)
    draft = MemoryDraft(
        statement=memory.statement, memory_type=memory.memory_type, namespace=memory.namespace,
        source_kind="user_explicit", key=memory.key, confidence=1.0, importance=memory.importance,
        sensitivity=memory.sensitivity, metadata=dict(memory.metadata or {}),
        # Its reasons come back with it, so forgetting the restored version forgets them too.
        evidence=list(memory.evidence.all()),
    )
    policy_check(tenant=tenant, subject_ref=memory.subject.external_id, draft=draft, actor=actor)
    vector = memory.embedding if memory.embedding is not None else embeddings.embed_text(draft.statement, partition=tenant.pk)
    return _restore(tenant=tenant, memory=memory, draft=draft, actor=actor, vector=vector)


@transaction.atomic
def _restore(*, tenant: Tenant, memory: Memory, draft: MemoryDraft, actor: Actor, vector) -> Memory:
    tenant_activate(tenant=tenant)
    current = current_version(memory)
    if current.pk == memory.pk or current.erasing or current.status not in RESTORABLE_FROM \
            or current.memory_type != memory.memory_type:
        raise ApplicationError("no_current_version", "There is no current version for this one to replace.",
                               {"status": current.status}, status=409)
    new = _memory_supersede(tenant=tenant, memory=current, draft=draft, actor=actor, action="memory_restored",
                            vector=vector)
    audit_record(
        tenant=tenant, actor=actor, action="memory_version_restored", subject_ref=memory.subject.external_id,
        memory_id=new.id, details={"restored_from": memory.public_id, "replaced": current.public_id,
                                   "new_version": new.public_id, "status": new.status},
    )
    return new
