"""Reads for doors that name a memory by its id alone (the mem0 routes: `GET /v1/memories/{id}/`),
without the subject in the path. Same rules as memory_get: the tenant first, the key's subject
when it is bound to one, and one 404 for missing, foreign and malformed ids."""
from django.db.models import Count, Q

from memoryapp.errors import NotFound
from memoryapp.models import Event, Memory, Subject, Tenant
from memoryapp.selectors.memories import memory_queryset, parse_public_id
from memoryapp.tenancy import tenant_activate

# A chain is short (one version per correction); the bound only guards against a cycle.
MAX_CHAIN = 1000


def memory_find(*, tenant: Tenant, memory_id: str, subject_ref: str = "") -> Memory:
    """The memory `memory_id` of any of the tenant's subjects, or only of `subject_ref` when
    given (a subject-bound key): another subject's id answers the same 404 as an unknown one."""
    pk = parse_public_id(memory_id, "mem")
    memory = None
    if pk is not None:
        qs = memory_queryset(tenant=tenant).filter(pk=pk)
        if subject_ref:
            qs = qs.filter(subject__external_id=subject_ref)
        memory = qs.first()
    if memory is None:
        raise NotFound("memory")
    return memory


def memory_find_current(*, tenant: Tenant, memory_id: str, subject_ref: str = "") -> Memory:
    """The version of `memory_id`'s chain that holds now: any id of a chain names its current
    version. A successor that is not visible (being forgotten) ends the chain as not found."""
    memory = memory_find(tenant=tenant, memory_id=memory_id, subject_ref=subject_ref)
    for _ in range(MAX_CHAIN):
        if not memory.superseded_by_id:
            return memory
        nxt = memory_queryset(tenant=tenant).filter(pk=memory.superseded_by_id, subject_id=memory.subject_id).first()
        if nxt is None:
            raise NotFound("memory")
        memory = nxt
    return memory


def event_metadata(*, tenant: Tenant, event_ids) -> dict:
    """The metadata of the events `event_ids` (by pk), in one query: search hits load events
    without it."""
    ids = [i for i in set(event_ids) if i is not None]
    if not ids:
        return {}
    tenant_activate(tenant=tenant)
    return dict(Event.objects.filter(tenant=tenant, pk__in=ids, erasing=False).values_list("id", "metadata"))


def subjects_overview(*, tenant: Tenant, subject_ref: str = "") -> list[Subject]:
    """The tenant's active subjects (only `subject_ref` when given), oldest first, each with
    `total_memories`: its active memories."""
    tenant_activate(tenant=tenant)
    qs = Subject.objects.filter(tenant=tenant, status=Subject.Status.ACTIVE)
    if subject_ref:
        qs = qs.filter(external_id=subject_ref)
    return list(
        qs.annotate(total_memories=Count(
            "memories", filter=Q(memories__status=Memory.Status.ACTIVE, memories__erasing=False),
        )).order_by("created_at", "id")
    )
