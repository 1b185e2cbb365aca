"""Reindex re-embeds what an older model embedded, in batches, resumably; replay rebuilds a
subject's extracted memories from its events and keeps what the user stated explicitly."""
import numpy as np
import pytest

from memoryapp import embeddings
from memoryapp.errors import NotFound
from memoryapp.models import Event, Job, Memory
from memoryapp.services.reindex import reindex_request, replay_request
from tests.conftest import as_tenant
from tests.maintenance.conftest import append, run, write

pytestmark = pytest.mark.django_db

OLD = "old-model@0"


def make_stale(tenant, n_alice=5):
    for i in range(n_alice):
        write(tenant, "alice", f"Alice fact number {i} about sailing.", _actor())
    with as_tenant(tenant):
        Memory.objects.update(embedding_version=OLD, embedding=np.zeros(384, dtype=np.float32) + 0.01)


def _actor():
    from memoryapp.actors import Actor

    return Actor("system", "tests")


def test_reindex_stopped_halfway_is_continued_by_a_rerun(tenant_a, actor):
    make_stale(tenant_a)
    first = run(tenant_a, reindex_request(tenant=tenant_a, actor=actor, batch_size=2, max_batches=1))
    assert first.status == "succeeded"
    assert first.result == {"reembedded": 2, "batches": 1, "remaining": 3, "complete": False,
                            "embedding_version": embeddings.EMBEDDING_VERSION}
    assert first.progress_done == 2 and first.progress_total == 5
    with as_tenant(tenant_a):
        assert Memory.objects.filter(embedding_version=OLD).count() == 3

    rest = run(tenant_a, reindex_request(tenant=tenant_a, actor=actor, batch_size=2))

    assert rest.result["reembedded"] == 3 and rest.result["batches"] == 2 and rest.result["complete"] is True
    with as_tenant(tenant_a):
        for memory in Memory.objects.all():
            assert memory.embedding_version == embeddings.EMBEDDING_VERSION
            expected = embeddings.embed_text(memory.statement, partition=None)
            assert float(np.dot(np.asarray(memory.embedding), expected)) > 0.999
    # Nothing left: a third run does nothing.
    assert run(tenant_a, reindex_request(tenant=tenant_a, actor=actor)).result["reembedded"] == 0


def test_reindex_stays_inside_its_tenant(tenant_a, tenant_b, actor):
    make_stale(tenant_a, 2)
    make_stale(tenant_b, 2)
    run(tenant_a, reindex_request(tenant=tenant_a, actor=actor))
    with as_tenant(tenant_b):
        assert Memory.objects.filter(embedding_version=OLD).count() == 2


def test_replay_rebuilds_extracted_memories_and_keeps_explicit_ones(tenant_a, tenant_b, actor):
    events = append(tenant_a, "alice", actor, ("e-1", "user", "I moved to Tallinn last month."),
                    ("e-2", "user", "I really love rye bread."))
    with as_tenant(tenant_a):
        first_job = Job.objects.get(kind="extraction")
    run(tenant_a, first_job)
    explicit = write(tenant_a, "alice", "Call me Ally.", actor, key="user:nickname")
    with as_tenant(tenant_a):
        extracted_before = set(Memory.objects.exclude(source_kind="user_explicit").values_list("pk", flat=True))
        assert extracted_before  # the extractor made something from the events
        assert Event.objects.filter(status="processed").count() == 2
    append(tenant_b, "alice", actor, ("e-1", "user", "Tenant B's alice lives in Riga."))

    replay = run(tenant_a, replay_request(tenant=tenant_a, subject_ref="alice", actor=actor))

    assert replay.status == "succeeded", replay.error
    assert replay.result["memories_deleted"] == len(extracted_before) and replay.result["events_reset"] == 2
    with as_tenant(tenant_a):
        assert Memory.objects.exclude(source_kind="user_explicit").count() == 0
        assert Memory.objects.get(pk=explicit.pk).status == "active"
        extraction = Job.objects.get(id=Job.objects.get(pk=replay.pk).result["extraction_job"][4:])
        assert set(Event.objects.values_list("status", "job_id")) == {("pending", extraction.pk)}
    rebuilt = run(tenant_a, extraction)
    assert rebuilt.status == "succeeded", rebuilt.error
    with as_tenant(tenant_a):
        rebuilt_ids = set(Memory.objects.exclude(source_kind="user_explicit").values_list("pk", flat=True))
        assert rebuilt_ids and not (rebuilt_ids & extracted_before)
        assert Event.objects.filter(status="processed").count() == 2
        assert Memory.objects.get(pk=explicit.pk).status == "active"
    with as_tenant(tenant_b):
        assert Event.objects.get().status == "pending" and Event.objects.get().job.kind == "extraction"


def test_replay_of_another_tenants_subject_is_not_found(tenant_a, tenant_b, actor):
    write(tenant_b, "carol", "Carol's fact.", actor)
    with pytest.raises(NotFound):
        replay_request(tenant=tenant_a, subject_ref="carol", actor=actor)


def test_reindex_command_queues_a_job_only_where_memories_are_stale(tenant_a, tenant_b, actor):
    from io import StringIO

    from django.core.management import CommandError, call_command

    make_stale(tenant_a, 2)
    write(tenant_b, "carol", "Carol's current fact.", actor)
    out = StringIO()
    call_command("reindex", stdout=out)
    assert "tenant-a: job_" in out.getvalue() and "(2 memories)" in out.getvalue()
    assert "tenant-b: up to date" in out.getvalue()
    with as_tenant(tenant_a):
        assert Job.objects.filter(kind="reindex").count() == 1
    with as_tenant(tenant_b):
        assert Job.objects.filter(kind="reindex").count() == 0
    with pytest.raises(CommandError):
        call_command("reindex", tenant="nope", stdout=StringIO())


def test_reindex_gives_memories_written_before_clause_vectors_theirs(tenant_a, actor):
    from django.db import connection

    write(tenant_a, "alice", "The kiln at the pottery studio cracked again. Could you suggest a glaze recipe?", _actor())
    write(tenant_a, "alice", "I throw pots on Saturdays.", _actor())
    with as_tenant(tenant_a):
        Memory.objects.update(embedding_version=OLD, clause_embeddings=None)
    run(tenant_a, reindex_request(tenant=tenant_a, actor=actor))
    with as_tenant(tenant_a), connection.cursor() as cursor:
        cursor.execute("SELECT statement, cardinality(clause_embeddings) FROM memoryapp_memory ORDER BY statement")
        counts = dict(cursor.fetchall())
    assert counts == {"I throw pots on Saturdays.": None,
                      "The kiln at the pottery studio cracked again. Could you suggest a glaze recipe?": 2}
