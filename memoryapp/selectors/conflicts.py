"""Conflicts: current facts of equal authority that disagree under one key (memory_write keeps
both and flags them "conflict"), for the person to settle (services/conflicts.py)."""
import hashlib
from dataclasses import dataclass

from memoryapp.errors import NotFound
from memoryapp.models import Memory, Tenant
from memoryapp.selectors.memories import memory_queryset

CONFLICT_FLAG = "conflict"
# The admin's queue shows at most this many, oldest first.
ADMIN_LIMIT = 200


@dataclass
class Conflict:
    id: str
    subject_ref: str
    namespace: str
    key: str
    memories: list[Memory]  # the disagreeing current memories, oldest first


def conflict_id(*, subject_id: int, namespace: str, key: str) -> str:
    """Stable while the conflict lasts and meaningless outside its subject: derived from the
    subject row, namespace and key, so it names no content and cannot be guessed across subjects."""
    digest = hashlib.sha256(f"{subject_id}\x00{namespace}\x00{key}".encode()).hexdigest()
    return f"cfl_{digest[:32]}"


def conflicts_list(*, tenant: Tenant, subject_ref: str | None = None, limit: int = ADMIN_LIMIT) -> list[Conflict]:
    """The open conflicts of one subject, or (subject_ref None, for the tenant's admin) of all its
    subjects. A conflict is a key whose current memories include a flagged one and number at
    least two: a flag left on a lone survivor is no longer a disagreement."""
    current = memory_queryset(tenant=tenant).filter(status=Memory.Status.ACTIVE).exclude(key="")
    if subject_ref is not None:
        current = current.filter(subject__external_id=subject_ref)
    flagged = set(current.filter(flags__contains=[CONFLICT_FLAG]).values_list("subject_id", "namespace", "key")
                  .distinct()[:limit])
    if not flagged:
        return []
    members = current.filter(subject_id__in={s for s, _, _ in flagged}, key__in={k for _, _, k in flagged})
    groups: dict[tuple, list[Memory]] = {}
    for memory in members.order_by("valid_from", "recorded_at", "id"):
        group = (memory.subject_id, memory.namespace, memory.key)
        if group in flagged:
            groups.setdefault(group, []).append(memory)
    conflicts = [
        Conflict(id=conflict_id(subject_id=s, namespace=ns, key=k), subject_ref=found[0].subject.external_id,
                 namespace=ns, key=k, memories=found)
        for (s, ns, k), found in groups.items() if len(found) >= 2
    ]
    return sorted(conflicts, key=lambda c: c.memories[0].recorded_at)


def conflict_get(*, tenant: Tenant, subject_ref: str, conflict_id: str) -> Conflict:
    """One open conflict of one subject; missing, settled and foreign ids all answer the same 404."""
    found = next((c for c in conflicts_list(tenant=tenant, subject_ref=subject_ref) if c.id == conflict_id), None)
    if found is None:
        raise NotFound("conflict")
    return found
