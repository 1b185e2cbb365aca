"""Forgetting a fact forgets what states it: its earlier versions and the messages it came from,
at once for every reader; the receipt says what was kept and why, and its verification looks for
the forgotten content itself, so it fails when a copy remains."""
import pytest

from memoryapp.models import Event, Job, Memory
from memoryapp.selectors.memories import parse_public_id
from tests.api.conftest import make_client, post, write
from tests.conftest import as_tenant
from tests.maintenance.conftest import run

pytestmark = pytest.mark.django_db

CONVERSATION = [
    {"event_id": "e1", "role": "user", "content": "I live in Springfield.", "occurred_at": "2026-01-05T10:00:00+00:00"},
    {"event_id": "e2", "role": "user", "content": "My sister plays the cello.", "occurred_at": "2026-01-05T10:01:00+00:00"},
    {"event_id": "e3", "role": "user", "content": "I moved to Shelbyville last month.",
     "occurred_at": "2026-03-01T10:00:00+00:00"},
]


def everything_an_agent_can_read(client, query):
    found = post(client, "subjects/alice/search", {"query": query, "k": 50, "include_superseded": True}).json()
    context = post(client, "subjects/alice/context", {"query": query}).json()["context"]
    listed = client.get("/api/v1/subjects/alice/memories?limit=500").json()["results"]
    return " ".join([*(r["statement"] for r in found["results"]), context, *(m["statement"] for m in listed)])


def job_of(tenant, response):
    assert response.status_code == 202, response.content
    with as_tenant(tenant):
        return Job.objects.get(pk=parse_public_id(response.json()["job"], "job"))


def test_forgetting_the_current_fact_forgets_its_versions_and_the_messages_that_state_them(tenant_a):
    client = make_client(tenant_a)
    post(client, "subjects/alice/events", {"events": CONVERSATION})
    with as_tenant(tenant_a):
        run(tenant_a, Job.objects.get(kind="extraction"))
        current = Memory.objects.get(key="user:home_city", status="active")
    assert "Shelbyville" in current.statement
    assert "Springfield" in everything_an_agent_can_read(client, "Where do I live?")

    job = job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{current.public_id}"))

    # Before the deletion job runs: nothing states either home to any reader.
    text = everything_an_agent_can_read(client, "Where do I live?")
    assert "Springfield" not in text and "Shelbyville" not in text
    assert "cello" in everything_an_agent_can_read(client, "What does my sister play?")

    job = run(tenant_a, job)
    assert job.status == "succeeded" and job.result["verification"]["passed"], job.result
    assert job.result["removed"]["events"] == 2
    with as_tenant(tenant_a):
        assert set(Event.objects.values_list("event_id", flat=True)) == {"e2"}
        left = " ".join(Memory.objects.values_list("statement", flat=True))
    assert "Springfield" not in left and "Shelbyville" not in left and "cello" in left


def test_the_receipt_fails_when_a_copy_of_the_forgotten_content_remains(tenant_a):
    client = make_client(tenant_a)
    doomed = write(client, "alice", "The user lives in Springfield.", namespace="home")
    write(client, "alice", "The user lives in Springfield.", namespace="travel")  # a copy elsewhere

    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{doomed['id']}")))

    verification = job.result["verification"]
    assert verification["passed"] is False
    assert verification["residue"].get("text:memory") == 1


def test_a_near_identical_copy_fails_the_receipt_too(tenant_a):
    client = make_client(tenant_a)
    doomed = write(client, "alice", "The user lives in Springfield.")
    write(client, "alice", "User lives in Springfield", namespace="travel")
    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{doomed['id']}")))
    assert job.result["verification"]["residue"].get("near_copy:memory") == 1


def test_a_different_fact_of_the_same_message_is_kept_and_the_receipt_says_so(tenant_a):
    client = make_client(tenant_a)
    post(client, "subjects/alice/events",
         {"event_id": "e1", "role": "user", "content": "I live in Springfield and I work at Globex."})
    with as_tenant(tenant_a):
        run(tenant_a, Job.objects.get(kind="extraction"))
        home = Memory.objects.get(key="user:home_city")
        work = Memory.objects.get(key="user:employer")
    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{home.public_id}")))
    assert job.result["verification"]["passed"], job.result
    assert job.result["kept"]["memories"] == 1 and "kept" in job.result["kept"]["why"]
    with as_tenant(tenant_a):
        work = Memory.objects.get(pk=work.pk)
        assert work.status == "active" and work.source_event_id is None  # its message is gone
        assert not Event.objects.exists()


def test_the_console_says_what_a_forget_takes_and_what_it_keeps(tenant_a):
    from django.test import Client
    from django.urls import reverse

    from memoryapp.services.signin import console_subject_user_get_or_create

    client = make_client(tenant_a)
    post(client, "subjects/alice/events", {"events": [
        {"event_id": "e1", "role": "user", "content": "I live in Springfield and I work at Globex.",
         "occurred_at": "2026-01-05T10:00:00+00:00"},
        {"event_id": "e2", "role": "user", "content": "I moved to Shelbyville last month.",
         "occurred_at": "2026-03-01T10:00:00+00:00"}]})
    with as_tenant(tenant_a):
        run(tenant_a, Job.objects.get(kind="extraction"))
        current = Memory.objects.get(key="user:home_city", status="active")
    browser = Client()
    browser.force_login(console_subject_user_get_or_create(tenant=tenant_a, subject_ref="alice"))
    page = browser.get(reverse("console:memory_forget", args=[current.public_id])).content.decode()
    assert "earlier version" in page and "Springfield" in page  # the value it replaced goes too
    assert "messages it was learned from (2)" in page
    assert "Kept: 1 other memory" in page and "Globex" in page


def test_a_summary_built_before_the_deletion_job_runs_leaves_the_forgotten_message_out(tenant_a):
    from memoryapp.actors import Actor
    from memoryapp.services.consolidation import consolidation_request

    client = make_client(tenant_a)
    post(client, "subjects/alice/events", {"events": [
        {"event_id": "e1", "role": "user", "content": "I live in Springfield.", "session_id": "s1"},
        {"event_id": "e2", "role": "user", "content": "My sister plays the cello.", "session_id": "s1"}]})
    with as_tenant(tenant_a):
        run(tenant_a, Job.objects.get(kind="extraction"))
        home = Memory.objects.get(key="user:home_city")
    deletion = job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{home.public_id}"))
    run(tenant_a, consolidation_request(tenant=tenant_a, subject_ref="alice", actor=Actor("system", "tests")))
    with as_tenant(tenant_a):
        summary = Memory.objects.get(metadata__kind="session_summary")
    assert "cello" in summary.statement and "Springfield" not in summary.statement
    assert run(tenant_a, deletion).result["verification"]["passed"]


def test_while_a_forget_waits_for_its_job_no_history_shows_the_forgotten_message(tenant_a):
    client = make_client(tenant_a)
    post(client, "subjects/alice/events",
         {"event_id": "e1", "role": "user", "content": "I live in Springfield and I work at Globex."})
    with as_tenant(tenant_a):
        run(tenant_a, Job.objects.get(kind="extraction"))
        home = Memory.objects.get(key="user:home_city")
        work = Memory.objects.get(key="user:employer")
    job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{home.public_id}"))
    history = client.get(f"/api/v1/subjects/alice/memories/{work.public_id}/history").json()
    assert "Springfield" not in str(history)  # the kept fact's source message is being erased


def test_forgetting_one_fact_keeps_an_unrelated_merge_drawn_from_the_same_message(tenant_a):
    from memoryapp.actors import Actor
    from memoryapp.services.consolidation import consolidation_request
    from tests.maintenance.conftest import write as service_write

    actor = Actor("system", "tests")
    client = make_client(tenant_a)
    post(client, "subjects/alice/events",
         {"event_id": "e1", "role": "user", "content": "I live in Springfield. My favourite drink is green tea."})
    with as_tenant(tenant_a):
        run(tenant_a, Job.objects.get(kind="extraction"))
        e1 = Event.objects.get(event_id="e1")
        home = Memory.objects.get(key="user:home_city")
    # Two near-duplicate tea facts, one drawn from the same message as the home city: merged.
    service_write(tenant_a, "alice", "The user's favourite drink is green tea.", actor, source_kind="user",
                  source_event=e1, namespace="drinks")
    service_write(tenant_a, "alice", "The user's favorite drink is green tea!", actor, source_kind="user",
                  namespace="drinks")
    run(tenant_a, consolidation_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    with as_tenant(tenant_a):
        merged = Memory.objects.get(namespace="drinks", status="active")
        assert merged.derived_from.count() == 2 and merged.evidence.filter(pk=e1.pk).exists()
    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{home.public_id}")))
    assert job.result["verification"]["passed"], job.result
    with as_tenant(tenant_a):
        merged = Memory.objects.get(pk=merged.pk)  # kept: it is about tea, not about where she lives
        assert merged.status == "active" and not merged.evidence.exists()


def test_forgetting_a_merged_fact_forgets_its_members_and_pending_proposals(tenant_a):
    from memoryapp.actors import Actor
    from memoryapp.services.consolidation import consolidation_request
    from memoryapp.services.memories import memory_correct

    client = make_client(tenant_a)
    write(client, "alice", "The user's favourite drink is green tea.")
    write(client, "alice", "The user's favorite drink is green tea!")  # a near-duplicate: merged
    run(tenant_a, consolidation_request(tenant=tenant_a, subject_ref="alice", actor=Actor("system", "tests")))
    with as_tenant(tenant_a):
        merged = Memory.objects.get(status="active", statement__icontains="green tea")
        member = Memory.objects.filter(superseded_by=merged).first()
    proposal = memory_correct(tenant=tenant_a, memory=merged, actor=Actor("system", "tests"),
                              memory_type="procedural")
    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{member.public_id}")))
    assert job.result["verification"]["passed"], job.result
    with as_tenant(tenant_a):
        assert not Memory.objects.filter(statement__icontains="green tea").exists()
        assert not Memory.objects.filter(pk=proposal.pk).exists()


def test_the_receipt_names_paraphrased_copies_and_leaves_other_values_alone(tenant_a):
    client = make_client(tenant_a)
    doomed = write(client, "alice", "My blood type is AB negative.")
    copies = [write(client, "alice", "Blood type: AB negative", namespace="medical"),
              write(client, "alice", "I have AB negative blood.", namespace="notes")]
    write(client, "alice", "My sister's blood type is O positive.", namespace="family")
    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{doomed['id']}")))
    verification = job.result["verification"]
    assert verification["passed"] is False
    assert set(verification["residue_memory_ids"]) == {c["id"] for c in copies}
    assert "paraphrase:memory" in verification["checked"]


def test_forgetting_one_value_does_not_report_another_value_of_the_same_attribute(tenant_a):
    client = make_client(tenant_a)
    doomed = write(client, "alice", "The user's favourite drink is tea.", namespace="drinks")
    write(client, "alice", "The user's favourite drink is coffee.", namespace="cafe")
    write(client, "alice", "I live in Springfield.", namespace="home")
    job = run(tenant_a, job_of(tenant_a, client.delete(f"/api/v1/subjects/alice/memories/{doomed['id']}")))
    assert job.result["verification"]["passed"], job.result["verification"]
