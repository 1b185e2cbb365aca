"""Retiring a superseded value's episodes reads them by event, whatever the size of the tenant.

The statement runs at every supersession the extraction writes. While the tables' statistics
lag their growth (a new service, a tenant's first import) the planner once read the tenant's
whole range of memory_scope_idx and filtered it by event: a per-write cost that grew with the
tenant (migration 0018). Asking for several events in one statement brought that plan back, so
_retire_episodes runs one statement per event, and names the tenant as a parameter the planner
estimates as an average tenant (statistics taken before a tenant existed put its range at about
no rows, so any index led by the tenant looked as cheap as the event's). Here the statements it
actually ran are planned again over a tenant with a few thousand episodes.
"""
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from memoryapp.models import Event, Memory, MemoryEvidence
from memoryapp.services.extraction import _retire_episodes
from memoryapp.services.tenants import subject_get_or_create
from memoryapp.tenancy import tenant_activate
from tests.workers.helpers import plan_nodes

EPISODES = 3000
T0 = datetime(2026, 1, 1, tzinfo=dt_timezone.utc)


def _episodes(tenant, *, external_id="alice", count=EPISODES) -> list[Event]:
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = subject_get_or_create(tenant=tenant, external_id=external_id)
        events = Event.objects.bulk_create([
            Event(tenant=tenant, subject=subject, event_id=f"e{i}", seq=i + 1, role="user", source_kind="user",
                  content=f"message {i}", occurred_at=T0 + timedelta(minutes=i), status=Event.Status.PROCESSED)
            for i in range(count)
        ])
        memories = Memory.objects.bulk_create([
            Memory(tenant=tenant, subject=subject, memory_type=Memory.Type.EPISODIC, statement=f"user: message {i}",
                   source_kind="user", source_event=event, valid_from=event.occurred_at, content_hash=f"h{i}")
            for i, event in enumerate(events)
        ])
        MemoryEvidence.objects.bulk_create(
            [MemoryEvidence(tenant=tenant, memory=m, event=m.source_event) for m in memories])
    return events


def _durable_fact(tenant, event) -> Memory:
    """A current semantic memory drawn from `event`: that event's episode must stay current."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        fact = Memory.objects.create(
            tenant=tenant, subject_id=event.subject_id, memory_type=Memory.Type.SEMANTIC,
            statement="The user lives in Lyon.", source_kind="user", source_event=event,
            valid_from=event.occurred_at, content_hash="fact")
        MemoryEvidence.objects.create(tenant=tenant, memory=fact, event=event)
    return fact


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
@pytest.mark.parametrize("analyzed_rows", [0, 100, 4 * EPISODES])
def test_retiring_episodes_reads_them_by_event_not_the_tenants_range(tenant_a, tenant_b, analyzed_rows):
    # Statistics taken while another tenant held a few rows (a new service) or many (a new
    # tenant importing its history), before this tenant had any: they know nothing of its range.
    # With 0, none are taken here (a fresh database has none; in the suite, whatever it left).
    if analyzed_rows:
        _episodes(tenant_b, count=analyzed_rows)
        with connections["owner"].cursor() as cursor:  # the app's role may not analyze
            cursor.execute("ANALYZE memoryapp_memory")
            cursor.execute("ANALYZE memoryapp_memoryevidence")
    events = _episodes(tenant_a)
    kept = events[1500]
    successor = _durable_fact(tenant_a, kept)
    asked = [events[1234].pk, kept.pk, events[2345].pk]
    entries = []

    with transaction.atomic():
        tenant_activate(tenant=tenant_a)
        with CaptureQueriesContext(connection) as queries:
            retired = _retire_episodes(tenant=tenant_a, event_ids=asked, successor=successor, at=T0,
                                       record=lambda **entry: entries.append(entry), subject_ref="alice")
        updates = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().startswith("UPDATE")]
        transaction.set_rollback(True)

    # The episode of the event a current fact was drawn from stays; the two others are retired.
    assert retired == 2
    assert len(entries[0]["details"]["memory_ids"]) == 2
    assert len(updates) == len(asked)

    for sql in updates:
        with transaction.atomic():
            tenant_activate(tenant=tenant_a)
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
                plan = cursor.fetchone()[0][0]["Plan"]
            transaction.set_rollback(True)
        scans = [n for n in plan_nodes(plan) if "Relation Name" in n and n["Node Type"] != "ModifyTable"]
        episode = [n for n in scans if n.get("Alias") == "m"]
        assert len(episode) == 1, plan
        # The episode is found by its event, and no scan reads a range to filter it down.
        assert "source_event_id" in episode[0].get("Index Cond", episode[0].get("Recheck Cond", "")), plan
        for scan in scans:
            removed = scan.get("Rows Removed by Filter", 0) + scan.get("Rows Removed by Index Recheck", 0)
            assert removed < 10, (scan["Alias"], scan.get("Index Name"), plan)
