"""Bounded, visible retries: a job that keeps failing, or whose worker keeps dying, is retried
MEMORY_JOB_MAX_ATTEMPTS times, then failed for good with an error in plain words, and the
sweeper stops reopening it. Callers never see an exception's class or text."""
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.models import Event, Job
from memoryapp.services import jobs
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.jobs import job_claim, job_retry, job_run
from memoryapp.services.outbox import outbox_sweep
from tests.api.conftest import make_client
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db

NOW = timedelta(0)


def _extraction_job(tenant, actor, n=3) -> Job:
    _, job = event_append(tenant=tenant, subject_ref="alice", actor=actor,
                          events=[EventInput(f"e{i}", "user", f"I live in town {i}.") for i in range(n)])
    return job


def _reload(tenant, job) -> Job:
    with as_tenant(tenant):
        return Job.objects.get(pk=job.pk)


def _poison(*, tenant, job):
    raise AttributeError("'dict' object has no attribute 'strip'")


def _assert_plain(error: str) -> None:
    for internal in ("AttributeError", "Traceback", "'dict'", "strip", "Error:"):
        assert internal not in error, error


def test_a_job_that_keeps_failing_is_given_up_after_the_bound_with_a_plain_error(tenant_a, actor, caplog):
    job = _extraction_job(tenant_a, actor)
    with caplog.at_level(logging.ERROR, logger="memoryapp.services.jobs"):
        for attempt in range(1, jobs.MAX_ATTEMPTS + 1):
            # Each attempt is a delivery of the job, as the sweeper re-publishes it.
            job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"extraction": _poison})
            current = _reload(tenant_a, job)
            assert current.attempts == attempt
            _assert_plain(current.error)
            if attempt < jobs.MAX_ATTEMPTS:
                assert current.status == "queued"
                assert current.error.startswith(f"Attempt {attempt} of {jobs.MAX_ATTEMPTS} at extracting memories")
                assert outbox_sweep(republish_after=NOW)["jobs_published"] == 1
    given_up = _reload(tenant_a, job)
    assert given_up.status == "failed" and given_up.finished_at is not None
    assert given_up.error == (f"Gave up extracting memories from events after {jobs.MAX_ATTEMPTS} attempts; the "
                              "last one stopped on an internal error (logged with this job's id).")
    # The exception is in the server's log, with the job's id, once per attempt.
    logged = [r for r in caplog.records if job.public_id in r.getMessage() and r.exc_info]
    assert len(logged) == jobs.MAX_ATTEMPTS and all(r.exc_info[0] is AttributeError for r in logged)

    # The sweeper leaves it alone, though its events are still pending; a stray delivery too.
    for _ in range(3):
        swept = outbox_sweep(republish_after=NOW, stuck_after=NOW)
        assert swept == {"events_reset": 0, "jobs_reset": 0, "jobs_given_up": 0, "jobs_published": 0}
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"extraction": _poison})
    still = _reload(tenant_a, job)
    assert (still.status, still.attempts, still.error) == ("failed", jobs.MAX_ATTEMPTS, given_up.error)
    with as_tenant(tenant_a):
        assert set(Event.objects.filter(job_id=job.pk).values_list("status", flat=True)) == {"pending"}

    # What an API caller reads.
    body = make_client(tenant_a).get(f"/api/v1/jobs/{job.public_id}").json()
    assert body["status"] == "failed" and body["error"] == given_up.error


def test_a_job_whose_worker_keeps_dying_is_given_up_after_the_bound(tenant_a, actor):
    job = _extraction_job(tenant_a, actor)
    for attempt in range(1, jobs.MAX_ATTEMPTS + 1):
        # A worker claims the job and one event, then dies: its heartbeat stops.
        silent_since = timezone.now() - jobs.STALE_AFTER - timedelta(seconds=1)
        with as_tenant(tenant_a):
            assert job_claim(job_id=job.pk) is not None
            first = Event.objects.filter(job_id=job.pk).order_by("seq").first()
            Event.objects.filter(pk=first.pk).update(status="processing", claimed_at=silent_since)
            Job.objects.filter(pk=job.pk).update(updated_at=silent_since)
        swept = outbox_sweep()
        current = _reload(tenant_a, job)
        assert swept["events_reset"] == 1 and current.attempts == attempt
        if attempt < jobs.MAX_ATTEMPTS:
            assert (swept["jobs_reset"], swept["jobs_published"], current.status) == (1, 1, "queued")
            assert current.error == (f"Attempt {attempt} of {jobs.MAX_ATTEMPTS} at extracting memories from events "
                                     "was cut short because its worker stopped; it will be tried again.")
    assert (swept["jobs_given_up"], current.status) == (1, "failed")
    assert current.error == (f"Gave up extracting memories from events after {jobs.MAX_ATTEMPTS} attempts; the "
                             "last one was cut short because its worker stopped.")
    assert outbox_sweep(republish_after=NOW, stuck_after=NOW) == {
        "events_reset": 0, "jobs_reset": 0, "jobs_given_up": 0, "jobs_published": 0}


def test_an_admin_retry_gives_a_given_up_job_a_fresh_count_of_attempts(tenant_a, actor):
    job = _extraction_job(tenant_a, actor)
    for _ in range(jobs.MAX_ATTEMPTS):
        job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"extraction": _poison})
    assert _reload(tenant_a, job).status == "failed"
    retried = job_retry(tenant=tenant_a, job_id=job.pk, actor=actor)
    assert (retried.status, retried.attempts, retried.error) == ("queued", 0, "")
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"extraction": lambda **kw: {"ok": True}})
    assert (_reload(tenant_a, job).status, _reload(tenant_a, job).attempts) == ("succeeded", 1)
