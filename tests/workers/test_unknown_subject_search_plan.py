"""A search for a subject the statistics have not seen yet looks each memory's source event up by
its key, not through the subject's whole range of events.

Statistics taken before a subject had events (a first import, a burst inside autovacuum's minute,
a server with autovacuum off) put that subject at about one event, and every index led by
(tenant_id, subject_id) then looks as cheap as the primary key. The search's last step, the
source event of each memory in the pool (memoryapp/retrieval.py), asked for the event by id *and*
subject, and was planned through the subject's index with the id as a filter: every event of the
subject read once per pool row (~6 of a 15 ms statement in bench/api_load.py on PostgreSQL 15).
Since then the pool's events come from `near`'s lookups, whose first step (a candidate's own
event, by id) is what the by-id check below guards.

The window of events around each candidate (`near`) is read by its place too: on PostgreSQL 15
its bounds, computed inside the index condition ("seq >= e.seq - 3"), made it a filter under
row-level security (int8 "-" is not leakproof), and the subject's events were read once per
candidate; they are values of the outer lookup now (tests/retrieval/test_ranking_plan.py).
"""
import re

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from memoryapp.retrieval import memory_search
from memoryapp.tenancy import tenant_activate
from tests.workers.helpers import at, autoanalyze_off, ingest, plan_nodes

# A lookup by id that throws away more rows than this read a range to find one row.
REMOVED_AT_MOST = 20


def _items(prefix: str, count: int, start: int):
    topics = ["the garden", "my sister", "the new job", "a trip to Porto", "the cello", "our dog"]
    return [(f"{prefix}{i}", "user", f"Talking about {topics[i % len(topics)]} again, part {i}.", None,
             at(start + i)) for i in range(count)]


def _looks_up_by_id_through_a_range(scan: dict) -> bool:
    """An index scan on events whose filter, not its index condition, holds `id = ...`."""
    return (scan.get("Relation Name") == "memoryapp_event" and "Index Name" in scan
            and re.search(r"(^|[^\w.])(\w+\.)?id = ", scan.get("Filter") or "") is not None)


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_a_search_for_a_subject_unknown_to_the_statistics_looks_source_events_up_by_key(tenant_a, tenant_b, actor):
    ingest(tenant_b, "bob", actor, *_items("b", 60, 0))
    ingest(tenant_a, "carol", actor, *_items("c", 1, 0))
    with connections["owner"].cursor() as cursor:  # the app's role may not analyze
        # Between indexes estimated alike, the planner keeps the one built last (as after a
        # REINDEX CONCURRENTLY, or on another server's catalogue order): the subject's index
        # rebuilt after the primary key, so the test cannot pass by build order.
        cursor.execute("ALTER TABLE memoryapp_event DROP CONSTRAINT event_seq_unique_per_subject, "
                       "ADD CONSTRAINT event_seq_unique_per_subject UNIQUE (tenant_id, subject_id, seq)")
        cursor.execute("ANALYZE memoryapp_event")
        cursor.execute("ANALYZE memoryapp_memory")
    with autoanalyze_off():
        ingest(tenant_a, "alice", actor, *_items("a", 300, 1000))
        with connections["owner"].cursor() as cursor:
            cursor.execute("SELECT most_common_vals::text::bigint[] FROM pg_stats "
                           "WHERE tablename = 'memoryapp_event' AND attname = 'subject_id'")
            common = cursor.fetchone()[0]
            cursor.execute("SELECT id FROM memoryapp_subject WHERE external_id = 'alice'")
            alice = cursor.fetchone()[0]
        assert common and alice not in common  # the statistics know the other subjects' events only
        with transaction.atomic():
            tenant_activate(tenant=tenant_a)
            with CaptureQueriesContext(connection) as queries:
                hits = memory_search(tenant=tenant_a, subject_ref="alice", query="what about the cello?",
                                     k=10)
            assert hits
            search = [q["sql"] for q in queries.captured_queries if "pool AS MATERIALIZED" in q["sql"]]
            assert len(search) == 1
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + search[0].split(";", 1)[-1])
                plan = cursor.fetchone()[0][0]["Plan"]

    scans = [scan for scan in plan_nodes(plan) if _looks_up_by_id_through_a_range(scan)]
    removed = [(scan.get("Rows Removed by Filter", 0), scan["Index Name"], scan["Filter"][:120]) for scan in scans]
    assert all(rows <= REMOVED_AT_MOST for rows, *_ in removed), removed
    # No scan of events, the window's included, reads rows to throw them away.
    events = [scan for scan in plan_nodes(plan) if scan.get("Relation Name") == "memoryapp_event"]
    assert events
    for scan in events:
        assert scan.get("Rows Removed by Filter", 0) <= REMOVED_AT_MOST, (scan.get("Index Name"), scan.get("Filter"))
