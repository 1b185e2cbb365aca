"""Reads for the console's admin and overview pages. Each takes `tenant=` first, binds the
transaction to it and filters on it, on top of row-level security."""
import difflib
from collections import Counter
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from memoryapp.errors import NotFound
from memoryapp.models import ApiKey, AuditEntry, Event, ExportFile, Job, Memory, MemoryEvidence, Subject, Tenant
from memoryapp.selectors.exports import servable_exports
from memoryapp.selectors.memories import current_version, memory_list, memory_queryset, parse_public_id
from memoryapp.tenancy import tenant_activate


def audit_entries(
    *, tenant: Tenant, actor: str = "", action: str = "", subject_ref: str = "",
    since: datetime | None = None, until: datetime | None = None,
) -> QuerySet[AuditEntry]:
    """Newest first. `actor` matches "kind:id", the kind or part of the id."""
    tenant_activate(tenant=tenant)
    qs = AuditEntry.objects.filter(tenant=tenant)
    if actor:
        kind, _, ident = actor.partition(":")
        if ident:
            qs = qs.filter(actor_kind=kind, actor_id__icontains=ident)
        elif actor in AuditEntry.ActorKind.values:
            qs = qs.filter(actor_kind=actor)
        else:
            qs = qs.filter(actor_id__icontains=actor)
    if action:
        qs = qs.filter(action=action)
    if subject_ref:
        # The person who holds the id now, not an earlier holder erased before them (an admin
        # looking for those searches by action or target).
        holder = Subject.objects.filter(tenant=tenant, external_id=subject_ref).values_list("pk", flat=True).first()
        qs = qs.filter(subject_row_id=holder) if holder is not None else qs.filter(subject_ref=subject_ref)
    if since:
        qs = qs.filter(created_at__gte=since)
    if until:
        qs = qs.filter(created_at__lt=until)
    return qs.order_by("-seq")


def audit_actions(*, tenant: Tenant) -> list[str]:
    tenant_activate(tenant=tenant)
    return list(
        AuditEntry.objects.filter(tenant=tenant).order_by("action").values_list("action", flat=True).distinct()
    )


def live_memory_ids(*, tenant: Tenant, ids) -> set:
    """Which of these memories still exist and are not being erased: the audit log links only
    to those."""
    tenant_activate(tenant=tenant)
    return set(Memory.objects.filter(tenant=tenant, pk__in=[i for i in ids if i], erasing=False)
               .values_list("pk", flat=True))


def jobs_list(*, tenant: Tenant, status: str = "", kind: str = "", job_id: str = "",
              subject_ref: str = "") -> QuerySet[Job]:
    tenant_activate(tenant=tenant)
    qs = Job.objects.filter(tenant=tenant)
    if status:
        qs = qs.filter(status=status)
    if kind:
        qs = qs.filter(kind=kind)
    if subject_ref:
        qs = qs.filter(subject_ref=subject_ref)
    if job_id:
        pk = parse_public_id(job_id, "job")
        qs = qs.filter(pk=pk) if pk else qs.none()
    return qs.order_by("-created_at")


def quarantined_events(*, tenant: Tenant) -> QuerySet[Event]:
    tenant_activate(tenant=tenant)
    return Event.objects.filter(tenant=tenant, quarantined=True).select_related("subject").order_by("-recorded_at")


def quarantined_event_get(*, tenant: Tenant, event_id: str) -> Event:
    """One of the tenant's events in quarantine; missing, foreign and already decided answer alike."""
    tenant_activate(tenant=tenant)
    pk = event_pk(event_id)
    event = quarantined_events(tenant=tenant).filter(pk=pk).first() if pk else None
    if event is None:
        raise NotFound("event")
    return event


def event_pk(public_id: str):
    return parse_public_id(public_id, "evt")


def statement_diff(old: str, new: str) -> list[tuple[str, str]]:
    """Word-level diff as (op, text) pairs, op in "same", "del", "ins"."""
    a, b = old.split(), new.split()
    parts: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(("same", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            parts.append(("del", " ".join(a[i1:i2])))
        if j2 > j1:
            parts.append(("ins", " ".join(b[j1:j2])))
    return parts


def pending_approvals(*, tenant: Tenant) -> list[dict]:
    """Procedural memories waiting for approval, each with the active procedure it would
    replace (same subject, namespace and key) and the word diff between them."""
    pending = list(
        memory_queryset(tenant=tenant).filter(status=Memory.Status.PENDING_APPROVAL).order_by("recorded_at")
    )
    rows = []
    for memory in pending:
        # What approval would replace: the version that holds now of what it was proposed for
        # (never an earlier proposal in a chain of them, which would hide the first change).
        previous = current_version(memory.proposal_for) if memory.proposal_for_id else None
        if previous is None and memory.key:
            previous = (
                Memory.objects.filter(
                    tenant=tenant, subject_id=memory.subject_id, status=Memory.Status.ACTIVE, erasing=False,
                    memory_type=Memory.Type.PROCEDURAL, namespace=memory.namespace, key=memory.key,
                ).order_by("-valid_from").first()
            )
        if previous is None:
            # A proposal from before proposals named their target: the version it replaced.
            previous = memory.supersedes.order_by("-valid_from").first()
        diff = statement_diff(previous.statement if previous else "", memory.statement)
        rows.append({"memory": memory, "previous": previous, "diff": diff})
    return rows


def pending_memory_get(*, tenant: Tenant, memory_id: str) -> Memory:
    pk = parse_public_id(memory_id, "mem")
    memory = memory_queryset(tenant=tenant).filter(pk=pk, status=Memory.Status.PENDING_APPROVAL).first() if pk else None
    if memory is None:
        raise NotFound("memory")
    return memory


def memory_subject_ref(*, tenant: Tenant, memory_id: str) -> str:
    """Whose memory this is, for an admin following a link from the audit log."""
    pk = parse_public_id(memory_id, "mem")
    memory = memory_queryset(tenant=tenant).filter(pk=pk).first() if pk else None
    if memory is None:
        raise NotFound("memory")
    return memory.subject.external_id


def api_keys_list(*, tenant: Tenant) -> QuerySet[ApiKey]:
    tenant_activate(tenant=tenant)
    return ApiKey.objects.filter(tenant=tenant).order_by("revoked_at", "-created_at")


def memory_said_at(memory: Memory) -> datetime:
    """When a memory was said: its source message's time, else when it holds from. Not when the
    service recorded it (a conversation from March imported in December was said in March)."""
    event = memory.source_event if memory.source_event_id else None
    return event.occurred_at if event is not None else memory.valid_from


def memory_timeline(*, tenant: Tenant, subject_ref: str, days: int = 30, limit: int = 50) -> list[tuple]:
    """What was remembered recently (recorded in the last `days` days), grouped by the day it was
    said, newest first: [(date, [memory, ...])]. The person's list's memories only."""
    since = timezone.now() - timedelta(days=days)
    memories = list(person_memories(tenant=tenant, subject_ref=subject_ref).filter(recorded_at__gte=since)
                    .order_by("-recorded_at")[:limit])
    days_seen: dict = {}
    for memory in sorted(memories, key=memory_said_at, reverse=True):
        days_seen.setdefault(timezone.localdate(memory_said_at(memory)), []).append(memory)
    return list(days_seen.items())


# How the overview groups statuses in words; every status the person's list shows is in one.
STATUS_GROUPS = {
    Memory.Status.ACTIVE: "current",
    Memory.Status.PENDING_APPROVAL: "waiting",
    Memory.Status.CANDIDATE: "waiting",
    Memory.Status.SUPERSEDED: "earlier",
    Memory.Status.EXPIRED: "earlier",
    Memory.Status.REJECTED: "earlier",
}


def memory_growth(*, tenant: Tenant, subject_ref: str, days: int = 30) -> dict:
    """Memories recorded per day and type over the last `days` days and the running total, the
    mix of types and the statuses in groups: all over the same memories, those the person's list
    shows, so every figure on the overview adds up to the total."""
    today = timezone.localdate()
    start = today - timedelta(days=days - 1)
    base = person_memories(tenant=tenant, subject_ref=subject_ref).prefetch_related(None).order_by()
    before = base.filter(recorded_at__date__lt=start).count()
    per_day = (
        base.filter(recorded_at__date__gte=start)
        .annotate(day=TruncDate("recorded_at"))
        .values("day", "memory_type")
        .annotate(n=Count("id"))
    )
    counts: dict = {}
    for row in per_day:
        counts.setdefault(row["day"], Counter())[row["memory_type"]] = row["n"]
    series, total = [], before
    for offset in range(days):
        day = start + timedelta(days=offset)
        by_type = counts.get(day, Counter())
        total += sum(by_type.values())
        series.append({"day": day, "by_type": dict(by_type), "total": total})
    mix: Counter = Counter()
    groups: Counter = Counter()
    for memory_type, status, n in base.values_list("memory_type", "status").annotate(n=Count("id")):
        mix[memory_type] += n
        groups[STATUS_GROUPS.get(status, "earlier")] += n
    return {"series": series, "mix": dict(mix), "groups": dict(groups), "total": total}


def export_file_get(*, tenant: Tenant, subject_ref: str, export_id: str) -> ExportFile:
    """One servable export of one subject (selectors/exports.py); missing, foreign, expired and
    withdrawn answer alike."""
    tenant_activate(tenant=tenant)
    pk = parse_public_id(export_id, "exp")
    export = servable_exports(tenant=tenant).filter(subject_ref=subject_ref, pk=pk).first() if pk else None
    if export is None:
        raise NotFound("export")
    return export


def version_sources(*, tenant: Tenant, version_ids) -> dict:
    """Each version's own source events, {memory pk: [Event]}, as they happened: a version's
    reasons are its own evidence, never those of the versions before or after it."""
    tenant_activate(tenant=tenant)
    sources: dict = {pk: [] for pk in version_ids}
    links = (
        MemoryEvidence.objects.filter(tenant=tenant, memory_id__in=list(version_ids), event__erasing=False)
        .select_related("event").order_by("event__occurred_at", "event__seq")
    )
    for link in links:
        sources[link.memory_id].append(link.event)
    return sources


def person_memories(*, tenant: Tenant, subject_ref: str, **filters) -> QuerySet[Memory]:
    """The person's own list (memory_list, newest first), less whatever came from an event held in
    quarantine: that waits for an admin's decision, whatever status its memory was given."""
    return memory_list(tenant=tenant, subject_ref=subject_ref, **filters).exclude(source_event__quarantined=True)


def person_exports(*, tenant: Tenant, subject_ref: str) -> QuerySet[ExportFile]:
    """The person's exports that can still be downloaded, newest first (selectors/exports.py
    decides which: not expired, not withdrawn, made from the person who holds the id now)."""
    tenant_activate(tenant=tenant)
    return servable_exports(tenant=tenant).filter(subject_ref=subject_ref).defer("content").order_by("-created_at")


def audit_entry_get(*, tenant: Tenant, entry_id: int) -> AuditEntry:
    """One of the tenant's audit entries; missing and foreign answer alike."""
    tenant_activate(tenant=tenant)
    entry = AuditEntry.objects.filter(tenant=tenant, pk=entry_id).first()
    if entry is None:
        raise NotFound("audit entry")
    return entry


def audit_changes(entry: AuditEntry) -> list[dict]:
    """What an entry says changed: one row per field of its before/after snapshots, in a fixed
    order, with whether it changed (the statement also as a word diff)."""
    before = entry.before if isinstance(entry.before, dict) else {}
    after = entry.after if isinstance(entry.after, dict) else {}
    rows = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        row = {"field": name, "before": old, "after": new, "changed": old != new,
               "in_before": name in before, "in_after": name in after}
        if name == "statement" and isinstance(old, str) and isinstance(new, str) and old != new:
            row["diff"] = statement_diff(old, new)
        rows.append(row)
    return rows


def subjects_list(*, tenant: Tenant, q: str = "") -> QuerySet[Subject]:
    """The tenant's people (active subjects), with how many memories each has, by id."""
    tenant_activate(tenant=tenant)
    qs = Subject.objects.filter(tenant=tenant, status=Subject.Status.ACTIVE)
    if q:
        qs = qs.filter(external_id__icontains=q)
    return qs.annotate(
        memory_count=Count("memories", filter=Q(memories__erasing=False) & ~Q(memories__status=Memory.Status.QUARANTINED))
    ).order_by("external_id")
