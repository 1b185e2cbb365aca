import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.models import ExportFile, Job, Memory, ReadAudit, Subject
from tests.api.conftest import assert_error, make_client, post, write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def test_job_is_readable_by_its_tenant_only(client_a, client_b):
    job = post(client_a, "subjects/alice/events", {"event_id": "e1", "role": "user", "content": "hi"}).json()["job"]
    body = client_a.get(f"/api/v1/jobs/{job}").json()
    assert body["id"] == job and body["kind"] == "extraction" and body["status"] in ("queued", "running", "succeeded")
    assert body["progress"] == {"done": 0, "total": 1} and set(body) >= {"result", "error", "created_at", "finished_at"}
    assert_error(client_b.get(f"/api/v1/jobs/{job}"), 404, "job_not_found")
    assert_error(client_a.get("/api/v1/jobs/job_nothex"), 404, "job_not_found")


def test_bound_key_sees_only_its_subjects_jobs(tenant_a, client_a, bound_alice):
    bob_job = post(client_a, "subjects/bob/events", {"event_id": "e1", "role": "user", "content": "hi"}).json()["job"]
    alice_job = post(bound_alice, "subjects/alice/events", {"event_id": "e1", "role": "user", "content": "hi"}).json()["job"]
    assert bound_alice.get(f"/api/v1/jobs/{alice_job}").status_code == 200
    assert_error(bound_alice.get(f"/api/v1/jobs/{bob_job}"), 404)


def test_erasing_a_subject_is_202_with_a_deletion_job_and_hides_it_at_once(tenant_a, client_a, client_b):
    write(client_a, "alice", "I like tea.")
    write(client_b, "alice", "Tenant B's alice likes coffee.")
    response = client_a.delete("/api/v1/subjects/alice")
    assert response.status_code == 202
    job = client_a.get(f"/api/v1/jobs/{response.json()['job']}").json()
    assert job["kind"] == "deletion"
    assert client_a.get("/api/v1/subjects/alice/memories").json()["results"] == []
    assert_error(post(client_a, "subjects/alice/memories", {"statement": "new"}), 409, "subject_erasing")
    # Tenant B's subject with the same id is untouched.
    assert len(client_b.get("/api/v1/subjects/alice/memories").json()["results"]) == 1


def test_export_request_is_202_with_an_export_job(client_a, client_b):
    pytest.importorskip("memoryapp.services.export")
    write(client_a, "alice", "I like tea.")
    response = post(client_a, "subjects/alice/exports")
    assert response.status_code == 202
    assert client_a.get(f"/api/v1/jobs/{response.json()['job']}").json()["kind"] == "export"
    assert_error(post(client_a, "subjects/alice/exports", {"format": "xml"}), 400)


def _export_file(tenant, subject_ref, content, expires_in=timedelta(hours=1)) -> ExportFile:
    from memoryapp.services.tenants import subject_get_or_create

    with as_tenant(tenant):
        # As the export job stores it: made from one Subject row.
        subject = subject_get_or_create(tenant=tenant, external_id=subject_ref)
        return ExportFile.objects.create(
            tenant=tenant, subject_ref=subject_ref, subject_row_id=subject.pk, content=json.dumps(content).encode(),
            size=10, expires_at=timezone.now() + expires_in,
        )


def test_export_download_is_for_its_tenant_only_and_until_it_expires(tenant_a, tenant_b, client_a, client_b):
    export = _export_file(tenant_a, "alice", {"subject": "alice", "memories": [], "events": []})
    path = f"/api/v1/exports/{export.public_id}"
    response = client_a.get(path)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert json.loads(response.content)["subject"] == "alice"
    assert_error(client_b.get(path), 404, "export_not_found")
    expired = _export_file(tenant_a, "alice", {"subject": "alice"}, expires_in=timedelta(seconds=-1))
    assert_error(client_a.get(f"/api/v1/exports/{expired.public_id}"), 404, "export_not_found")
    assert_error(client_a.get("/api/v1/exports/exp_zz"), 404)
    with as_tenant(tenant_a):
        assert ReadAudit.objects.filter(tenant=tenant_a, operation="export").count() == 1


def test_bound_key_cannot_download_another_subjects_export(tenant_a, bound_alice):
    bob = _export_file(tenant_a, "bob", {"subject": "bob"})
    alice = _export_file(tenant_a, "alice", {"subject": "alice"})
    assert_error(bound_alice.get(f"/api/v1/exports/{bob.public_id}"), 404)
    assert bound_alice.get(f"/api/v1/exports/{alice.public_id}").status_code == 200


def test_console_link_is_201_with_a_url_expiring_within_15_minutes(client_a):
    pytest.importorskip("memoryapp.services.signin")
    response = post(client_a, "subjects/alice/console-link")
    assert response.status_code == 201
    body = response.json()
    assert body["url"].startswith("http") and "/console/" in body["url"]
    from datetime import datetime

    expires = datetime.fromisoformat(body["expires_at"])
    assert timezone.now() < expires <= timezone.now() + timedelta(minutes=15)
    # Two links are two different single-use tokens.
    assert post(client_a, "subjects/alice/console-link").json()["url"] != body["url"]
