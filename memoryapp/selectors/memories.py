"""Reads. Every selector takes `tenant=` first and filters on it before anything else, on top
of the row-level security the database applies anyway."""
import uuid
from datetime import datetime

from django.db.models import Count, Max, Prefetch, Q, QuerySet
from django.utils import timezone

from memoryapp.errors import NotFound
from memoryapp.models import Event, Job, Memory, MemoryChange, Subject, Tenant
from memoryapp.selectors.hits import memories_for_hits
from memoryapp.tenancy import tenant_activate, tenant_activate_and_query

VISIBLE_STATUSES = [
    Memory.Status.ACTIVE, Memory.Status.SUPERSEDED, Memory.Status.EXPIRED,
    Memory.Status.PENDING_APPROVAL, Memory.Status.REJECTED,
]
# Held back from every agent and from the person's own pages until an admin releases the event
# (the admin's quarantine page shows the events themselves).
HIDDEN_STATUSES = [Memory.Status.QUARANTINED]


def parse_public_id(value: str, prefix: str) -> uuid.UUID | None:
    if not isinstance(value, str) or not value.startswith(prefix + "_"):
        return None
    try:
        return uuid.UUID(hex=value[len(prefix) + 1:])
    except ValueError:
        return None


def subject_get(*, tenant: Tenant, external_id: str) -> Subject:
    tenant_activate(tenant=tenant)
    subject = Subject.objects.filter(tenant=tenant, external_id=external_id).first()
    if subject is None or subject.status == Subject.Status.ERASING:
        raise NotFound("subject")
    return subject


def subject_find(*, tenant: Tenant, external_id: str) -> Subject | None:
    """The subject if it exists and is not being erased; None otherwise (an empty answer)."""
    try:
        return subject_get(tenant=tenant, external_id=external_id)
    except NotFound:
        return None


def subject_speaker_words(*, tenant: Tenant, subject_ref: str) -> frozenset:
    """The lower-cased words of the names of the people who speak in the subject's events (empty
    for a missing subject or one being erased). One round trip, tenant binding included."""
    rows = tenant_activate_and_query(
        tenant=tenant,
        sql="SELECT speakers FROM memoryapp_subject WHERE tenant_id = %(tenant)s AND external_id = %(ref)s"
            " AND status = 'active'",
        params={"tenant": tenant.pk, "ref": subject_ref},
    )
    return frozenset(word for name in (rows[0][0] if rows else ()) for word in name.lower().split())


def memory_queryset(*, tenant: Tenant) -> QuerySet[Memory]:
    tenant_activate(tenant=tenant)
    return (
        # A subject being erased is gone for every reader, whatever state its rows are in.
        Memory.objects.filter(tenant=tenant, erasing=False, subject__status=Subject.Status.ACTIVE)
        .exclude(status__in=HIDDEN_STATUSES)
        .select_related("subject", "source_event", "superseded_by")
        .prefetch_related(
            # Fixed orders (events as they happened, versions and sources as recorded), the same
            # as selectors/hits.py loads them for search, so a memory reads alike on every path.
            Prefetch("evidence", queryset=Event.objects.only("id", "event_id").order_by("seq", "id")),
            Prefetch("supersedes", queryset=Memory.objects.only("id", "superseded_by_id").order_by("recorded_at", "id")),
            Prefetch("derived_from", queryset=Memory.objects.only("id").order_by("recorded_at", "id")),
        )
    )


def memory_get(*, tenant: Tenant, subject_ref: str, memory_id: str) -> Memory:
    """One memory of one subject; missing, foreign and malformed ids all answer the same 404."""
    pk = parse_public_id(memory_id, "mem")
    memory = None
    if pk is not None:
        memory = memory_queryset(tenant=tenant).filter(subject__external_id=subject_ref, pk=pk).first()
    if memory is None:
        raise NotFound("memory")
    return memory


def memory_written(*, tenant: Tenant, subject_ref: str, memory: Memory) -> Memory:
    """The memory a write just stored (or reinforced), read back as memory_get reads it, with
    the same 404 for what memory_get would not show, in one statement instead of five (and no
    ORM query to compile): selectors/hits.py's loader. For answering, not for changing: the
    vectors are deferred. Assumes the write's transaction, already bound to `tenant` (unbound,
    row-level security finds nothing: a 404, never another tenant's row)."""
    found = memories_for_hits(tenant=tenant, ids=[memory.pk]).get(memory.pk)
    if found is None or found.status in HIDDEN_STATUSES or found.subject.external_id != subject_ref:
        raise NotFound("memory")
    return found


def memory_list(
    *, tenant: Tenant, subject_ref: str, status: str | None = None, memory_type: str | None = None,
    namespace: str | None = None, q: str | None = None, source_kind: str | None = None,
    namespace_exact: bool = False, key: str | None = None, metadata: dict | None = None,
) -> QuerySet[Memory]:
    """Newest first. `namespace` matches the namespace and everything below it, or with
    `namespace_exact` only itself (an empty or absent one: the top level). `metadata` is JSON
    containment (jsonb @>)."""
    qs = memory_queryset(tenant=tenant).filter(subject__external_id=subject_ref, subject__status="active")
    if status:
        qs = qs.filter(status=status)
    if memory_type:
        qs = qs.filter(memory_type=memory_type)
    if namespace_exact:
        qs = qs.filter(namespace=(namespace or "").strip("/"))
    elif namespace:
        qs = qs.filter(Q(namespace=namespace) | Q(namespace__startswith=namespace.rstrip("/") + "/"))
    if key is not None:
        qs = qs.filter(key=key)
    if metadata:
        qs = qs.filter(metadata__contains=metadata)
    if source_kind:
        qs = qs.filter(source_kind=source_kind)
    if q:
        qs = qs.filter(statement__icontains=q)
    return qs.order_by("-recorded_at", "-id")


def memory_namespaces(
    *, tenant: Tenant, subject_ref: str, prefix: str | None = None, after: str | None = None, limit: int = 500,
) -> list[dict]:
    """The namespaces that hold the subject's active memories, in order, each with its count:
    `prefix` keeps a namespace and everything below it; `after` starts past that namespace."""
    qs = memory_list(tenant=tenant, subject_ref=subject_ref, status=Memory.Status.ACTIVE, namespace=prefix)
    if after is not None:
        qs = qs.filter(namespace__gt=after)
    rows = (
        qs.order_by().values("namespace").annotate(memories=Count("id"), last_recorded_at=Max("recorded_at"))
        .order_by("namespace")[:limit]
    )
    return list(rows)


def memory_versions(*, memory: Memory) -> list[Memory]:
    """The whole supersession chain this memory belongs to, oldest first."""
    seen: dict = {memory.pk: memory}
    frontier = [memory]
    while frontier:
        ids = [m.pk for m in frontier]
        linked = list(
            Memory.objects.filter(tenant_id=memory.tenant_id, erasing=False)
            .filter(Q(superseded_by_id__in=ids) | Q(supersedes__id__in=ids))
            .distinct()
        )
        frontier = [m for m in linked if m.pk not in seen]
        for m in frontier:
            seen[m.pk] = m
    return sorted(seen.values(), key=lambda m: (m.valid_from, m.recorded_at))


def memory_history(*, tenant: Tenant, subject_ref: str, memory_id: str, known_at: datetime | None = None) -> dict:
    """The memory's versions, sources and derivatives, with each version's recorded changes
    (`changes`: {pk: [MemoryChange]}, oldest first). With `known_at`: only the versions recorded
    by then, each in the state it had then (status, valid_to, successor), and the changes up to then."""
    memory = memory_get(tenant=tenant, subject_ref=subject_ref, memory_id=memory_id)
    versions = memory_versions(memory=memory)
    version_ids = [v.pk for v in versions]
    versions = list(memory_queryset(tenant=tenant).filter(pk__in=version_ids).order_by("valid_from", "recorded_at"))
    changes = {v.pk: [] for v in versions}
    for change in MemoryChange.objects.filter(tenant=tenant, memory_id__in=changes).order_by("changed_at", "id"):
        changes[change.memory_id].append(change)
    if known_at is not None:
        versions = [version_as_known(v, changes[v.pk], known_at) for v in versions if v.recorded_at <= known_at]
        changes = {pk: [c for c in found if c.changed_at <= known_at] for pk, found in changes.items()}
    sources = list(
        Event.objects.filter(tenant=tenant, evidence_links__memory_id__in=version_ids, erasing=False).distinct()
        .order_by("occurred_at", "seq")
    )
    derived = list(
        memory_queryset(tenant=tenant).filter(source_links__source_id__in=version_ids).distinct().order_by(
            "recorded_at"
        )
    )
    if known_at is not None:
        derived = [d for d in derived if d.recorded_at <= known_at]
    return {"memory": memory, "versions": versions, "sources": sources, "derived": derived, "changes": changes}


def version_as_known(memory: Memory, changes: list[MemoryChange], known_at: datetime) -> Memory:
    """`memory` (not saved) with the status and valid_to it had at `known_at`: those a later
    change replaced, if any (MemoryChange keeps them), and no successor recorded after then."""
    later = next((c for c in changes if c.changed_at > known_at), None)
    if later is not None:
        memory.status, memory.valid_to = later.status, later.valid_to
    if memory.superseded_by_id and memory.superseded_by.recorded_at > known_at:
        memory.superseded_by = None
    return memory


def job_get(*, tenant: Tenant, job_id: str) -> Job:
    tenant_activate(tenant=tenant)
    pk = parse_public_id(job_id, "job")
    job = Job.objects.filter(tenant=tenant, pk=pk).first() if pk else None
    if job is None:
        raise NotFound("job")
    return job


def current_version(memory: Memory) -> Memory:
    """The version of `memory`'s chain that holds now (it may have been corrected since),
    following superseded_by forward."""
    seen = set()
    while memory.superseded_by_id and memory.superseded_by_id not in seen:
        seen.add(memory.pk)
        memory = Memory.objects.get(tenant_id=memory.tenant_id, pk=memory.superseded_by_id)
    return memory


def job_is_theirs(*, tenant: Tenant, subject_ref: str, job: Job) -> bool:
    """Whether `job` is about the person who holds `subject_ref` now: the same id string is not
    enough once an erasure has freed it for someone else. While nobody holds the id (an erasure
    finished), its jobs stay readable by whoever is bound to it: the erasure's receipt."""
    if not subject_ref or job.subject_ref != subject_ref:
        return False
    tenant_activate(tenant=tenant)
    subject = Subject.objects.filter(tenant=tenant, external_id=subject_ref).first()
    if subject is None:
        return True
    if job.subject_row_id is not None:
        return job.subject_row_id == subject.pk
    return job.created_at >= subject.created_at  # a job from before subject rows were recorded


def memory_is_current(memory: Memory, at=None) -> bool:
    at = at or timezone.now()
    return (
        memory.status == Memory.Status.ACTIVE
        and memory.valid_from <= at
        and (memory.valid_to is None or memory.valid_to > at)
        and (memory.expires_at is None or memory.expires_at > at)
    )
