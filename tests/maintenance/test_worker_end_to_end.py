"""Maintenance through a real Celery worker on a real Redis: events extracted, exported and
then erased by the worker, each job found and run from its queue after commit."""
import pytest

from memoryapp.models import Event, ExportFile, Job, Memory, Subject
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.export import export_request
from memoryapp.services.memories import subject_erase_request
from tests.conftest import as_tenant
from tests.workers.conftest import broker, celery_worker, wait_for  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def finished(tenant, job):
    def check():
        with as_tenant(tenant):
            current = Job.objects.get(pk=job.pk)
            return current if current.status in ("succeeded", "failed") else None
    return wait_for(check, timeout=120, message=f"{job.kind} job to finish")


def test_worker_extracts_exports_and_erases_a_subject(celery_worker, tenant_a, tenant_b, actor):
    texts = ["I live in Reykjavik near the harbour.", "My favourite food is plokkfiskur.", "I work as a glaciologist."]
    for tenant in (tenant_a, tenant_b):
        _, extraction = event_append(
            tenant=tenant, subject_ref="alice", actor=actor,
            events=[EventInput(f"e{i}", "user", t, session_id="s1") for i, t in enumerate(texts)],
        )
        assert finished(tenant, extraction).status == "succeeded"

    export = finished(tenant_a, export_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    assert export.status == "succeeded", export.error
    assert export.result["counts"]["events"] == 3 and export.result["counts"]["memories"] >= 3

    erasure = finished(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref="alice", actor=actor))

    assert erasure.status == "succeeded", erasure.error
    assert erasure.result["verification"]["passed"] is True
    assert erasure.result["removed"]["events"] == 3 and erasure.result["removed"]["export_files"] == 1
    assert "Reykjavik" not in str(erasure.result)
    with as_tenant(tenant_a):
        assert not Subject.objects.filter(external_id="alice").exists()
        assert Event.objects.count() == 0 and Memory.objects.count() == 0 and ExportFile.objects.count() == 0
    with as_tenant(tenant_b):
        assert Event.objects.count() == 3 and Memory.objects.filter(subject__external_id="alice").exists()
