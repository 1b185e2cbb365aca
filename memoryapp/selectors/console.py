"""Reads for the console's admin and overview pages. Each takes `tenant=` first, binds the
transaction to it and filters on it, on top of row-level security."""
import difflib
from collections import Counter
from datetime import datetime, timedelta

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from memoryapp.errors import NotFound
from memoryapp.models import ApiKey, AuditEntry, Event, ExportFile, Job, Memory, Subject, Tenant
from memoryapp.selectors.exports import servable_exports
from memoryapp.selectors.memories import current_version, memory_queryset, parse_public_id
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


def memory_timeline(*, tenant: Tenant, subject_ref: str, days: int = 30, limit: int = 50) -> list[tuple]:
    """What was remembered recently, grouped by day, newest first: [(date, [memory, ...])]."""
    since = timezone.now() - timedelta(days=days)
    memories = (
        memory_queryset(tenant=tenant)
        .filter(subject__external_id=subject_ref, subject__status="active", recorded_at__gte=since)
        .order_by("-recorded_at")[:limit]
    )
    days_seen: dict = {}
    for memory in memories:
        days_seen.setdefault(timezone.localdate(memory.recorded_at), []).append(memory)
    return list(days_seen.items())


def memory_growth(*, tenant: Tenant, subject_ref: str, days: int = 30) -> dict:
    """Memories recorded per day and type over the last `days` days, the running total, and the
    current mix of types among active memories."""
    tenant_activate(tenant=tenant)
    today = timezone.localdate()
    start = today - timedelta(days=days - 1)
    base = Memory.objects.filter(
        tenant=tenant, subject__external_id=subject_ref, subject__status="active", erasing=False
    )
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
    mix = dict(
        base.filter(status=Memory.Status.ACTIVE).values_list("memory_type").annotate(n=Count("id")).order_by()
    )
    return {"series": series, "mix": mix, "total": total}


def export_file_get(*, tenant: Tenant, subject_ref: str, export_id: str) -> ExportFile:
    """One servable export of one subject (selectors/exports.py); missing, foreign, expired and
    withdrawn answer alike."""
    tenant_activate(tenant=tenant)
    pk = parse_public_id(export_id, "exp")
    export = servable_exports(tenant=tenant).filter(subject_ref=subject_ref, pk=pk).first() if pk else None
    if export is None:
        raise NotFound("export")
    return export
