"""Helpers for the maintenance tests: jobs are created through their request services and run
in-process by the same dispatcher a worker uses (job_run with the JOB_RUNNERS map)."""
import pytest

from memoryapp.models import Job
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_write
from tests.conftest import as_tenant


def runners():
    from workers.tasks import JOB_RUNNERS, resolve

    return {kind: resolve(path) for kind, path in JOB_RUNNERS.items()}


def run(tenant, job) -> Job:
    """Run a job the way a worker does and return it reloaded (status, progress, result)."""
    from memoryapp.services.jobs import job_run

    job_run(tenant_id=tenant.pk, job_id=str(job.id), runners=runners())
    with as_tenant(tenant):
        return Job.objects.get(pk=job.pk)


def write(tenant, subject, statement, actor, **kw):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement, **kw),
                        actor=actor).memory


def append(tenant, subject, actor, *items):
    """Append events given as (event_id, role, content[, session_id])."""
    events = [EventInput(event_id=i[0], role=i[1], content=i[2], session_id=i[3] if len(i) > 3 else "")
              for i in items]
    results, _ = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
    return [r.event for r in results]


@pytest.fixture
def tenants(tenant_a, tenant_b):
    return tenant_a, tenant_b
