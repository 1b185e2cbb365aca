"""With several worker processes, a subject's extraction jobs still run one after another
(services/extraction.SubjectsInTurn), while other subjects' jobs go on."""
import threading
import time

import pytest
from django.db import connection, connections

from memoryapp.models import Event
from memoryapp.services.extraction import subject_lock_key
from tests.conftest import as_tenant
from tests.workers.helpers import append, run_job_here

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _statuses(tenant, subject):
    with as_tenant(tenant):
        return set(Event.objects.filter(tenant=tenant, subject__external_id=subject).values_list("status", flat=True))


def _run_in_thread(tenant, job):
    def target():
        try:
            run_job_here(tenant, job)
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    return thread


def _hold(tenant, event_id):
    """Another worker's connection holding the subject of `event_id`, as an earlier job of that
    subject would. Close it to let go (a worker that finishes or dies)."""
    with as_tenant(tenant):
        subject_id = Event.objects.get(tenant=tenant, event_id=event_id).subject_id
    holder = connections.create_connection("default")
    with holder.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                       [subject_lock_key(tenant_id=tenant.pk, subject_id=subject_id)])
    return holder


def test_a_subjects_job_waits_while_another_job_of_that_subject_runs(tenant_a, actor):
    append(tenant_a, "alice", actor, ("a1", "user", "I live in Lisbon."))
    _, later = append(tenant_a, "alice", actor, ("a2", "user", "I moved to Porto last week."))
    _, other = append(tenant_a, "bob", actor, ("b1", "user", "I work at Bosch."))
    holder = _hold(tenant_a, "a2")  # another worker holds alice
    try:
        waiting = _run_in_thread(tenant_a, later)
        run_job_here(tenant_a, other)  # bob's job is not held up
        assert _statuses(tenant_a, "bob") == {"processed"}
        time.sleep(1.5)
        assert waiting.is_alive()
        with as_tenant(tenant_a):
            assert Event.objects.get(tenant=tenant_a, event_id="a2").status == Event.Status.PENDING
    finally:
        holder.close()  # the holder's worker is done (or died): its locks go with its connection
    waiting.join(timeout=60)
    assert not waiting.is_alive()
    with as_tenant(tenant_a):
        assert Event.objects.get(tenant=tenant_a, event_id="a2").status == Event.Status.PROCESSED


def test_a_wait_past_its_bound_fails_the_attempt_and_leaves_nothing_held(tenant_a, actor, monkeypatch):
    from datetime import timedelta

    from django.db import OperationalError

    from memoryapp.services import extraction

    monkeypatch.setattr(extraction, "SUBJECT_WAIT", timedelta(seconds=1))
    _, job = append(tenant_a, "alice", actor, ("a1", "user", "I live in Lisbon."))
    holder = _hold(tenant_a, "a1")
    try:
        with pytest.raises(OperationalError):
            run_job_here(tenant_a, job)  # job_run hands the job back for a retry
    finally:
        holder.close()
    with as_tenant(tenant_a):
        assert Event.objects.get(tenant=tenant_a, event_id="a1").status == Event.Status.PENDING
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        assert cursor.fetchone()[0] == 0
    run_job_here(tenant_a, job)  # the holder is gone: the retry runs
    with as_tenant(tenant_a):
        assert Event.objects.get(tenant=tenant_a, event_id="a1").status == Event.Status.PROCESSED


def _held_elsewhere(key: str) -> bool:
    """Whether another session holds the advisory lock of `key` (this probe cannot take it)."""
    probe = connections.create_connection("default")
    try:
        with probe.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [key])
            return not cursor.fetchone()[0]
    finally:
        probe.close()


def test_subjects_are_taken_again_when_their_connection_was_replaced_and_only_then(tenant_a, actor, caplog):
    from memoryapp.models import Job
    from memoryapp.services.extraction import SubjectsInTurn

    _, job = append(tenant_a, "alice", actor, ("a1", "user", "I live in Lisbon."))
    with as_tenant(tenant_a):
        job = Job.objects.get(pk=job.pk)
    turn = SubjectsInTurn(tenant=tenant_a, job=job)
    with turn:
        (key,) = turn.keys
        assert _held_elsewhere(key)
        turn.keep()  # the same connection: nothing to do, nothing said
        assert "lost its connection" not in caplog.text
        connection.close()  # as Django does after a failed transaction: the locks go with it
        assert not _held_elsewhere(key)
        turn.keep()
        assert "lost its connection" in caplog.text
        assert _held_elsewhere(key)
    assert not _held_elsewhere(key)
