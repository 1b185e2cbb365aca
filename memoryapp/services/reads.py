"""The read audit: which key read which memories, when, for which query and which purpose. The
query is kept only as a SHA-256 hash, and no content at all, so the audit itself never becomes a
copy of memory; the purpose is the caller's own short name for why it read."""
import hashlib

from django.db import transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.models import Tenant
from memoryapp.services.accesses import ACCESS_OPERATIONS
from memoryapp.tenancy import tenant_activate_and_query


def query_hash(query: str | None) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest() if query else ""


# The row and the tenant binding in one round trip (a search is a handful of them; each one on
# a busy machine waits to be scheduled). The subject row is found inside the INSERT.
_INSERT = """
INSERT INTO memoryapp_readaudit (tenant_id, actor, subject_ref, subject_row_id, operation, query_hash, memory_ids,
                                 purpose, created_at, accesses_counted)
VALUES (%(tenant)s, %(actor)s, %(subject_ref)s,
        (SELECT s.id FROM memoryapp_subject s
         WHERE s.tenant_id = %(tenant)s AND s.external_id = %(subject_ref)s AND s.status = 'active' LIMIT 1),
        %(operation)s, %(query_hash)s, %(memory_ids)s::uuid[], %(purpose)s, %(created_at)s, %(counted)s)
"""


# Part of the caller's transaction when there is one (every read is): no savepoint of its own,
# which cost two round trips per search for nothing; if the INSERT fails, the read fails with it.
@transaction.atomic(savepoint=False)
def read_audit_record(
    *, tenant: Tenant, actor: Actor, subject_ref: str, operation: str, memory_ids, query: str | None = None,
    purpose: str | None = None,
) -> None:
    """Record one read (search, context, get, list, history, export; by a key or in the console).
    An empty read is recorded too: that a key looked, and found nothing, is part of the trail.
    The row names the Subject row read (found in the same INSERT), so the person who holds the id
    later, after an erasure, never sees it; a subject being erased, or none, leaves it null."""
    tenant_activate_and_query(tenant=tenant, sql=_INSERT + " RETURNING id", params={
        "tenant": tenant.pk, "actor": str(actor), "subject_ref": subject_ref, "operation": operation[:20],
        "query_hash": query_hash(query), "memory_ids": [str(i) for i in memory_ids],
        "purpose": (purpose or "")[:64], "created_at": timezone.now(),
        # A read that recalls (search, context) waits for the worker to add it to the access
        # counts; any other counts nothing, so it is born counted.
        "counted": operation not in ACCESS_OPERATIONS,
    })
