"""A subject's profile: its current durable facts and preferences, small and structured, for
the context endpoint to place first.

Computed from the current memories on every call rather than materialised: one indexed query
over a capped set, and it can never be stale after a write, a correction, an expiry or an
erasure (nothing to invalidate, nothing left behind to erase).
"""
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryapp.models import Memory, Tenant, UNTRUSTED_SOURCES
from memoryapp.selectors.memories import subject_find
from memoryapp.tenancy import tenant_activate

PROFILE_LIMIT = 50


def is_preference(memory: Memory) -> bool:
    haystack = f"{memory.namespace} {memory.key}".lower()
    return "prefer" in haystack or "pref:" in haystack or "likes" in haystack


@transaction.atomic
def profile_get(*, tenant: Tenant, subject_ref: str, limit: int = PROFILE_LIMIT) -> dict:
    """{"subject", "facts": [...], "preferences": [...], "updated_at"}: for each (namespace, key)
    the newest current semantic memory, most important first. Unknown subjects, and subjects
    being erased, have an empty profile. Atomic so it can bind the tenant wherever it is called
    (inside a request's transaction it is a cheap savepoint)."""
    tenant_activate(tenant=tenant)
    profile = {"subject": subject_ref, "facts": [], "preferences": [], "updated_at": None}
    subject = subject_find(tenant=tenant, external_id=subject_ref)
    if subject is None:
        return profile
    now = timezone.now()
    current = (
        Memory.objects.filter(
            tenant=tenant, subject=subject, memory_type=Memory.Type.SEMANTIC, status=Memory.Status.ACTIVE,
            erasing=False, valid_from__lte=now,
        )
        .exclude(key="")
        .exclude(source_kind__in=list(UNTRUSTED_SOURCES))
        .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now))
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        # DISTINCT ON keeps the first row of each (namespace, key): the newest.
        .order_by("namespace", "key", "-valid_from", "-recorded_at")
        .distinct("namespace", "key")
    )
    entries = sorted(current, key=lambda m: (-m.importance, -m.confidence, m.namespace, m.key))[:limit]
    for memory in entries:
        item = {
            "key": memory.key,
            "namespace": memory.namespace,
            "statement": memory.statement,
            "memory_id": memory.public_id,
            "source": memory.source_kind,
            "confidence": memory.confidence,
            "importance": memory.importance,
            "valid_from": memory.valid_from.isoformat(),
        }
        profile["preferences" if is_preference(memory) else "facts"].append(item)
    if entries:
        profile["updated_at"] = max(m.recorded_at for m in entries).isoformat()
    return profile


def profile_rebuild(*, tenant: Tenant, subject_ref: str) -> dict:
    """The profile is computed, never stored, so rebuilding is reading it afresh."""
    return profile_get(tenant=tenant, subject_ref=subject_ref)
