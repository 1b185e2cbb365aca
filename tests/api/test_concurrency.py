"""Real concurrent requests, each on its own database connection, on committed data."""
import threading

import pytest
from django.db import connection

from memoryapp.models import Event, Memory
from tests.api.conftest import make_client, post
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 8


def run_concurrently(fn, n=THREADS):
    barrier = threading.Barrier(n)
    results = [None] * n

    def worker(i):
        try:
            barrier.wait()
            results[i] = fn()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


def test_concurrent_duplicate_events_are_stored_once(tenant_a):
    client = make_client(tenant_a)
    body = {"event_id": "same", "role": "user", "content": "I bought a red bicycle."}
    responses = run_concurrently(lambda: post(client, "subjects/alice/events", body))
    assert [r.status_code for r in responses] == [202] * THREADS
    duplicates = sorted(r.json()["events"][0]["duplicate"] for r in responses)
    assert duplicates == [False] + [True] * (THREADS - 1)
    assert len({r.json()["events"][0]["id"] for r in responses}) == 1
    with as_tenant(tenant_a):
        assert Event.objects.filter(tenant=tenant_a, event_id="same").count() == 1


def test_concurrent_writes_with_one_idempotency_key_write_once(tenant_a):
    client = make_client(tenant_a)
    responses = run_concurrently(
        lambda: post(client, "subjects/alice/memories", {"statement": "I am learning Japanese."},
                     HTTP_IDEMPOTENCY_KEY="retry-1"))
    assert [r.status_code for r in responses] == [201] * THREADS
    assert len({r.json()["id"] for r in responses}) == 1
    with as_tenant(tenant_a):
        assert Memory.objects.filter(tenant=tenant_a).count() == 1
