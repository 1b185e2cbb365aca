"""A prefork worker's pool child SIGKILLed mid-extraction: its claims come back within a minute
(the job's heartbeat stops, then a redelivered task or the sweeper takes the job back) and every
event is still processed exactly once. Real processes throughout: a `celery worker
--pool=prefork` on its own Redis, the production job settings, and the sweeper run at beat's
cadence from here."""
import signal
import time

import pytest
from django.conf import settings
from django.utils import timezone

from memoryapp.models import Event, Job, Memory
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.outbox import outbox_sweep
from tests.conftest import as_tenant
from tests.workers.conftest import wait_for
from tests.workers.helpers import at

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TEXTS = ["I live in {city}.", "My favourite food is dish number {i}.", "ok", "We watched a film about {city}.",
         "I work as a welder grade {i}.", "thanks!"]
CITIES = ["Oslo", "Lima", "Quito", "Accra", "Hanoi", "Perth"]


def _events(n: int) -> list[EventInput]:
    return [EventInput(f"e{i}", "user", TEXTS[i % len(TEXTS)].format(city=CITIES[i % 6], i=i), occurred_at=at(i))
            for i in range(n)]


def _counts(tenant) -> dict:
    with as_tenant(tenant):
        counts: dict = {}
        for status in Event.objects.filter(tenant=tenant).values_list("status", flat=True):
            counts[status] = counts.get(status, 0) + 1
        return counts


def test_a_sigkilled_pool_childs_claims_return_within_a_minute_and_each_event_is_processed_once(
    prefork_worker, tenant_a, actor
):
    n = 600
    _, job = event_append(tenant=tenant_a, subject_ref="alice", events=_events(n), actor=actor)

    def mid_job():
        counts = _counts(tenant_a)
        return 0 < counts.get("processed", 0) < n - 256 and counts.get("processing", 0) > 0

    wait_for(mid_job, timeout=120, interval=0.05, message="extraction to be under way")
    [child] = prefork_worker.pool_children()
    child.send_signal(signal.SIGKILL)
    killed_at, killed = timezone.now(), time.monotonic()
    child.wait(10)
    with as_tenant(tenant_a):
        held = Event.objects.filter(tenant=tenant_a, status="processing", claimed_at__lte=killed_at).count()
        assert held > 0 and Job.objects.get(pk=job.pk).status == "running", "the kill came too late"

    def claims_back() -> bool:
        with as_tenant(tenant_a):
            still_held = Event.objects.filter(tenant=tenant_a, status="processing", claimed_at__lte=killed_at)
            dead_attempt = Job.objects.filter(pk=job.pk, status="running", started_at__lte=killed_at)
            return not still_held.exists() and not dead_attempt.exists()

    # Beat's cadence: one sweep every MEMORY_OUTBOX_SWEEP_SECONDS, with the default windows.
    next_sweep = time.monotonic()
    while not claims_back():
        assert time.monotonic() - killed < 90, "the dead child's claims never came back"
        if time.monotonic() >= next_sweep:
            outbox_sweep()
            next_sweep += settings.MEMORY_OUTBOX_SWEEP_SECONDS
        time.sleep(0.25)
    returned_after = time.monotonic() - killed
    print(f"claims of the SIGKILLed pool child returned {returned_after:.1f} s after the kill "
          f"({held} events were held)")
    assert returned_after < 60

    def all_processed():
        if _counts(tenant_a).get("processed") == n:
            return True
        if time.monotonic() >= next_sweep_box[0]:
            outbox_sweep()
            next_sweep_box[0] += settings.MEMORY_OUTBOX_SWEEP_SECONDS
        return False

    next_sweep_box = [next_sweep]
    wait_for(all_processed, timeout=240, interval=0.5, message="every event to be processed after the kill")
    with as_tenant(tenant_a):
        episodes = list(Memory.objects.filter(tenant=tenant_a, memory_type="episodic")
                        .values_list("source_event_id", flat=True))
        assert len(episodes) == n and len(set(episodes)) == n
        durable = list(Memory.objects.filter(tenant=tenant_a).exclude(memory_type="episodic")
                       .values_list("source_event_id", "key"))
        assert len(durable) == len(set(durable))
        done = wait_for(lambda: Job.objects.filter(pk=job.pk, status="succeeded").first(), timeout=60,
                        message="the job to succeed")
    assert done.attempts == 2 and done.error == ""
    assert len(prefork_worker.pool_children()) == 1  # the worker replaced its child
