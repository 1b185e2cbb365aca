"""The outbox sweeper: PostgreSQL is the record of work to do; the broker only carries hints.

A publish lost to a broker outage, or a worker SIGKILLed mid-job, leaves rows behind: events
still pending, jobs queued but never delivered, jobs running without a heartbeat and the events
they had claimed. The sweeper (beat, every MEMORY_OUTBOX_SWEEP_SECONDS) puts them back in a
runnable state and publishes them again. Re-publishing is always harmless: job_run and the
pipeline claim with conditional updates, so a duplicate delivery finds nothing to do.

A running job is judged by its heartbeat alone (services/jobs.py): a live worker, however slow,
keeps it fresh, so neither the job nor the events it claimed are touched; a dead one's job
goes back to the queue (or is given up after its attempts) and its claims back to pending
within STALE_AFTER plus one sweep.

The application role cannot see across tenants, so the sweep walks the global Tenant table and
works inside one transaction bound to each tenant.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryapp.dispatch import job_enqueue_on_commit
from memoryapp.models import Event, Job, Tenant
from memoryapp.services.jobs import MAX_ATTEMPTS, STALE_AFTER, Fate, job_attempt_error, job_give_up
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

# A job queued this long without a worker picking it up is published again. Short: a duplicate
# message costs one failed claim. It also spaces the attempts of a job that failed.
REPUBLISH_AFTER = timedelta(seconds=settings.MEMORY_OUTBOX_REPUBLISH_SECONDS)
# A running job whose heartbeat is this old is presumed dead (so are claims held by no job).
STUCK_AFTER = STALE_AFTER


def outbox_sweep(*, republish_after: timedelta | None = None, stuck_after: timedelta | None = None) -> dict:
    """Sweep every tenant; returns counts of what was reset, given up and re-published."""
    republish_after = REPUBLISH_AFTER if republish_after is None else republish_after
    stuck_after = STUCK_AFTER if stuck_after is None else stuck_after
    totals = {"events_reset": 0, "jobs_reset": 0, "jobs_given_up": 0, "jobs_published": 0}
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        try:
            counts = outbox_sweep_tenant(tenant_id=tenant_id, republish_after=republish_after,
                                         stuck_after=stuck_after)
        except Exception:  # one tenant's trouble must not stop the others being swept
            logger.exception("outbox sweep failed for tenant %s", tenant_id)
            continue
        for key, value in counts.items():
            totals[key] += value
    return totals


@transaction.atomic
def outbox_sweep_tenant(*, tenant_id: int, republish_after: timedelta, stuck_after: timedelta) -> dict:
    tenant_activate(tenant=tenant_id)
    now = timezone.now()
    stale = now - stuck_after
    quiet = now - republish_after
    jobs_reset = given_up = 0

    # Running jobs whose heartbeat stopped: their worker is dead. Back to queued, or failed for
    # good once they have used their attempts. Row locks (skip_locked) keep this from racing a
    # redelivered task that is taking the same job over in job_claim.
    dead = list(Job.objects.select_for_update(skip_locked=True).filter(
        tenant_id=tenant_id, status=Job.Status.RUNNING, updated_at__lt=stale))
    for job in dead:
        if job.attempts >= MAX_ATTEMPTS:
            job_give_up(job=job, fate=Fate.WORKER_LOST)
            given_up += 1
        else:
            Job.objects.filter(pk=job.pk).update(
                status=Job.Status.QUEUED, updated_at=quiet,
                error=job_attempt_error(job=job, fate=Fate.WORKER_LOST, final=False),
            )
            jobs_reset += 1
    if dead:
        logger.warning("outbox tenant %s: workers of jobs %s stopped heartbeating", tenant_id,
                       ", ".join(j.public_id for j in dead))

    # Claims whose attempt is over (their job is no longer running, above or earlier) go back to
    # pending; so do claims held by no job once stale. The pipeline re-checks its claim before
    # writing, so a worker presumed dead that comes back writes nothing twice. Claims of a
    # running job with a live heartbeat are never touched, however old.
    events_reset = Event.objects.filter(tenant_id=tenant_id, status=Event.Status.PROCESSING).filter(
        Q(job__isnull=True, claimed_at__lt=stale)
        | Q(job__status__in=[Job.Status.QUEUED, Job.Status.SUCCEEDED, Job.Status.FAILED])
    ).update(status=Event.Status.PENDING, claimed_at=None)

    # Pending events whose job succeeded anyway (a claim it skipped, or one reset after it had
    # finished) reopen that job, within its attempts; orphans get one. A failed job stays
    # failed: it has used its attempts, or was refused, and an admin's retry reopens it.
    waiting = Event.objects.filter(tenant_id=tenant_id, status=Event.Status.PENDING, recorded_at__lt=quiet)
    finished = Job.objects.filter(
        tenant_id=tenant_id, status=Job.Status.SUCCEEDED,
        id__in=waiting.filter(job__status=Job.Status.SUCCEEDED).values("job_id"),
    )
    for job in finished.filter(attempts__gte=MAX_ATTEMPTS):
        job_give_up(job=job, fate=Fate.LEFT_EVENTS)
        given_up += 1
    jobs_reset += finished.filter(attempts__lt=MAX_ATTEMPTS).update(
        status=Job.Status.QUEUED, finished_at=None, updated_at=quiet,
    )
    orphan_subjects = set(waiting.filter(job__isnull=True).values_list("subject__external_id", "subject_id"))
    for subject_ref, subject_id in orphan_subjects:
        job = Job.objects.create(tenant_id=tenant_id, kind=Job.Kind.EXTRACTION, subject_ref=subject_ref,
                                 actor="system:outbox")
        Job.objects.filter(pk=job.pk).update(updated_at=quiet)
        waiting.filter(job__isnull=True, subject_id=subject_id).update(job=job)

    # Everything queued and quiet is published again; touching updated_at spaces the repeats.
    # (Jobs reset above carry updated_at=quiet, so they go out in this same sweep.)
    due = list(Job.objects.filter(tenant_id=tenant_id, status=Job.Status.QUEUED, updated_at__lte=quiet))
    for job in due:
        job_enqueue_on_commit(job)
    if due:
        Job.objects.filter(pk__in=[j.pk for j in due]).update(updated_at=now)
    if events_reset or jobs_reset or given_up or due:
        logger.info("outbox tenant %s: %s events reset, %s jobs reset, %s given up, %s published",
                    tenant_id, events_reset, jobs_reset, given_up, len(due))
    return {"events_reset": events_reset, "jobs_reset": jobs_reset, "jobs_given_up": given_up,
            "jobs_published": len(due)}
