"""Nothing of an erased person reaches whoever later uses the same subject id, and nothing being
erased is served while the erasure waits for its job: exports are withdrawn the moment a forget
or an erasure is accepted."""
import json
import threading

import pytest
from django.urls import reverse

from memoryapp.models import ExportFile, Job, Memory
from memoryapp.selectors.memories import parse_public_id
from tests.api.conftest import make_client, post
from tests.conftest import as_tenant
from tests.maintenance.conftest import run

pytestmark = pytest.mark.django_db(transaction=True)


def job_of(tenant, response):
    assert response.status_code == 202, response.content
    with as_tenant(tenant):
        return Job.objects.get(pk=parse_public_id(response.json()["job"], "job"))


def export_now(client, tenant, subject):
    job = run(tenant, job_of(tenant, post(client, f"subjects/{subject}/exports")))
    assert job.status == "succeeded", job.error
    return job.result["download"]


def test_a_reused_subject_id_gets_none_of_the_erased_persons_trail(tenant_a):
    client = make_client(tenant_a)
    first = post(client, "subjects/sam/memories", {"statement": "I grew up in Ravenna."}).json()
    post(client, "subjects/sam/events", {"event_id": "old-1", "role": "user", "content": "I keep bees."})
    with as_tenant(tenant_a):
        extraction = Job.objects.get(kind="extraction", subject_ref="sam")
    run(tenant_a, extraction)
    post(client, "subjects/sam/search", {"query": "where did I grow up"})
    old_export = export_now(client, tenant_a, "sam")
    erasure = run(tenant_a, job_of(tenant_a, client.delete("/api/v1/subjects/sam")))
    assert erasure.result["verification"]["passed"], erasure.result

    # Someone new gets the id.
    second = post(client, "subjects/sam/memories", {"statement": "I prefer window seats."}).json()
    document = json.loads(client.get(export_now(client, tenant_a, "sam")).content)

    assert [m["statement"] for m in document["memories"]] == ["I prefer window seats."]
    assert document["events"] == []
    text = json.dumps(document["audit"])
    for trace in (first["id"], extraction.public_id, erasure.public_id, old_export.rsplit("/", 1)[-1], "old-1"):
        assert trace not in text, trace
    assert {entry["action"] for entry in document["audit"]} <= {"memory_written", "export_requested"}
    assert second["id"] in text
    assert client.get(old_export).status_code == 404


@pytest.mark.parametrize("how", ["erase", "forget"])
def test_exports_are_withdrawn_the_moment_an_erasure_or_a_forget_is_accepted(tenant_a, how):
    client = make_client(tenant_a)
    memory = post(client, "subjects/sam/memories", {"statement": "My allotment is plot 14 by the canal."}).json()
    download = export_now(client, tenant_a, "sam")
    assert client.get(download).status_code == 200

    if how == "erase":
        response = client.delete("/api/v1/subjects/sam")
    else:
        response = client.delete(f"/api/v1/subjects/sam/memories/{memory['id']}")
    assert response.status_code == 202

    # The deletion job has not run yet: the file is already gone for every door.
    response = client.get(download)
    assert response.status_code == 404 and response.json()["error"]["code"] == "export_not_found"
    bound = make_client(tenant_a, "sam")
    assert bound.get(download).status_code == 404


def test_the_console_download_is_withdrawn_too(tenant_a):
    from django.test import Client

    from memoryapp.services.signin import console_subject_user_get_or_create

    client = make_client(tenant_a)
    post(client, "subjects/sam/memories", {"statement": "My allotment is plot 14 by the canal."})
    export_id = export_now(client, tenant_a, "sam").rsplit("/", 1)[-1]
    browser = Client()
    browser.force_login(console_subject_user_get_or_create(tenant=tenant_a, subject_ref="sam"))
    url = reverse("console:export_download", args=[export_id])
    assert browser.get(url).status_code == 200
    client.delete("/api/v1/subjects/sam")  # accepted; the deletion job has not run
    assert browser.get(url).status_code == 404


def test_an_idempotent_replay_does_not_hand_back_what_is_being_erased(tenant_a):
    client = make_client(tenant_a)
    body = {"statement": "My allotment is plot 14 by the canal."}
    first = post(client, "subjects/sam/memories", body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 201
    replay = post(client, "subjects/sam/memories", body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert replay.status_code == 201 and replay.json() == first.json()
    client.delete(f"/api/v1/subjects/sam/memories/{first.json()['id']}")
    replay = post(client, "subjects/sam/memories", body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert replay.status_code == 409 and "plot 14" not in replay.content.decode()


def test_the_next_holder_of_an_id_does_not_see_the_previous_ones_jobs_in_the_console(tenant_a):
    from django.test import Client

    from memoryapp.services.signin import console_subject_user_get_or_create

    client = make_client(tenant_a)
    post(client, "subjects/sam/memories", {"statement": "I grew up in Ravenna."})
    old_export = run(tenant_a, job_of(tenant_a, post(client, "subjects/sam/exports")))
    erasure = run(tenant_a, job_of(tenant_a, client.delete("/api/v1/subjects/sam")))
    post(client, "subjects/sam/memories", {"statement": "I prefer window seats."})
    new_export = run(tenant_a, job_of(tenant_a, post(client, "subjects/sam/exports")))

    browser = Client()
    browser.force_login(console_subject_user_get_or_create(tenant=tenant_a, subject_ref="sam"))
    for job in (old_export, erasure):
        assert browser.get(reverse("console:job", args=[job.public_id])).status_code == 404
    assert browser.get(reverse("console:job", args=[new_export.public_id])).status_code == 200


def test_an_export_built_while_a_forget_is_accepted_is_never_served(tenant_a, monkeypatch):
    """The forget withdraws the files that exist when it is accepted and its job deletes those
    committed before it runs; one being built meanwhile checks, under the subject's row lock,
    that nothing in it went away, and fails instead of being served."""
    from memoryapp.actors import Actor
    from memoryapp.services import export as export_service
    from memoryapp.services.export import export_request
    from memoryapp.services.memories import memory_forget

    client = make_client(tenant_a)
    doomed = post(client, "subjects/sam/memories", {"statement": "My allotment is plot 14 by the canal."}).json()
    post(client, "subjects/sam/memories", {"statement": "I prefer window seats."})
    job = export_request(tenant=tenant_a, subject_ref="sam", actor=Actor("system", "tests"))
    real = export_service._audit_json
    done = []

    def forget_meanwhile(entry):
        if not done:  # once, while the export's transaction is open and its file not yet written
            done.append(True)
            from django.db import connection

            def forget():
                try:
                    with as_tenant(tenant_a):
                        memory = Memory.objects.get(pk=parse_public_id(doomed["id"], "mem"))
                    run(tenant_a, memory_forget(tenant=tenant_a, memory=memory, actor=Actor("system", "tests")))
                finally:
                    connection.close()

            thread = threading.Thread(target=forget)
            thread.start()
            thread.join(60)
        return real(entry)

    monkeypatch.setattr(export_service, "_audit_json", forget_meanwhile)
    job = run(tenant_a, job)
    assert job.status == "failed" and "request a new export" in job.error
    with as_tenant(tenant_a):
        assert not any(b"plot 14" in bytes(f.content) for f in ExportFile.objects.all())


def test_a_key_bound_to_a_reused_id_does_not_read_the_previous_holders_jobs(tenant_a):
    client = make_client(tenant_a)
    bound = make_client(tenant_a, "sam")
    post(client, "subjects/sam/memories", {"statement": "I grew up in Ravenna."})
    erasure = run(tenant_a, job_of(tenant_a, client.delete("/api/v1/subjects/sam")))
    # Nobody holds the id yet: whoever is bound to it reads the erasure's receipt.
    assert bound.get(f"/api/v1/jobs/{erasure.public_id}").status_code == 200
    post(client, "subjects/sam/memories", {"statement": "I prefer window seats."})
    assert bound.get(f"/api/v1/jobs/{erasure.public_id}").status_code == 404


def test_the_admins_audit_filter_by_subject_shows_who_holds_the_id_now(tenant_a):
    from memoryapp.selectors.console import audit_entries

    client = make_client(tenant_a)
    first = post(client, "subjects/sam/memories", {"statement": "I grew up in Ravenna."}).json()
    run(tenant_a, job_of(tenant_a, client.delete("/api/v1/subjects/sam")))
    second = post(client, "subjects/sam/memories", {"statement": "I prefer window seats."}).json()
    with as_tenant(tenant_a):
        shown = list(audit_entries(tenant=tenant_a, subject_ref="sam"))
    assert shown and {e.memory_id.hex for e in shown if e.memory_id} == {second["id"][4:]}
    assert first["id"][4:] not in {e.memory_id.hex for e in shown if e.memory_id}
