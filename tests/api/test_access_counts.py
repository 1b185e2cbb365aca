"""A memory's access count says how often it was recalled (forgetting weighs it). Reads write only
their read audit row; the worker folds those rows into the counts (services/accesses.py), so a
read never waits for a memory's row lock, and each read is counted exactly once."""
import threading
import time
from contextlib import contextmanager

import pytest
from django.db import DatabaseError, connections
from django.utils import timezone

from memoryapp.models import Memory, ReadAudit
from memoryapp.services.accesses import accesses_fold
from tests.api.conftest import post, write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


@contextmanager
def memories_locked_elsewhere(tenant):
    """Another connection holds a row lock on every memory of `tenant` meanwhile, as a writer
    does (an extraction's chunk while it supersedes or adds evidence, an erasure)."""
    held, release = threading.Event(), threading.Event()

    def hold():
        holder = connections.create_connection("default")
        try:
            with holder.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant.pk)])
                cursor.execute("SELECT 1 FROM memoryapp_memory WHERE tenant_id = %s FOR UPDATE", [tenant.pk])
                held.set()
                release.wait(30)
                cursor.execute("ROLLBACK")
        finally:
            holder.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        thread.join()


def counts(tenant):
    with as_tenant(tenant):
        return {m.public_id: (m.access_count, m.last_accessed_at)
                for m in Memory.objects.filter(tenant=tenant, access_count__gt=0)}


def test_each_memory_a_search_returned_is_counted_once_when_folded(tenant_a, client_a):
    write(client_a, "alice", "I am vegetarian.")
    write(client_a, "alice", "I live in Lisbon.")
    write(client_a, "bob", "I am vegetarian too.")
    before = timezone.now()
    answer = post(client_a, "subjects/alice/search", {"query": "vegetarian", "k": 1}).json()
    returned = [r["id"] for r in answer["results"]]
    assert len(returned) == 1
    assert counts(tenant_a) == {}  # the read itself wrote nothing on the memory

    assert accesses_fold(tenant=tenant_a) == 1
    counted = counts(tenant_a)
    assert list(counted) == returned and counted[returned[0]][0] == 1 and counted[returned[0]][1] >= before
    assert accesses_fold(tenant=tenant_a) == 0  # nothing counted twice
    assert counts(tenant_a) == counted

    post(client_a, "subjects/alice/context", {"query": "vegetarian"})
    post(client_a, "subjects/alice/search", {"query": "vegetarian", "k": 1})
    assert accesses_fold(tenant=tenant_a) == 2
    assert counts(tenant_a)[returned[0]][0] == 3


def test_reads_that_recall_nothing_count_nothing(tenant_a, client_a):
    memory = write(client_a, "alice", "I am vegetarian.")
    client_a.get(f"/api/v1/subjects/alice/memories/{memory['id']}")
    client_a.get("/api/v1/subjects/alice/memories")
    assert accesses_fold(tenant=tenant_a) == 0
    assert counts(tenant_a) == {}
    with as_tenant(tenant_a):  # the reads are audited all the same, and left nothing for a fold
        reads = ReadAudit.objects.filter(tenant=tenant_a, subject_ref="alice")
        assert reads.count() == 2 and not reads.filter(accesses_counted=False).exists()


@pytest.mark.django_db(transaction=True)
def test_a_search_does_not_wait_for_a_memory_another_transaction_holds(tenant_a, client_a):
    memory = write(client_a, "alice", "I am vegetarian.")
    with memories_locked_elsewhere(tenant_a):
        started = time.monotonic()
        response = post(client_a, "subjects/alice/search", {"query": "vegetarian"})
        took = time.monotonic() - started
        assert [r["id"] for r in response.json()["results"]] == [memory["id"]]
        assert took < 2, f"the search waited {took:.1f} s for the row lock"
    assert accesses_fold(tenant=tenant_a) == 1
    assert counts(tenant_a)[memory["id"]][0] == 1


@pytest.mark.django_db(transaction=True)
def test_a_read_audited_while_a_fold_runs_is_counted_by_the_next(tenant_a, client_a):
    memory = write(client_a, "alice", "I am vegetarian.")
    post(client_a, "subjects/alice/search", {"query": "vegetarian"})
    other = connections.create_connection("default")
    try:
        # Another fold has taken the first read's row and not committed yet.
        with other.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_a.pk)])
            cursor.execute("SELECT id FROM memoryapp_readaudit WHERE tenant_id = %s AND NOT accesses_counted "
                           "FOR UPDATE", [tenant_a.pk])
            assert len(cursor.fetchall()) == 1
        post(client_a, "subjects/alice/search", {"query": "vegetarian"})
        assert accesses_fold(tenant=tenant_a) == 1  # the second read; the first is the other's
        with other.cursor() as cursor:
            cursor.execute("ROLLBACK")  # the other fold failed: its row is still uncounted
    finally:
        other.close()
    assert accesses_fold(tenant=tenant_a) == 1
    assert counts(tenant_a)[memory["id"]][0] == 2


@pytest.mark.django_db(transaction=True)
def test_a_fold_gives_up_on_a_memory_a_writer_holds_and_counts_it_later(tenant_a, client_a):
    memory = write(client_a, "alice", "I am vegetarian.")
    post(client_a, "subjects/alice/search", {"query": "vegetarian"})
    with memories_locked_elsewhere(tenant_a):
        started = time.monotonic()
        with pytest.raises(DatabaseError):
            accesses_fold(tenant=tenant_a)
        assert time.monotonic() - started < 1  # it did not hold its own locks while waiting
    assert counts(tenant_a) == {}
    assert accesses_fold(tenant=tenant_a) == 1
    assert counts(tenant_a)[memory["id"]][0] == 1


def test_a_fold_inside_a_callers_transaction_leaves_its_lock_timeout_alone(tenant_a, client_a):
    from django.db import connection, transaction

    write(client_a, "alice", "I am vegetarian.")
    post(client_a, "subjects/alice/search", {"query": "vegetarian"})
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('lock_timeout')")
            before = cursor.fetchone()[0]
            assert accesses_fold(tenant=tenant_a) == 1
            cursor.execute("SELECT current_setting('lock_timeout')")
            assert cursor.fetchone()[0] == before != "200ms"
