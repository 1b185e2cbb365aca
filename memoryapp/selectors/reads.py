"""The read audit as people see it: what was read about a person (their own Subject row only,
never a former holder of their id), and what one key read. The query itself was never stored,
only its SHA-256 hash, so no page can show it."""
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from memoryapp.models import ApiKey, Memory, ReadAudit, Subject, Tenant
from memoryapp.tenancy import tenant_activate

API_KEY_ACTOR = "api_key:"


@dataclass
class ReadRow:
    read: ReadAudit
    at: datetime
    operation: str
    reader: str  # who, in words: the key's name, or the console account
    key_prefix: str  # the key's public prefix, "" for a console read
    memories: list  # [(public id, Memory or None when no longer stored)]
    query_hash: str


def subject_reads(*, tenant: Tenant, subject_ref: str) -> QuerySet[ReadAudit]:
    """The reads of the subject that holds `subject_ref` now, newest first."""
    tenant_activate(tenant=tenant)
    subject = Subject.objects.filter(tenant=tenant, external_id=subject_ref, status=Subject.Status.ACTIVE).first()
    if subject is None:
        return ReadAudit.objects.none()
    return ReadAudit.objects.filter(tenant=tenant, subject_row_id=subject.pk).order_by("-created_at", "-id")


def key_reads(*, tenant: Tenant, key: ApiKey) -> QuerySet[ReadAudit]:
    """Every read made with `key` (of the same tenant), newest first."""
    tenant_activate(tenant=tenant)
    return ReadAudit.objects.filter(tenant=tenant, actor=f"{API_KEY_ACTOR}{key.prefix}").order_by("-created_at", "-id")


def api_key_get(*, tenant: Tenant, key_id) -> ApiKey | None:
    tenant_activate(tenant=tenant)
    return ApiKey.objects.filter(tenant=tenant, pk=key_id).first()


def key_names(*, tenant: Tenant, actors) -> dict[str, str]:
    """{"api_key:<prefix>": name} for the keys among `actors` (a revoked key keeps its name)."""
    prefixes = {a[len(API_KEY_ACTOR):] for a in actors if a.startswith(API_KEY_ACTOR)}
    rows = ApiKey.objects.filter(tenant=tenant, prefix__in=prefixes).values_list("prefix", "name")
    return {f"{API_KEY_ACTOR}{prefix}": name for prefix, name in rows}


def read_rows(*, tenant: Tenant, reads, subject_ref: str = "", own_username: str = "") -> list[ReadRow]:
    """`reads` (one page) ready to show: who read, in words, and the memories read, each with its
    row while it is still stored (and, given `subject_ref`, only if it is that subject's)."""
    tenant_activate(tenant=tenant)
    reads = list(reads)
    names = key_names(tenant=tenant, actors={r.actor for r in reads})
    ids = {m for r in reads for m in r.memory_ids}
    memories = Memory.objects.filter(tenant=tenant, pk__in=ids, erasing=False)
    if subject_ref:
        memories = memories.filter(subject__external_id=subject_ref, subject__status=Subject.Status.ACTIVE)
    stored = {m.pk: m for m in memories.only("id", "statement", "status", "subject_id")}
    rows = []
    for r in reads:
        prefix = r.actor[len(API_KEY_ACTOR):] if r.actor.startswith(API_KEY_ACTOR) else ""
        if prefix:
            reader = f"key “{names[r.actor]}”" if names.get(r.actor) else "an unnamed key"
        elif own_username and r.actor == f"user:{own_username}":
            reader = "you, in this console"
        elif r.actor.startswith("user:"):
            reader = f"{r.actor[len('user:'):]}, in the console"
        else:
            reader = r.actor
        rows.append(ReadRow(read=r, at=r.created_at, operation=r.operation, reader=reader, key_prefix=prefix,
                            memories=[(f"mem_{m.hex}", stored.get(m)) for m in r.memory_ids],
                            query_hash=r.query_hash))
    return rows
