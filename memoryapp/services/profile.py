"""A subject's profile: its current durable facts and preferences, small and structured, which
the context places first whatever the query (seed 004: semantic memory is "structured, small,
and always loaded").

Computed from the current memories on every call rather than materialised: one indexed query
over a capped set, and it can never be stale after a write, a correction, an expiry or an
erasure (nothing to invalidate, nothing left behind to erase).

Two values of one key from sources of equal authority that disagree are both kept by the write
policy, flagged "conflict" (services/memories.py). The profile states neither: it lists them
under "conflicts", each side with its date and source, until the person settles it.
"""
import uuid
from datetime import datetime
from typing import NamedTuple

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryapp.models import Memory, Subject, Tenant, UNTRUSTED_SOURCES
from memoryapp.readpolicy import AGENT_DEFAULT, ReadPolicy, namespace_chain, policy_q
from memoryapp.tenancy import tenant_activate

PROFILE_LIMIT = 50
CONFLICT_FLAG = "conflict"


class Version(NamedTuple):
    """The columns of a current memory the profile shows and sorts by: read as plain rows, since
    making a Memory of each was a quarter of reading them (a context builds a profile every call)."""

    id: uuid.UUID
    namespace: str
    key: str
    statement: str
    source_kind: str
    confidence: float
    importance: float
    sensitivity: str
    valid_from: datetime
    recorded_at: datetime
    flags: list

    @property
    def public_id(self) -> str:
        return f"mem_{self.id.hex}"


def is_preference(memory: Version) -> bool:
    haystack = f"{memory.namespace} {memory.key}".lower()
    return "prefer" in haystack or "pref:" in haystack or "likes" in haystack


def profile_item(memory: Version) -> dict:
    return {
        "key": memory.key,
        "namespace": memory.namespace,
        "statement": memory.statement,
        "memory_id": memory.public_id,
        "source": memory.source_kind,
        "confidence": memory.confidence,
        "importance": memory.importance,
        "sensitivity": memory.sensitivity,
        "valid_from": memory.valid_from.isoformat(),
    }


def _current(*, tenant: Tenant, subject_ref: str, policy: ReadPolicy, namespace: str | None):
    """The subject's current keyed semantic memories the read may see: one query, the subject
    found by its id inside it (none for an unknown subject or one being erased)."""
    now = timezone.now()
    current = (
        Memory.objects.filter(
            tenant=tenant, subject__tenant=tenant, subject__external_id=subject_ref,
            subject__status=Subject.Status.ACTIVE, memory_type=Memory.Type.SEMANTIC, status=Memory.Status.ACTIVE,
            erasing=False, valid_from__lte=now,
        )
        .exclude(key="")
        .exclude(source_kind__in=list(UNTRUSTED_SOURCES))
        .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now))
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .filter(policy_q(policy))
    )
    below = (namespace or "").strip("/")
    if below:  # working at the top level, every namespace is at or below it
        current = current.filter(Q(namespace__in=namespace_chain(namespace)) | Q(namespace__startswith=below + "/"))
    # Only what the profile shows (never the vectors: most of a row's bytes, each a parse into
    # 384 floats).
    return current.order_by("namespace", "key", "-valid_from", "-recorded_at").values_list(*Version._fields)


def _groups(rows, *, namespace: str | None) -> list[list[Version]]:
    """The current versions per fact, newest first. A fact is (namespace, key); working in a
    namespace it is the key alone, held by the narrowest namespace of the chain that has a
    version of it (readpolicy.narrowest_sql: the same rule for search)."""
    groups: dict[tuple, list[Version]] = {}
    for row in rows:
        memory = Version._make(row)
        groups.setdefault((memory.namespace, memory.key), []).append(memory)
    if namespace is None:
        return list(groups.values())
    # Per key: the narrowest version in the chain; only without one, those below the namespace.
    chain = set(namespace_chain(namespace))
    narrowest: dict[str, list[Version]] = {}
    below: dict[str, list[list[Version]]] = {}
    for (ns, key), versions in groups.items():
        if ns not in chain:
            below.setdefault(key, []).append(versions)
        elif key not in narrowest or len(ns) > len(narrowest[key][0].namespace):
            narrowest[key] = versions
    return [*narrowest.values(), *(v for key, lists in below.items() if key not in narrowest for v in lists)]


@transaction.atomic
def profile_get(*, tenant: Tenant, subject_ref: str, limit: int = PROFILE_LIMIT, policy: ReadPolicy = AGENT_DEFAULT,
                namespace: str | None = None) -> dict:
    """The profile (profile_build), the tenant bound first. Atomic so it can bind the tenant
    wherever it is called (inside a request's transaction it is a cheap savepoint)."""
    tenant_activate(tenant=tenant)
    return profile_build(tenant=tenant, subject_ref=subject_ref, limit=limit, policy=policy, namespace=namespace)


def profile_empty(*, subject_ref: str, namespace: str | None = None) -> dict:
    return {"subject": subject_ref, "namespace": namespace, "facts": [], "preferences": [], "conflicts": [],
            "updated_at": None}


def profile_build(*, tenant: Tenant, subject_ref: str, limit: int = PROFILE_LIMIT, policy: ReadPolicy = AGENT_DEFAULT,
                  namespace: str | None = None) -> dict:
    """{"subject", "namespace", "facts", "preferences", "conflicts", "updated_at"}: for each fact
    (see _groups) its newest current semantic version, most important first; a fact whose
    current versions are in conflict goes to "conflicts" with all of them instead. `policy`
    leaves out what the read may not see (readpolicy.py). Unknown subjects, and subjects being
    erased, have an empty profile. Assumes the transaction is bound to `tenant` (the context
    calls it right after the search bound it): one query."""
    profile = profile_empty(subject_ref=subject_ref, namespace=namespace)
    groups = _groups(_current(tenant=tenant, subject_ref=subject_ref, policy=policy, namespace=namespace),
                     namespace=namespace)
    groups.sort(key=lambda g: (-max(m.importance for m in g), -g[0].confidence, g[0].namespace, g[0].key))
    groups = groups[:limit]
    for versions in groups:
        newest = versions[0]
        # Two current versions of one fact, one of them flagged, is an open conflict; a flag left
        # on the only current version (the other side was corrected away) is settled.
        if len(versions) > 1 and any(CONFLICT_FLAG in (m.flags or []) for m in versions):
            profile["conflicts"].append({"key": newest.key, "namespace": newest.namespace,
                                         "versions": [profile_item(m) for m in versions]})
        else:
            # Several current versions and no flag: the person kept them all as true together.
            for memory in versions:
                profile["preferences" if is_preference(memory) else "facts"].append(profile_item(memory))
    if groups:
        profile["updated_at"] = max(m.recorded_at for g in groups for m in g).isoformat()
    return profile


def profile_memory_ids(profile: dict) -> list[uuid.UUID]:
    """The ids of every memory a profile shows (for the read audit)."""
    ids = [item["memory_id"] for item in profile["facts"] + profile["preferences"]]
    ids += [v["memory_id"] for c in profile["conflicts"] for v in c["versions"]]
    return [uuid.UUID(public_id.removeprefix("mem_")) for public_id in ids]


def profile_rebuild(*, tenant: Tenant, subject_ref: str) -> dict:
    """The profile is computed, never stored, so rebuilding is reading it afresh."""
    return profile_get(tenant=tenant, subject_ref=subject_ref)
