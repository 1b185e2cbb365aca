"""bulk_insert writes the same rows as bulk_create, through one array per column."""
from datetime import datetime, timezone as dt_timezone

import numpy as np
import pytest
from django.db import connection, transaction

from memoryapp import embeddings
from memoryapp.bulk_insert import bulk_insert, text_array
from memoryapp.models import Memory
from memoryapp.services.tenants import subject_get_or_create
from memoryapp.tenancy import tenant_activate

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=dt_timezone.utc)
AWKWARD = ['plain', 'say "hi"', 'back\\slash', "it's", "NULL", "", "{braces},commas", "ünïcödé ✓", "tab\tand\nnewline",
           '\\"', "a\\\\b"]


def test_a_text_array_literal_reads_back_as_the_same_strings():
    values = [*AWKWARD, None]
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::text[]", [text_array(values)])
        assert cursor.fetchone()[0] == values


def _memories(tenant, subject, statements, seed):
    rng = np.random.default_rng(seed)
    vectors = embeddings.stored_vectors(rng.standard_normal((len(statements), 384)).astype(np.float32))
    clauses = embeddings.stored_vectors(rng.standard_normal((2, 384)).astype(np.float32))
    return [
        Memory(tenant=tenant, subject=subject, memory_type=Memory.Type.EPISODIC, statement=statement,
               source_kind="user", valid_from=T0, metadata={"seq": i, "said": statement},
               flags=[statement] if i % 3 else [], content_hash=f"h{seed}-{i}", embedding=vectors[i],
               clause_embeddings=clauses if i % 2 else None, embedding_version="v1",
               expires_at=T0 if i % 4 == 0 else None)
        for i, statement in enumerate(statements)
    ]


def test_rows_are_those_bulk_create_writes(tenant_a):
    statements = [f"user: {text} on Monday" if i % 2 else f"user: {text}" for i, text in enumerate(AWKWARD)]
    with transaction.atomic():
        tenant_activate(tenant=tenant_a)
        subject = subject_get_or_create(tenant=tenant_a, external_id="alice")
        by_django = Memory.objects.bulk_create(_memories(tenant_a, subject, statements, seed=1))
        ours = bulk_insert(Memory, _memories(tenant_a, subject, statements, seed=1))
        assert all(not m._state.adding for m in ours)
        columns = [f.column for f in Memory._meta.concrete_fields if f.column not in ("id", "recorded_at")]
        with connection.cursor() as cursor:
            for theirs, mine in zip(by_django, ours):
                rows = []
                for memory in (theirs, mine):
                    cursor.execute(f"SELECT {', '.join(columns)}, recorded_at IS NOT NULL FROM memoryapp_memory "
                                   "WHERE id = %s", [memory.pk])
                    rows.append(cursor.fetchone())
                assert rows[0] == rows[1]
        # The generated columns were computed, the vectors stored as given.
        mine = Memory.objects.get(pk=ours[1].pk)
        assert mine.has_time_reference is True
        assert np.allclose(np.array(mine.embedding), ours[1].embedding.to_numpy(), atol=1e-6)
        assert Memory.objects.filter(pk__in=[m.pk for m in ours], search_vector__isnull=False).count() == len(ours)


def test_nothing_to_insert_is_no_statement(tenant_a):
    assert bulk_insert(Memory, []) == []
