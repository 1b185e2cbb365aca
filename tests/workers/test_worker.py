"""Extraction through a real Celery worker on a real Redis: what survives a SIGKILL and a broker
outage. These commit their data (the worker is another process), so reads go through as_tenant."""
import signal
import time

import pytest

from memoryapp.models import Event, Job, Memory
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.outbox import outbox_sweep
from tests.conftest import as_tenant
from tests.workers.conftest import wait_for
from tests.workers.helpers import at

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

FACTS = [
    "I live in {city}.", "My favourite food is {food}.", "I work as a {job}.", "ok", "I'm tired today.",
    "We watched a film about {city} last weekend.", "thanks!", "My dog is called {name}.",
]
CITIES = ["Oslo", "Lima", "Quito", "Accra", "Hanoi", "Perth", "Turin", "Cork"]


def _conversation(n: int, prefix: str = "e") -> list[EventInput]:
    events = []
    for i in range(n):
        template = FACTS[i % len(FACTS)]
        text = template.format(city=CITIES[i % 8], food=f"dish number {i}", job=f"welder grade {i}", name=f"Rex{i}")
        events.append(EventInput(f"{prefix}{i}", "user", text, occurred_at=at(i)))
    return events


def _status_counts(tenant, subject="alice") -> dict:
    with as_tenant(tenant):
        rows = Event.objects.filter(tenant=tenant, subject__external_id=subject).values_list("status", flat=True)
        counts: dict = {}
        for status in rows:
            counts[status] = counts.get(status, 0) + 1
        return counts


def _assert_each_event_processed_once(tenant, n, subject="alice"):
    with as_tenant(tenant):
        assert Event.objects.filter(tenant=tenant, subject__external_id=subject, status="processed").count() == n
        episodes = list(Memory.objects.filter(tenant=tenant, subject__external_id=subject, memory_type="episodic")
                        .values_list("source_event_id", flat=True))
        assert len(episodes) == n and len(set(episodes)) == n
        # No durable memory was written twice from the same event.
        durable = list(Memory.objects.filter(tenant=tenant, subject__external_id=subject)
                       .exclude(memory_type="episodic").values_list("source_event_id", "key"))
        assert len(durable) == len(set(durable))


def test_events_appended_are_extracted_by_the_worker(celery_worker, tenant_a, tenant_b, actor):
    _, job = event_append(tenant=tenant_a, subject_ref="alice", events=_conversation(8), actor=actor)
    wait_for(lambda: _status_counts(tenant_a).get("processed") == 8, message="the worker to process 8 events")
    _assert_each_event_processed_once(tenant_a, 8)
    with as_tenant(tenant_a):
        done = wait_for(lambda: Job.objects.get(pk=job.pk).status == "succeeded" and Job.objects.get(pk=job.pk))
        assert done.progress_done == 8 and done.result["semantic"] >= 3
    with as_tenant(tenant_b):
        assert not Memory.objects.exists() and not Event.objects.exists()


def test_a_worker_killed_mid_extraction_loses_no_event_and_duplicates_no_memory(celery_worker, tenant_a, actor):
    n = 640
    event_append(tenant=tenant_a, subject_ref="alice", events=_conversation(n), actor=actor)

    def partly_done():
        processed = _status_counts(tenant_a).get("processed", 0)
        return 0 < processed < n

    wait_for(partly_done, interval=0.05, message="extraction to be under way")
    celery_worker.kill(signal.SIGKILL)
    counts = _status_counts(tenant_a)
    assert counts.get("processed", 0) < n, "the kill came too late to test anything"
    assert counts.get("processing", 0) > 0 or counts.get("pending", 0) > 0

    celery_worker.start()
    # A beat tick after the dead worker's claims have gone stale (here: immediately).
    swept = outbox_sweep(republish_after=__import__("datetime").timedelta(0),
                         stuck_after=__import__("datetime").timedelta(0))
    assert swept["jobs_published"] >= 1
    wait_for(lambda: _status_counts(tenant_a).get("processed") == n, timeout=180,
             message="every event to be processed after the restart")
    _assert_each_event_processed_once(tenant_a, n)


def test_events_are_accepted_while_the_broker_is_down_and_processed_when_it_is_back(
    celery_worker, broker, tenant_a, actor
):
    from datetime import timedelta

    broker.stop()
    try:
        started = time.monotonic()
        results, job = event_append(tenant=tenant_a, subject_ref="alice", events=_conversation(6, "down"),
                                    actor=actor)
        assert time.monotonic() - started < 5, "a publish to a dead broker must not hang the request"
        assert job is not None and [r.duplicate for r in results] == [False] * 6
        time.sleep(1)
        assert _status_counts(tenant_a) == {"pending": 6}
    finally:
        broker.start()
    # The worker reconnects by itself; the sweeper re-publishes what the outage swallowed.
    deadline = time.monotonic() + 120
    while _status_counts(tenant_a).get("processed") != 6 and time.monotonic() < deadline:
        outbox_sweep(republish_after=timedelta(0), stuck_after=timedelta(minutes=10))
        time.sleep(2)
    _assert_each_event_processed_once(tenant_a, 6)
