"""Forgetting: TTL expiry and a per-subject cap, both by status change (never deletion: the
memory stays in history and can be exported; erasure is the only delete), both audited.

- TTL: an active (or pending) memory whose `expires_at` has passed becomes `expired`
  (status_reason "ttl"). Search filters on `expires_at` already; this makes the status say so.
- Cap: a subject with more than settings.MEMORY_SUBJECT_CAP active memories has the
  lowest-scoring ones archived (`expired`, status_reason "archived_by_cap"). Explicit semantic
  memories (what the user told us on purpose) go last, whatever their score.

The decay score is in [0, 1]: recency (half-life MEMORY_RECENCY_HALF_LIFE_DAYS from the last
access or, never accessed, from when it started to hold), access frequency (saturating),
confidence and importance.
"""
import logging
import math
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.models import Job, Memory, SourceKind, Subject, Tenant
from memoryapp.services.accesses import accesses_fold
from memoryapp.services.audit import audit_record
from memoryapp.services.jobs import job_create, job_progress
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

WORKER = Actor("worker", "forgetting")
BATCH_SIZE = 500
DECAY_WEIGHTS = {"recency": 0.35, "frequency": 0.15, "confidence": 0.25, "importance": 0.25}
# Accesses at which frequency reaches 1 - 1/e: a handful of reads already counts as "used".
FREQUENCY_SCALE = 5.0


def decay_score(memory: Memory, now: datetime | None = None) -> float:
    now = now or timezone.now()
    anchor = memory.last_accessed_at or memory.valid_from
    age_days = max((now - anchor).total_seconds(), 0.0) / 86400
    recency = math.exp(-math.log(2) * age_days / settings.MEMORY_RECENCY_HALF_LIFE_DAYS)
    frequency = 1 - math.exp(-memory.access_count / FREQUENCY_SCALE)
    score = (
        DECAY_WEIGHTS["recency"] * recency
        + DECAY_WEIGHTS["frequency"] * frequency
        + DECAY_WEIGHTS["confidence"] * max(0.0, min(1.0, memory.confidence))
        + DECAY_WEIGHTS["importance"] * max(0.0, min(1.0, memory.importance))
    )
    return round(score, 6)


def is_protected(memory: Memory) -> bool:
    """Explicit semantic memories are archived only after every other kind."""
    return memory.source_kind == SourceKind.USER_EXPLICIT and memory.memory_type == Memory.Type.SEMANTIC


def forgetting_request(*, tenant: Tenant, subject_ref: str = "", actor: Actor) -> Job:
    """Run expiry and the cap now, for one subject or (empty ref) the whole tenant."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        return job_create(tenant=tenant, kind=Job.Kind.FORGETTING, subject_ref=subject_ref, actor=str(actor))


def forgetting_job_run(*, tenant: Tenant, job: Job) -> dict:
    return forgetting_apply(tenant=tenant, subject_ref=job.subject_ref or None, job=job)


def forgetting_sweep() -> dict:
    """Every 5 minutes, across tenants, in-process (cheap SQL; no job row per run)."""
    totals = {"expired": 0, "archived": 0}
    for tenant in Tenant.objects.all():
        result = forgetting_apply(tenant=tenant)
        totals["expired"] += result["expired"]
        totals["archived"] += result["archived"]
    return totals


def forgetting_apply(*, tenant: Tenant, subject_ref: str | None = None, job: Job | None = None,
                     now: datetime | None = None, cap: int | None = None) -> dict:
    now = now or timezone.now()
    cap = settings.MEMORY_SUBJECT_CAP if cap is None else cap
    expired = _expire(tenant=tenant, subject_ref=subject_ref, now=now)
    if job is not None:
        job_progress(job_id=job.id, done=1, total=2)
    try:  # the cap weighs how often each memory was recalled: count up to now
        accesses_fold(tenant=tenant)
    except DatabaseError:  # a row lock it gave up on: the counts trail, the forgetting goes on
        logger.warning("could not fold the access counts of tenant %s now", tenant.pk, exc_info=True)
    archived = _cap(tenant=tenant, subject_ref=subject_ref, now=now, cap=cap)
    if job is not None:
        job_progress(job_id=job.id, done=2)
    return {"expired": expired, "archived": archived, "cap": cap}


def _scope(tenant: Tenant, subject_ref: str | None):
    qs = Memory.objects.filter(tenant=tenant, erasing=False)
    if subject_ref:
        qs = qs.filter(subject__external_id=subject_ref)
    return qs


def _retire(*, tenant: Tenant, memories: list[Memory], reason: str, action: str, scores: dict | None = None) -> None:
    """Mark a batch expired and audit each one. Call inside the tenant's transaction."""
    for memory in memories:
        before_status = memory.status
        Memory.objects.filter(pk=memory.pk, status=before_status).update(
            status=Memory.Status.EXPIRED, status_reason=reason
        )
        details = {"reason": reason, "previous_status": before_status}
        if scores is not None:
            details["decay_score"] = scores[memory.pk]
        audit_record(
            tenant=tenant, actor=WORKER, action=action, subject_ref=memory.subject.external_id,
            memory_id=memory.id, details=details,
        )


def _expire(*, tenant: Tenant, subject_ref: str | None, now: datetime) -> int:
    total = 0
    while True:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            batch = list(
                _scope(tenant, subject_ref)
                .filter(status__in=[Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL, Memory.Status.CANDIDATE],
                        expires_at__lte=now)
                .select_related("subject").select_for_update(skip_locked=True, of=("self",))
                .order_by("expires_at")[:BATCH_SIZE]
            )
            if not batch:
                return total
            _retire(tenant=tenant, memories=batch, reason="ttl", action="memory_expired")
            total += len(batch)


# What the per-subject cap counts: current memories, and inferences waiting for the person (which
# would otherwise pile up unanswered).
CAPPED_STATUSES = [Memory.Status.ACTIVE, Memory.Status.CANDIDATE]


def _cap(*, tenant: Tenant, subject_ref: str | None, now: datetime, cap: int) -> int:
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        over = list(
            _scope(tenant, subject_ref).filter(status__in=CAPPED_STATUSES)
            .values("subject_id").annotate(n=Count("id")).filter(n__gt=cap).values_list("subject_id", "n")
        )
    archived = 0
    for subject_id, count in over:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            # The subject lock keeps a concurrent write from changing the count under us.
            Subject.objects.select_for_update().filter(pk=subject_id).first()
            active = list(
                Memory.objects.filter(tenant=tenant, subject_id=subject_id, status__in=CAPPED_STATUSES, erasing=False)
                .select_related("subject")
                .only("id", "subject__external_id", "source_kind", "memory_type", "status", "confidence",
                      "importance", "access_count", "last_accessed_at", "valid_from", "recorded_at")
            )
            excess = len(active) - cap
            if excess <= 0:
                continue
            scores = {m.pk: decay_score(m, now) for m in active}
            # Lowest first; protected ones only after all others; ties: oldest first.
            active.sort(key=lambda m: (is_protected(m), scores[m.pk], m.recorded_at))
            doomed = active[:excess]
            _retire(tenant=tenant, memories=doomed, reason="archived_by_cap", action="memory_archived",
                    scores=scores)
            archived += len(doomed)
    return archived
