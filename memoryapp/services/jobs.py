"""Jobs: recorded in PostgreSQL, claimed by one worker at a time, retried a bounded number of times.

A running job proves its worker alive by a heartbeat: a thread of job_run's touches the job's
`updated_at` every HEARTBEAT_EVERY seconds, however long the runner's own steps take. A running
job silent for STALE_AFTER is presumed dead: the outbox sweeper (or a redelivered task, through
job_claim) takes it back. `started_at` is the claim token of the current attempt: a worker
presumed dead that comes back finds its token replaced and writes nothing to the job.

An attempt that fails or dies puts the job back in the queue; after MAX_ATTEMPTS the job is
failed for good with an error in plain words (the exception itself goes to the log, with the
job's id, never to the API's callers).
"""
import logging
import threading
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import OperationalError, connections, transaction
from django.db.models import F
from django.utils import timezone

from memoryapp.dispatch import job_enqueue_on_commit
from memoryapp.errors import ApplicationError
from memoryapp.models import Event, Job, Tenant
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = settings.MEMORY_JOB_HEARTBEAT_SECONDS
STALE_AFTER = timedelta(seconds=settings.MEMORY_JOB_STALE_SECONDS)
MAX_ATTEMPTS = settings.MEMORY_JOB_MAX_ATTEMPTS

# What a job of each kind does, for the errors its callers read.
DOING = {
    Job.Kind.EXTRACTION: "extracting memories from events",
    Job.Kind.DELETION: "erasing the subject's data",
    Job.Kind.EXPORT: "exporting the subject's data",
    Job.Kind.CONSOLIDATION: "consolidating memories",
    Job.Kind.FORGETTING: "applying expiry and retention",
    Job.Kind.REINDEX: "re-embedding memories",
    Job.Kind.REPLAY: "replaying events through the extractor",
}


class Fate:
    """How an attempt ended without finishing, as its callers read it."""

    ERROR = "stopped on an internal error (logged with this job's id)"
    WORKER_LOST = "was cut short because its worker stopped"
    DATABASE = "lost its connection to the database"
    LEFT_EVENTS = "left some of its events unprocessed"
    UNFINISHED = "did not finish"


def job_attempt_error(*, job: Job, fate: str, final: bool) -> str:
    """The job's `error` after attempt number `job.attempts` ended with `fate`."""
    doing = DOING.get(job.kind, "running this job")
    if final:
        return f"Gave up {doing} after {job.attempts} attempts; the last one {fate}."
    return f"Attempt {job.attempts} of {MAX_ATTEMPTS} at {doing} {fate}; it will be tried again."


# No savepoint of its own inside a caller's transaction (two round trips per append): it
# raises no domain error a caller could catch and go on from.
@transaction.atomic(savepoint=False)
def job_create(*, tenant: Tenant, kind: str, subject_ref: str = "", params: dict | None = None,
               total: int = 0, actor: str = "", enqueue: bool = True, subject_row_id: int | None = None) -> Job:
    """Record the job, then hand it to a worker after commit (never before: the worker must
    find the row). It names the Subject row that holds `subject_ref` now, so the next person to
    get the id after an erasure does not see this one's jobs (`subject_row_id`: that row, when the
    caller has it locked already)."""
    from memoryapp.services.audit import subject_row_for

    tenant_activate(tenant=tenant)
    if subject_row_id is None:
        subject_row_id = subject_row_for(tenant=tenant, subject_ref=subject_ref)
    job = Job.objects.create(
        tenant=tenant, kind=kind, subject_ref=subject_ref, params=params or {}, progress_total=total, actor=actor,
        subject_row_id=subject_row_id,
    )
    if enqueue:
        job_enqueue_on_commit(job)
    return job


def job_claim(*, job_id) -> datetime | None:
    """Move a queued job to running, or take over a running one whose heartbeat is stale (its
    worker died; its events still claimed go back to pending). Returns the new claim token (the
    job's `started_at`), or None when the job is finished, held by a live worker, or out of
    attempts (then it is failed here), so running a task twice is harmless. Call inside the
    tenant's transaction; locks the job's row until it ends."""
    return _claim(job_id=job_id)[0]


def _claim(*, job_id) -> tuple[datetime | None, Job | None]:
    """job_claim's token, and the job's row as the claim left it (None if there is no such job),
    so that the caller need not read it again."""
    now = timezone.now()
    job = Job.objects.select_for_update().filter(id=job_id).first()
    if job is None:
        return None, None
    dead = job.status == Job.Status.RUNNING and job.updated_at < now - STALE_AFTER
    if job.status != Job.Status.QUEUED and not dead:
        return None, job
    if dead:
        logger.warning("job %s: taking over from a worker silent since %s", job.public_id, job.updated_at)
        job_release_claims(job_id=job.id)
    if job.attempts >= MAX_ATTEMPTS:
        job_give_up(job=job, fate=Fate.WORKER_LOST if dead else Fate.UNFINISHED)
        job.refresh_from_db()
        return None, job
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, started_at=now, updated_at=now, attempts=F("attempts") + 1
    )
    # (what the update wrote, as it wrote it: the row is locked until the caller's transaction ends)
    job.status, job.started_at, job.updated_at, job.attempts = Job.Status.RUNNING, now, now, job.attempts + 1
    return now, job


def job_release_claims(*, job_id) -> int:
    """Events a dead attempt of the job had claimed go back to pending. Their old claim token is
    gone, so that attempt, if it was only slow, writes none of them. Call inside the tenant's
    transaction, holding the job's row (or having just moved it out of `running`)."""
    return Event.objects.filter(job_id=job_id, status=Event.Status.PROCESSING).update(
        status=Event.Status.PENDING, claimed_at=None
    )


def job_give_up(*, job: Job, fate: str) -> None:
    """Fail a job that has used its attempts. Call inside the tenant's transaction."""
    logger.error("job %s (%s) given up after %s attempts: %s", job.public_id, job.kind, job.attempts, fate)
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED, error=job_attempt_error(job=job, fate=fate, final=True),
        finished_at=timezone.now(), updated_at=timezone.now(),
    )


@transaction.atomic
def job_heartbeat(*, tenant_id: int, job_id, token: datetime) -> bool:
    """Prove the attempt holding `token` alive. False when the job is no longer its own (it
    finished, or was presumed dead and handed to another attempt)."""
    tenant_activate(tenant=tenant_id)
    return Job.objects.filter(id=job_id, status=Job.Status.RUNNING, started_at=token).update(
        updated_at=timezone.now()
    ) == 1


class Heartbeat:
    """While the block runs, a daemon thread calls job_heartbeat() every HEARTBEAT_EVERY
    seconds, on its own database connection and in its own short transactions, so a runner busy
    in one long step (a model call, a large write) is never taken for dead. It dies with the
    process, which is the point."""

    def __init__(self, *, tenant_id: int, job_id, token: datetime):
        self.tenant_id, self.job_id, self.token = tenant_id, job_id, token
        self.every = HEARTBEAT_EVERY
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"job-heartbeat-{job_id}", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.every):
                try:
                    if not job_heartbeat(tenant_id=self.tenant_id, job_id=self.job_id, token=self.token):
                        logger.warning("job %s is no longer held by this attempt; heartbeat stopped", self.job_id)
                        return
                except Exception:  # the next beat tries again; STALE_AFTER allows several misses
                    logger.warning("heartbeat of job %s failed", self.job_id, exc_info=True)
        finally:
            connections.close_all()  # this thread's own connections


def job_progress(*, job_id, done: int, total: int | None = None, token: datetime | None = None) -> None:
    """Record how far the job is; with `token` (the attempt's claim), also touch updated_at, which
    tells the sweeper the job's runner is alive, in the same statement, and only while that
    attempt still holds the job: one presumed dead and replaced must not keep its successor's
    job looking alive, nor write its own progress over the successor's."""
    fields = {"progress_done": done}
    if total is not None:
        fields["progress_total"] = total
    jobs = Job.objects.filter(id=job_id)
    if token is not None:
        fields["updated_at"] = timezone.now()
        jobs = jobs.filter(status=Job.Status.RUNNING, started_at=token)
    jobs.update(**fields)


def job_finish(*, job_id, result: dict | None = None, error: str = "", token: datetime | None = None) -> bool:
    """Record the end of a job's attempt; with `token`, only if that attempt still holds the job
    (one presumed dead and replaced writes nothing). Returns whether it was recorded."""
    jobs = Job.objects.filter(id=job_id)
    if token is not None:
        jobs = jobs.filter(status=Job.Status.RUNNING, started_at=token)
    return jobs.update(
        status=Job.Status.FAILED if error else Job.Status.SUCCEEDED,
        result=result,
        error=error,
        finished_at=timezone.now(),
        updated_at=timezone.now(),
    ) == 1


@transaction.atomic
def _attempt_failed(*, tenant_id: int, job: Job, token: datetime, fate: str) -> None:
    """Back to the queue (the sweeper publishes it again after REPUBLISH_AFTER, which spaces
    the attempts), or failed for good once the attempts are used."""
    tenant_activate(tenant=tenant_id)
    held = Job.objects.select_for_update().filter(id=job.id, status=Job.Status.RUNNING, started_at=token).first()
    if held is None:
        return
    if held.attempts >= MAX_ATTEMPTS:
        job_give_up(job=held, fate=fate)
        return
    Job.objects.filter(pk=held.pk).update(
        status=Job.Status.QUEUED, error=job_attempt_error(job=held, fate=fate, final=False),
        updated_at=timezone.now(),
    )


def job_run(*, tenant_id: int, job_id: str, runners: dict) -> timedelta | None:
    """Claim a job and run it with the service for its kind, with a heartbeat. A job already
    claimed or finished is left alone, so a duplicate delivery does nothing. The runner owns its
    transactions (long jobs commit in batches) and reports progress through job_progress().

    Returns, when the job is running under another worker's live heartbeat, how long until that
    heartbeat would be stale (a redelivered task looks again then, to take over from a worker
    that died); otherwise None."""
    with transaction.atomic():
        tenant_activate(tenant=tenant_id)
        token, job = _claim(job_id=uuid.UUID(str(job_id)))
    if token is None:
        if job is not None and job.status == Job.Status.RUNNING:
            return max(job.updated_at + STALE_AFTER - timezone.now(), timedelta(0))
        return None
    tenant = Tenant.objects.get(pk=tenant_id)
    runner = runners.get(job.kind)
    try:
        with Heartbeat(tenant_id=tenant_id, job_id=job.id, token=token):
            if runner is None:
                raise RuntimeError(f"no runner for job kind {job.kind!r}")
            result = runner(tenant=tenant, job=job)
    except OperationalError:
        # Transient (the database went away): hand the job back so the task's retry, or the
        # outbox sweeper, can claim it again. If even that fails, its heartbeat stops and the
        # sweeper takes it back.
        logger.warning("job %s (%s): database error; handing it back", job.public_id, job.kind, exc_info=True)
        try:
            _attempt_failed(tenant_id=tenant_id, job=job, token=token, fate=Fate.DATABASE)
        except OperationalError:
            pass
        raise
    except ApplicationError as exc:
        # A refusal in the domain's own plain words: running it again would be refused again.
        logger.warning("job %s (%s) refused: %s", job.public_id, job.kind, exc.message)
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            job_finish(job_id=job.id, error=f"Stopped {DOING.get(job.kind, 'this job')}: {exc.message}"[:2000],
                       token=token)
        return None
    except Exception:
        logger.exception("job %s (%s) attempt failed", job.public_id, job.kind)
        _attempt_failed(tenant_id=tenant_id, job=job, token=token, fate=Fate.ERROR)
        return None
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        if not job_finish(job_id=job.id, result=result, token=token):
            logger.warning("job %s finished after another attempt took it over; result not recorded", job.public_id)
    return None


@transaction.atomic
def job_retry(*, tenant: Tenant, job_id, actor) -> Job:
    """Put a failed job back in the queue (an admin's decision, audited) with a fresh count of
    attempts. Runners are safe to run twice, so a retry never needs to know how far the failed
    attempts got."""
    from memoryapp.errors import NotFound
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
    job.attempts = 0
    job.save(update_fields=["status", "error", "result", "finished_at", "attempts", "updated_at"])
    # Its waiting events get a fresh count too: the attempts that failed were the job's.
    Event.objects.filter(tenant=tenant, job_id=job.pk, status=Event.Status.PENDING).update(attempts=0)
    audit_record(
        tenant=tenant, actor=actor, action="job_retried", subject_ref=job.subject_ref, target=job.public_id,
        details={"kind": job.kind, "previous_error": previous_error[:500]},
    )
    job_enqueue_on_commit(job)
    return job
