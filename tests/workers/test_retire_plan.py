"""Retiring a superseded value's episodes reads them by event, whatever the size of the tenant.

The statement runs at every supersession the extraction writes. While the tables' statistics
lag their growth (a new service, a tenant's first import) the planner once read the tenant's
whole range of memory_scope_idx and filtered it by event: a per-write cost that grew with the
tenant (migration 0018). The plan is asked for here over a tenant with a few thousand episodes, whether or not the tables
have statistics yet (a fresh test database usually has none).
"""
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
from django.db import connection, transaction

from memoryapp.models import Event, Memory, MemoryEvidence
from memoryapp.services.extraction import _RETIRE_EPISODES
from memoryapp.services.tenants import subject_get_or_create
from memoryapp.tenancy import tenant_activate

pytestmark = pytest.mark.django_db

EPISODES = 3000
T0 = datetime(2026, 1, 1, tzinfo=dt_timezone.utc)


def _episodes(tenant) -> list[Event]:
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = subject_get_or_create(tenant=tenant, external_id="alice")
        events = Event.objects.bulk_create([
            Event(tenant=tenant, subject=subject, event_id=f"e{i}", seq=i + 1, role="user", source_kind="user",
                  content=f"message {i}", occurred_at=T0 + timedelta(minutes=i), status=Event.Status.PROCESSED)
            for i in range(EPISODES)
        ])
        memories = Memory.objects.bulk_create([
            Memory(tenant=tenant, subject=subject, memory_type=Memory.Type.EPISODIC, statement=f"user: message {i}",
                   source_kind="user", source_event=event, valid_from=event.occurred_at, content_hash=f"h{i}")
            for i, event in enumerate(events)
        ])
        MemoryEvidence.objects.bulk_create(
            [MemoryEvidence(tenant=tenant, memory=m, event=m.source_event) for m in memories])
    return events


def test_retiring_episodes_reads_them_by_event_not_the_tenants_range(tenant_a):
    events = _episodes(tenant_a)
    with transaction.atomic():
        tenant_activate(tenant=tenant_a)
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + _RETIRE_EPISODES, {
                "superseded": Memory.Status.SUPERSEDED, "active": Memory.Status.ACTIVE,
                "episodic": Memory.Type.EPISODIC, "at": T0, "successor": None, "tenant": tenant_a.pk,
                "events": [events[1234].pk]})
            plan = cursor.fetchone()[0][0]["Plan"]
        transaction.set_rollback(True)

    def scans(node):
        yield node
        for child in node.get("Plans", []):
            yield from scans(child)

    on_memory = [n for n in scans(plan) if n.get("Relation Name") == "memoryapp_memory" and n.get("Alias") == "m"
                 and n["Node Type"] != "ModifyTable"]
    assert len(on_memory) == 1, plan
    scan = on_memory[0]
    # The event is what the index is searched by, and about one row is read, not the tenant's range.
    assert "source_event_id" in scan.get("Index Cond", scan.get("Recheck Cond", "")), scan
    assert scan.get("Rows Removed by Filter", 0) + scan.get("Rows Removed by Index Recheck", 0) < 10, scan
    assert scan["Actual Rows"] == 1
    # (Whether a durable memory drawn from that event is still current is read through the
    # evidence; with no statistics it is read by event too, but with statistics shaped by other
    # tenants' rows the planner was seen to take evidence_unique's tenant range instead, so that
    # side is not asserted here: docs/benchmarks.md, issue 16.)
