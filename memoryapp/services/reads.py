"""The read audit: which key read which memories, when, for which query and which purpose. The
query is kept only as a SHA-256 hash, and no content at all, so the audit itself never becomes a
copy of memory; the purpose is the caller's own short name for why it read."""
import hashlib

from django.db import transaction

from memoryapp.actors import Actor
from memoryapp.models import ReadAudit, Tenant
from memoryapp.tenancy import tenant_activate


def query_hash(query: str | None) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest() if query else ""


@transaction.atomic
def read_audit_record(
    *, tenant: Tenant, actor: Actor, subject_ref: str, operation: str, memory_ids, query: str | None = None,
    purpose: str | None = None,
) -> ReadAudit:
    """Record one read (search, context, get, list, history, export). An empty read is recorded
    too: that a key looked, and found nothing, is part of the trail."""
    tenant_activate(tenant=tenant)
    return ReadAudit.objects.create(
        tenant=tenant,
        actor=str(actor),
        subject_ref=subject_ref,
        operation=operation[:20],
        query_hash=query_hash(query),
        memory_ids=list(memory_ids),
        purpose=(purpose or "")[:64],
    )
