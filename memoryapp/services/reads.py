"""The read audit: which key read which memories, when, for which query and which purpose. The
query is kept only as a SHA-256 hash, and no content at all, so the audit itself never becomes a
copy of memory; the purpose is the caller's own short name for why it read."""
import hashlib

from django.db import transaction
from django.db.models import Subquery

from memoryapp.actors import Actor
from memoryapp.models import ReadAudit, Subject, Tenant
from memoryapp.tenancy import tenant_activate


def query_hash(query: str | None) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest() if query else ""


@transaction.atomic
def read_audit_record(
    *, tenant: Tenant, actor: Actor, subject_ref: str, operation: str, memory_ids, query: str | None = None,
    purpose: str | None = None,
) -> ReadAudit:
    """Record one read (search, context, get, list, history, export; by a key or in the console).
    An empty read is recorded too: that a key looked, and found nothing, is part of the trail.
    The row names the Subject row read (found in the same INSERT), so the person who holds the id
    later, after an erasure, never sees it; a subject being erased, or none, leaves it null."""
    tenant_activate(tenant=tenant)
    subject_row = Subject.objects.filter(tenant=tenant, external_id=subject_ref, status=Subject.Status.ACTIVE)
    return ReadAudit.objects.create(
        tenant=tenant,
        actor=str(actor),
        subject_ref=subject_ref,
        subject_row_id=Subquery(subject_row.values("pk")[:1]),
        operation=operation[:20],
        query_hash=query_hash(query),
        memory_ids=list(memory_ids),
        purpose=(purpose or "")[:64],
    )
