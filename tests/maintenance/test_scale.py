"""Erasure at the size of a capped subject: thousands of rows go in batches, with progress, and
the verification still passes. Marked slow; prints the time it took."""
import time
import uuid

import numpy as np
import pytest
from django.utils import timezone

from memoryapp.models import Event, Memory, MemoryEvidence, Subject
from memoryapp.services.memories import subject_erase_request
from tests.conftest import as_tenant
from tests.maintenance.conftest import run

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

N = 1000


def test_erasing_a_subject_with_thousands_of_rows_finishes_in_batches_and_verifies(tenant_a, tenant_b, actor):
    rng = np.random.default_rng(0)
    now = timezone.now()
    for tenant in (tenant_a, tenant_b):
        with as_tenant(tenant):
            subject = Subject.objects.create(tenant=tenant, external_id="bulk", last_seq=N)
            events = Event.objects.bulk_create([
                Event(tenant=tenant, subject=subject, event_id=f"e{i}", seq=i + 1, role="user", source_kind="user",
                      content=f"Bulk event number {i} about topic {uuid.uuid4().hex}", occurred_at=now)
                for i in range(N)
            ])
            vectors = rng.normal(size=(N, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            memories = Memory.objects.bulk_create([
                Memory(tenant=tenant, subject=subject, statement=f"Bulk memory {i} {uuid.uuid4().hex}",
                       source_kind="user", valid_from=now, content_hash=uuid.uuid4().hex, embedding=vectors[i],
                       embedding_version="x")
                for i in range(N)
            ])
            MemoryEvidence.objects.bulk_create(
                [MemoryEvidence(tenant=tenant, memory=m, event=e) for m, e in zip(memories, events)]
            )

    started = time.monotonic()
    job = subject_erase_request(tenant=tenant_a, subject_ref="bulk", actor=actor)
    marked = time.monotonic() - started
    job = run(tenant_a, job)
    elapsed = time.monotonic() - started

    print(f"\nerased {N} memories + {N} events + {N} evidence links: marked in {marked:.1f} s, "
          f"deleted and verified in {elapsed - marked:.1f} s")
    assert job.status == "succeeded" and job.result["verification"]["passed"]
    assert job.result["removed"]["memories"] == N and job.result["removed"]["events"] == N
    assert job.result["removed"]["evidence_links"] == N
    assert job.progress_done == job.progress_total == 2 * N
    with as_tenant(tenant_b):
        assert Memory.objects.count() == N and Event.objects.count() == N
