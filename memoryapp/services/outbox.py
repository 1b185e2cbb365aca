"""The outbox sweeper: PostgreSQL is the record of work to do; the broker only carries hints.

A publish lost to a broker outage, or a worker SIGKILLed mid-job, leaves rows behind: events
still pending, events claimed long ago, jobs queued but never delivered, jobs running without a
heartbeat. The sweeper (beat, every 30 s) puts them back in a runnable state and publishes them
again. Re-publishing is always harmless: job_run and the pipeline claim with conditional
updates, so a duplicate delivery finds nothing to do.

The application role cannot see across tenants, so the sweep walks the global Tenant table and
works inside one transaction bound to each tenant.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from memoryapp.dispatch import job_enqueue_on_commit
from memoryapp.models import Event, Job, Tenant
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

# A job queued this long without a worker picking it up is published again. Short: a duplicate
# message costs one failed claim.
REPUBLISH_AFTER = timedelta(seconds=getattr(settings, "MEMORY_OUTBOX_REPUBLISH_SECONDS", 60))
# A claim or a running job this quiet is presumed dead. Longer than any chunk of extraction
# takes (a chunk heartbeats), so a live worker is never second-guessed.
STUCK_AFTER = timedelta(seconds=getattr(settings, "MEMORY_OUTBOX_STUCK_SECONDS", 600))


def outbox_sweep(*, republish_after: timedelta | None = None, stuck_after: timedelta | None = None) -> dict:
    """Sweep every tenant; returns counts of what was reset and re-published."""
    republish_after = REPUBLISH_AFTER if republish_after is None else republish_after
    stuck_after = STUCK_AFTER if stuck_after is None else stuck_after
    totals = {"events_reset": 0, "jobs_reset": 0, "jobs_published": 0}
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

    # Claims whose worker died: back to pending (the pipeline re-checks its claim before
    # writing, so a slow-but-alive worker that comes back writes nothing twice).
    events_reset = Event.objects.filter(
        tenant_id=tenant_id, status=Event.Status.PROCESSING, claimed_at__lt=stale
    ).update(status=Event.Status.PENDING, claimed_at=None)

    # Running jobs without a heartbeat: back to queued.
    jobs_reset = Job.objects.annotate(
        last_sign=Greatest(Coalesce("started_at", "created_at"), "updated_at")
    ).filter(tenant_id=tenant_id, status=Job.Status.RUNNING, last_sign__lt=stale).update(
        status=Job.Status.QUEUED, updated_at=quiet
    )

    # Pending events whose job already finished (it ran while they were still claimed by a
    # dead worker) reopen that job; orphans get one.
    waiting = Event.objects.filter(tenant_id=tenant_id, status=Event.Status.PENDING, recorded_at__lt=quiet)
    finished_job_ids = set(
        waiting.filter(job__status__in=[Job.Status.SUCCEEDED, Job.Status.FAILED]).values_list("job_id", flat=True)
    )
    if finished_job_ids:
        jobs_reset += Job.objects.filter(tenant_id=tenant_id, id__in=finished_job_ids).update(
            status=Job.Status.QUEUED, finished_at=None, error="", updated_at=quiet
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
    if events_reset or jobs_reset or due:
        logger.info("outbox tenant %s: %s events reset, %s jobs reset, %s published",
                    tenant_id, events_reset, jobs_reset, len(due))
    return {"events_reset": events_reset, "jobs_reset": jobs_reset, "jobs_published": len(due)}
