"""An extraction for a tenant the statistics never saw reads rows by what it asks for, not the
tenant's whole range.

Statistics taken while only other tenants had rows (a new tenant importing its history beside
older ones) estimate the new tenant at about no rows, so every index led by tenant_id looked as
cheap as the one a statement needed: the event claims and counts by job, a memory's evidence,
the probe for a retried chunk's episodes, the audit chain's sealing and an UPDATE of one memory
by id each read the tenant's whole range and filtered it (migrations 0019 and 0020,
services/extraction.py, services/memories.py). Here every statement an extraction ran is
planned again, under the same statistics, over a tenant with a few hundred events.

Not covered: the subject. Its statistics have the same blind spot (a subject whose rows all
arrived after the last ANALYZE, where the sample holds every subject), and statements led by
subject_id may still read that subject's range; only scans whose every condition is on the
tenant are judged below.
"""
import random
import re

import pytest
from django.db import DatabaseError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from bench.changing_facts import make_conversation
from memoryapp.tenancy import tenant_activate
from tests.workers.helpers import at, autoanalyze_off, ingest, plan_nodes

# Rows a scan may read and throw away (a subject's few hundred candidates are filtered by
# status or type; what this test is after removes every row of the tenant it read).
REMOVED_AT_MOST = 100


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    while len(texts) < count:
        turns, _, _ = make_conversation(rng)
        texts.extend(turn for turn, *_ in turns)
    return [f"{text} ({i})" for i, text in enumerate(texts[:count])]


def _items(prefix: str, texts: list[str], start: int):
    return [(f"{prefix}{i}", "user", text, None, at(start + i)) for i, text in enumerate(texts)]


def _reads_by_tenant_only(scan: dict) -> bool:
    """A sequential scan, or an index scan whose every condition is on tenant_id."""
    if scan["Node Type"] == "Seq Scan":
        return True
    condition = re.sub(r"'[^']*'", "''", scan.get("Index Cond") or scan.get("Recheck Cond") or "")
    return bool(condition) and all("tenant_id" in clause for clause in condition.split(" AND "))


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_a_tenant_unknown_to_the_statistics_is_read_by_what_each_statement_asks(tenant_a, tenant_b, actor):
    for round_ in range(3):
        ingest(tenant_b, "bob", actor, *_items(f"b{round_}-", _texts(200, round_), 300 * round_))
    with connections["owner"].cursor() as cursor:  # the app's role may not analyze
        # Between indexes estimated alike, which one the planner keeps follows the order they
        # were built in: memory_scope_idx, once rebuilt after the primary key, won the tie for an
        # UPDATE of one memory by id and read the tenant's range (as after a REINDEX
        # CONCURRENTLY; seen here after the whole suite). The test must not depend on that order.
        cursor.execute("DROP INDEX memory_scope_idx")
        cursor.execute("CREATE INDEX memory_scope_idx ON memoryapp_memory (tenant_id, subject_id, status)")
        cursor.execute("ANALYZE")
    # Autovacuum would analyze again once tenant_a's rows pass its threshold, and the test would
    # then pass for want of its case.
    with autoanalyze_off():
        ingest(tenant_a, "alice", actor, *_items("a", _texts(400, 10), 0))
        with CaptureQueriesContext(connection) as queries:
            ingest(tenant_a, "alice", actor, *_items("z", _texts(120, 11), 2000))
        with connections["owner"].cursor() as cursor:
            cursor.execute("SELECT most_common_vals::text::bigint[] FROM pg_stats "
                           "WHERE tablename = 'memoryapp_memory' AND attname = 'tenant_id'")
            assert cursor.fetchone()[0] == [tenant_b.pk]  # the statistics know only tenant_b

    statements = {}
    for query in queries.captured_queries:
        sql = query["sql"]
        if sql.lstrip().split()[0].upper() in ("SELECT", "UPDATE", "INSERT", "DELETE", "WITH"):
            statements.setdefault(re.sub(r"'[^']*'|\b\d+\b", "?", sql)[:300], sql)
    assert len(statements) > 20  # the whole write path ran: claims, episodes, facts, audit

    ranges = []
    for sql in statements.values():
        plan, ran = _plan(tenant_a, sql)
        for scan in plan_nodes(plan):
            if "Relation Name" not in scan or not _reads_by_tenant_only(scan):
                continue
            removed = scan.get("Rows Removed by Filter", 0) + scan.get("Rows Removed by Index Recheck", 0)
            # A statement that cannot run twice (the audit chain only grows) is planned without
            # running: reading the tenant's range to filter it is then the whole finding.
            if removed > REMOVED_AT_MOST or (not ran and "Filter" in scan and "Index Name" in scan):
                ranges.append((removed, scan["Relation Name"], scan.get("Index Name"), sql[:200]))
    assert not ranges, "\n".join(map(str, sorted(ranges, reverse=True)))


def _plan(tenant, sql: str) -> tuple[dict, bool]:
    """The statement's plan, run (and rolled back) where it can run again."""
    for analyze in (True, False):
        try:
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                with connection.cursor() as cursor:
                    cursor.execute(f"EXPLAIN ({'ANALYZE, ' if analyze else ''}FORMAT JSON) {sql}")
                    plan = cursor.fetchone()[0][0]["Plan"]
                transaction.set_rollback(True)
            return plan, analyze
        except DatabaseError:  # a row it already wrote, by key; an audit chain that only grows
            if not analyze:
                raise
