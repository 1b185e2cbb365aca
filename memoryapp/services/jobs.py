import logging

from django.db import OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from memoryapp.dispatch import job_enqueue_on_commit
from memoryapp.models import Job, Tenant
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)


@transaction.atomic
def job_create(*, tenant: Tenant, kind: str, subject_ref: str = "", params: dict | None = None,
               total: int = 0, actor: str = "", enqueue: bool = True) -> Job:
    """Record the job, then hand it to a worker after commit (never before: the worker must
    find the row)."""
    tenant_activate(tenant=tenant)
    job = Job.objects.create(
        tenant=tenant, kind=kind, subject_ref=subject_ref, params=params or {}, progress_total=total, actor=actor
    )
    if enqueue:
        job_enqueue_on_commit(job)
    return job


def job_claim(*, job_id) -> bool:
    """Move a queued job to running. Returns False when another worker already holds it (or it
    is finished), so running a task twice is harmless. Call inside the tenant's transaction."""
    claimed = Job.objects.filter(id=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1
    )
    return claimed == 1


def job_progress(*, job_id, done: int, total: int | None = None) -> None:
    fields = {"progress_done": done}
    if total is not None:
        fields["progress_total"] = total
    Job.objects.filter(id=job_id).update(**fields)


def job_finish(*, job_id, result: dict | None = None, error: str = "") -> None:
    Job.objects.filter(id=job_id).update(
        status=Job.Status.FAILED if error else Job.Status.SUCCEEDED,
        result=result,
        error=error,
        finished_at=timezone.now(),
    )


def job_run(*, tenant_id: int, job_id: str, runners: dict) -> None:
    """Claim a job and run it with the service for its kind. A job already claimed or finished
    is left alone, so a duplicate delivery does nothing. The runner owns its transactions (long
    jobs commit in batches) and reports progress through job_progress()."""
    import uuid

    from memoryapp.models import Tenant

    with transaction.atomic():
        tenant_activate(tenant=tenant_id)
        if not job_claim(job_id=uuid.UUID(str(job_id))):
            return
        job = Job.objects.get(id=job_id)
    tenant = Tenant.objects.get(pk=tenant_id)
    runner = runners.get(job.kind)
    try:
        if runner is None:
            raise RuntimeError(f"no runner for job kind {job.kind!r}")
        result = runner(tenant=tenant, job=job)
    except OperationalError:
        # Transient (the database went away): hand the job back so the task's retry, or the
        # outbox sweeper, can claim it again. If even that fails, the sweeper resets silent jobs.
        try:
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                Job.objects.filter(id=job.id, status=Job.Status.RUNNING).update(status=Job.Status.QUEUED)
        except OperationalError:
            pass
        raise
    except Exception as exc:
        logger.exception("job %s (%s) failed", job.public_id, job.kind)
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            job_finish(job_id=job.id, error=f"{type(exc).__name__}: {exc}"[:2000])
        return
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        job_finish(job_id=job.id, result=result)


@transaction.atomic
def job_retry(*, tenant: Tenant, job_id, actor) -> Job:
    """Put a failed job back in the queue (an admin's decision, audited). Runners are safe to
    run twice, so a retry never needs to know how far the failed attempt got."""
    from memoryapp.errors import ApplicationError, NotFound
    from memoryapp.services.audit import audit_record

    tenant_activate(tenant=tenant)
    job = Job.objects.select_for_update().filter(tenant=tenant, pk=job_id).first()
    if job is None:
        raise NotFound("job")
    if job.status != Job.Status.FAILED:
        raise ApplicationError("job_not_failed", "Only a failed job can be retried.", {"status": job.status},
                               status=409)
    previous_error = job.error
    job.status = Job.Status.QUEUED
    job.error = ""
    job.result = None
    job.finished_at = None
    job.save(update_fields=["status", "error", "result", "finished_at", "updated_at"])
    audit_record(
        tenant=tenant, actor=actor, action="job_retried", subject_ref=job.subject_ref, target=job.public_id,
        details={"kind": job.kind, "previous_error": previous_error[:500]},
    )
    job_enqueue_on_commit(job)
    return job
