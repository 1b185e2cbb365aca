import pytest
from django.db import OperationalError

from memoryapp.models import Job
from memoryapp.services.jobs import job_create, job_run
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


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
    with as_tenant(tenant_a):
        assert Job.objects.get(pk=job.pk).status == "queued"
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": flaky})
    with as_tenant(tenant_a):
        done = Job.objects.get(pk=job.pk)
    assert (done.status, done.result, done.attempts, len(calls)) == ("succeeded", {"ok": True}, 2, 2)


def test_a_failing_job_is_recorded_as_failed_and_not_run_again(tenant_a):
    job = job_create(tenant=tenant_a, kind="export", subject_ref="alice", enqueue=False)

    def broken(*, tenant, job):
        raise ValueError("bad export parameters")

    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": broken})
    job_run(tenant_id=tenant_a.pk, job_id=str(job.pk), runners={"export": lambda **kw: {"ran": "twice"}})
    with as_tenant(tenant_a):
        failed = Job.objects.get(pk=job.pk)
    assert failed.status == "failed" and "bad export parameters" in failed.error and failed.result is None
