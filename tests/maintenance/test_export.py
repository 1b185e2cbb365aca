"""Export: one documented JSON document with everything about the subject, produced by a job
with progress, readable only by its tenant, gone after its time."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.errors import NotFound
from memoryapp.models import ExportFile, Memory
from memoryapp.selectors.exports import export_file_get
from memoryapp.services.export import FORMAT, export_purge_expired, export_request
from memoryapp.services.memories import memory_correct
from tests.conftest import as_tenant
from tests.maintenance.conftest import append, run, write

pytestmark = pytest.mark.django_db


def document(tenant, job):
    with as_tenant(tenant):
        export = export_file_get(tenant=tenant, export_id=job.result["export"])
        return json.loads(bytes(export.content).decode())


def test_export_contains_events_every_version_lineage_and_audit(tenant_a, actor):
    events = append(tenant_a, "alice", actor, ("e-1", "user", "I moved to Oslo in March.", "s-1"),
                    ("e-2", "assistant", "Noted, welcome to Oslo.", "s-1"))
    with as_tenant(tenant_a):
        from memoryapp.models import Event
        source = Event.objects.get(pk=events[0].pk)
    old = write(tenant_a, "alice", "Alice lives in Oslo.", actor, key="user:home_city", source_event=source)
    new = memory_correct(tenant=tenant_a, memory=old, statement="Alice lives in Oslo, in Grünerløkka.", actor=actor)
    derived = write(tenant_a, "alice", "Summary: Alice is an Oslo resident.", actor, source_kind="system",
                    memory_type="episodic", derived_from=[new])
    write(tenant_a, "bob", "Bob's fact must not be exported with Alice's.", actor)

    job = run(tenant_a, export_request(tenant=tenant_a, subject_ref="alice", actor=actor))

    assert job.status == "succeeded", job.error
    assert job.result["download"] == f"/api/v1/exports/{job.result['export']}"
    assert job.progress_total == 5 and job.progress_done == 5  # 2 events + 3 memories
    doc = document(tenant_a, job)
    assert doc["format"] == FORMAT == "memory-export/v1"
    assert doc["subject"]["id"] == "alice"
    assert [e["content"] for e in doc["events"]] == ["I moved to Oslo in March.", "Noted, welcome to Oslo."]
    by_id = {m["id"]: m for m in doc["memories"]}
    assert set(by_id) == {old.public_id, new.public_id, derived.public_id}
    assert by_id[old.public_id]["status"] == "superseded" and by_id[old.public_id]["superseded_by"] == new.public_id
    assert by_id[new.public_id]["statement"] == "Alice lives in Oslo, in Grünerløkka."
    assert {"memory_id": old.public_id, "superseded_by": new.public_id} in doc["lineage"]["supersedes"]
    assert {"derived_id": derived.public_id, "source_id": new.public_id, "kind": "derived"} in doc["lineage"][
        "derived_from"]
    assert {"memory_id": old.public_id, "event_id": source.public_id} in doc["lineage"]["evidence"]
    actions = [a["action"] for a in doc["audit"]]
    assert "memory_corrected" in actions and "events_appended" in actions and "export_requested" in actions
    corrected = next(a for a in doc["audit"] if a["action"] == "memory_corrected")
    assert corrected["before"]["statement"] == "Alice lives in Oslo."
    assert "Bob" not in json.dumps(doc)


def test_another_tenant_cannot_fetch_the_export(tenant_a, tenant_b, actor):
    write(tenant_a, "alice", "Alice's secret hobby is competitive yodelling.", actor)
    job = run(tenant_a, export_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    export_id = job.result["export"]
    with as_tenant(tenant_b):
        with pytest.raises(NotFound):
            export_file_get(tenant=tenant_b, export_id=export_id)
        # Row-level security hides it even from an unscoped query.
        assert ExportFile.objects.count() == 0
    with as_tenant(tenant_a):
        assert export_file_get(tenant=tenant_a, export_id=export_id).subject_ref == "alice"


def test_malformed_and_unknown_export_ids_are_not_found(tenant_a):
    with as_tenant(tenant_a):
        for bad in ("", "exp_zz", "mem_00000000000000000000000000000000", "exp_" + "0" * 32):
            with pytest.raises(NotFound):
                export_file_get(tenant=tenant_a, export_id=bad)


def test_export_of_a_missing_subject_is_refused_as_not_found(tenant_a, actor):
    with pytest.raises(NotFound):
        export_request(tenant=tenant_a, subject_ref="nobody", actor=actor)


def test_expired_exports_are_unreadable_and_purged_in_every_tenant(tenant_a, tenant_b, actor):
    for tenant in (tenant_a, tenant_b):
        write(tenant, "alice", "Alice's fact.", actor)
        run(tenant, export_request(tenant=tenant, subject_ref="alice", actor=actor))
        run(tenant, export_request(tenant=tenant, subject_ref="alice", actor=actor))
        with as_tenant(tenant):
            first = ExportFile.objects.order_by("created_at").first()
            ExportFile.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
            with pytest.raises(NotFound):
                export_file_get(tenant=tenant, export_id=first.public_id)

    assert export_purge_expired() == 2

    for tenant in (tenant_a, tenant_b):
        with as_tenant(tenant):
            assert ExportFile.objects.count() == 1


def test_export_expiry_follows_the_setting(tenant_a, actor, settings):
    settings.MEMORY_EXPORT_TTL_HOURS = 2
    write(tenant_a, "alice", "Alice's fact.", actor)
    job = run(tenant_a, export_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    with as_tenant(tenant_a):
        export = ExportFile.objects.get()
        assert timedelta(hours=1, minutes=59) < export.expires_at - export.created_at <= timedelta(hours=2)
        assert Memory.objects.count() == 1
