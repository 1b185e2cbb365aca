import logging
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from memoryapp.errors import ApplicationError
from memoryapp.models import Event, Job
from memoryapp.services import jobs
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.jobs import job_create, job_run
from memoryapp.services.outbox import outbox_sweep
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def _reload(tenant, job) -> Job:
    with as_tenant(tenant):
        return Job.objects.get(pk=job.pk)


def _held_by_a_dead_worker(tenant, job, *, silent_for=timedelta(minutes=2)) -> None:
    """The job as a SIGKILLed worker leaves it: running, one event claimed, no heartbeat since."""
    then = timezone.now() - silent_for
    with as_tenant(tenant):
        Job.objects.filter(pk=job.pk).update(status="running", started_at=then, updated_at=then, attempts=1)
        first = Event.objects.filter(job_id=job.pk).order_by("seq").first()
        Event.objects.filter(pk=first.pk).update(status="processing", claimed_at=then)


def _extraction_job(tenant, actor, n=2):
    _, job = event_append(tenant=tenant, subject_ref="alice", actor=actor,
                          events=[EventInput(f"e{i}", "user", f"I live in town {i}.") for i in range(n)])
    return job


def test_a_transient_database_error_hands_the_job_back_for_a_retry(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)
    calls = []

    def flaky(*, tenant, job):
        calls.append(job.pk)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return {"ok": True}

    with pytest.raises(OperationalError):
        job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": flaky})
    assert _reload(tenant_a, job).status == "queued"
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": flaky})
    done = _reload(tenant_a, job)
    assert (done.status, done.result, done.attempts, len(calls), done.error) == ("succeeded", {"ok": True}, 2, 2, "")


def test_a_failed_attempt_goes_back_to_the_queue_with_a_plain_error_and_the_exception_in_the_log(
    tenant_a, caplog
):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)

    def broken(*, tenant, job):
        raise AttributeError("'dict' object has no attribute 'strip'")

    with caplog.at_level(logging.ERROR, logger="memoryapp.services.jobs"):
        job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": broken})
    failed = _reload(tenant_a, job)
    assert (failed.status, failed.attempts, failed.result) == ("queued", 1, None)
    assert failed.error == (f"Attempt 1 of {jobs.MAX_ATTEMPTS} at exporting the subject's data stopped on an "
                            "internal error (logged with this job's id); it will be tried again.")
    logged = [r for r in caplog.records if job.public_id in r.getMessage()]
    assert logged and logged[0].exc_info[0] is AttributeError


def test_a_refusal_in_plain_words_fails_the_job_at_once_and_it_is_not_run_again(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)

    def refused(*, tenant, job):
        raise ApplicationError("subject_erasing", "The subject is being erased.")

    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": refused})
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": lambda **kw: {"ran": "twice"}})
    failed = _reload(tenant_a, job)
    assert (failed.status, failed.result, failed.attempts) == ("failed", None, 1)
    assert failed.error == "Stopped exporting the subject's data: The subject is being erased."


def test_a_duplicate_delivery_of_a_job_held_by_a_live_worker_does_nothing_and_says_when_to_look_again(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)
    beat = timezone.now() - timedelta(seconds=5)
    with as_tenant(tenant_a):
        Job.objects.filter(pk=job.pk).update(status="running", started_at=beat, updated_at=beat, attempts=1)
    ran = []
    wait = job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": lambda **kw: ran.append(1)})
    assert ran == [] and _reload(tenant_a, job).attempts == 1
    assert jobs.STALE_AFTER - timedelta(seconds=7) < wait <= jobs.STALE_AFTER - timedelta(seconds=5)


def test_a_running_job_whose_heartbeat_is_stale_is_taken_over_and_its_claims_return(tenant_a, actor):
    job = _extraction_job(tenant_a, actor)
    _held_by_a_dead_worker(tenant_a, job)
    seen = []

    def runner(*, tenant, job):
        with as_tenant(tenant):
            seen.extend(Event.objects.filter(job_id=job.pk).values_list("status", flat=True))
        return {"ok": True}

    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"extraction": runner})
    assert seen == ["pending", "pending"]
    done = _reload(tenant_a, job)
    assert (done.status, done.attempts) == ("succeeded", 2)


def test_an_attempt_that_was_taken_over_records_nothing_when_it_comes_back(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)
    later = timezone.now() + timedelta(seconds=1)

    def slow_and_replaced(*, tenant, job):
        # Meanwhile this attempt was presumed dead and another one claimed the job.
        with as_tenant(tenant):
            Job.objects.filter(pk=job.pk).update(started_at=later, updated_at=later)
        return {"from": "the old attempt"}

    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": slow_and_replaced})
    current = _reload(tenant_a, job)
    assert (current.status, current.result, current.started_at) == ("running", None, later)


def test_a_replaced_attempts_progress_neither_keeps_the_job_alive_nor_overwrites_its_successors(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)
    old_claim = timezone.now() - timedelta(minutes=5)
    new_claim = timezone.now() - timedelta(minutes=4)
    with as_tenant(tenant_a):
        # the successor's claim, silent since it began: the sweeper must be able to see that
        Job.objects.filter(pk=job.pk).update(status="running", started_at=new_claim, updated_at=new_claim,
                                             progress_done=1)
        jobs.job_progress(job_id=job.pk, done=7, total=9, token=old_claim)
    stale = _reload(tenant_a, job)
    assert (stale.updated_at, stale.progress_done) == (new_claim, 1)
    with as_tenant(tenant_a):
        jobs.job_progress(job_id=job.pk, done=7, total=9, token=new_claim)
    alive = _reload(tenant_a, job)
    assert alive.updated_at > new_claim and (alive.progress_done, alive.progress_total) == (7, 9)


def test_a_job_out_of_attempts_is_given_up_when_delivered_again(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)
    with as_tenant(tenant_a):
        Job.objects.filter(pk=job.pk).update(attempts=jobs.MAX_ATTEMPTS)
    ran = []
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": lambda **kw: ran.append(1)})
    given_up = _reload(tenant_a, job)
    assert ran == [] and given_up.status == "failed"
    assert given_up.error == (f"Gave up exporting the subject's data after {jobs.MAX_ATTEMPTS} attempts; "
                              "the last one did not finish.")


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_a_slow_job_alive_past_the_stale_window(tenant_a, actor, monkeypatch):
    """A live worker is never second-guessed: its job and its claims outlast the stale window
    many times over while its heartbeat thread runs, and the sweeper leaves both alone."""
    monkeypatch.setattr("memoryapp.dispatch.send_task_now", lambda *args, **kwargs: True)
    monkeypatch.setattr(jobs, "HEARTBEAT_EVERY", 0.2)
    stale = timedelta(seconds=1)
    job = _extraction_job(tenant_a, actor)
    sweeps = []

    def slow(*, tenant, job):
        with as_tenant(tenant):
            Event.objects.filter(job_id=job.pk).update(status="processing", claimed_at=timezone.now())
        # The runner is stuck in one step (no heartbeat of its own) while the sweeper runs.
        for _ in range(8):
            time.sleep(0.5)
            sweeps.append(outbox_sweep(republish_after=timedelta(hours=1), stuck_after=stale))
        with as_tenant(tenant):
            Event.objects.filter(job_id=job.pk).update(status="processed")
        return {"slept": 4}

    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"extraction": slow})
    done = _reload(tenant_a, job)
    assert (done.status, done.attempts, done.result) == ("succeeded", 1, {"slept": 4})
    assert sum(s["jobs_reset"] + s["events_reset"] + s["jobs_given_up"] for s in sweeps) == 0


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_stops_with_its_worker_so_the_sweeper_takes_the_claims_back(tenant_a, actor, monkeypatch):
    monkeypatch.setattr("memoryapp.dispatch.send_task_now", lambda *args, **kwargs: True)
    job = _extraction_job(tenant_a, actor)
    _held_by_a_dead_worker(tenant_a, job, silent_for=timedelta(seconds=2))
    assert outbox_sweep(stuck_after=timedelta(seconds=10))["jobs_reset"] == 0  # not yet stale
    swept = outbox_sweep(stuck_after=timedelta(seconds=1))
    assert (swept["jobs_reset"], swept["events_reset"], swept["jobs_published"]) == (1, 1, 1)
    reset = _reload(tenant_a, job)
    assert reset.status == "queued" and "its worker stopped" in reset.error
    with as_tenant(tenant_a):
        assert set(Event.objects.filter(job_id=job.pk).values_list("status", "claimed_at")) == {("pending", None)}
