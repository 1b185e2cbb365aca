"""The ranking statement finds the events around its candidates by their place in the session,
whatever the server: no scan reads a subject's events to filter them down (statistics up to
date; tests/workers/test_unknown_subject_search_plan.py has them lag).

PostgreSQL 15, under row-level security, uses no index condition holding arithmetic that may
raise (int8 "-" is not leakproof): "seq BETWEEN e.seq - 3 AND e.seq + 3" read every event of the
subject once per candidate (2.8 s a search at 100,000 memories). PostgreSQL 16 planned it well,
so this fails on the old statement only on the system PostgreSQL 15 path of `.ci/run`.
"""
from datetime import datetime, timezone

import pytest
from django.db import connection, connections, transaction

from memoryapp import embeddings, retrieval
from memoryapp.models import Memory
from memoryapp.tenancy import tenant_activate
from tests.workers.helpers import plan_nodes
from tests.workers.test_retire_plan import _episodes


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_the_events_around_the_candidates_are_found_by_their_place(tenant_a, monkeypatch):
    _episodes(tenant_a, count=3000)
    with connections["owner"].cursor() as cursor:  # the app's role may not analyze
        cursor.execute("ANALYZE memoryapp_event")
        cursor.execute("ANALYZE memoryapp_memory")
    captured = {}
    run = retrieval.tenant_activate_and_query

    def capture(**kw):
        captured.setdefault("ranking", kw)  # the first statement a search makes is the ranking
        return run(**kw)

    monkeypatch.setattr(retrieval, "tenant_activate_and_query", capture)
    query = "message 1234"
    with transaction.atomic():
        tenant_activate(tenant=tenant_a)
        now = datetime.now(timezone.utc)
        sig = retrieval.search_signals(
            tenant=tenant_a, subject_ref="alice", query=query,
            query_embedding=embeddings.embed_text(query, partition=None),
            as_of=now, now=now, statuses=[Memory.Status.ACTIVE], include_superseded=False)
        with connection.cursor() as cursor:
            ranking = captured["ranking"]
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + ranking["sql"], ranking["params"])
            plan = cursor.fetchone()[0][0]["Plan"]
        transaction.set_rollback(True)

    assert len(sig.ids) >= retrieval.CANDIDATES  # the candidates and their neighbours came back
    events = [n for n in plan_nodes(plan) if n.get("Relation Name") == "memoryapp_event"]
    assert events, plan
    for scan in events:
        removed = scan.get("Rows Removed by Filter", 0) + scan.get("Rows Removed by Index Recheck", 0)
        # a lookup of a candidate's event or its window: a few rows each, none read to be dropped
        assert removed <= 10 * scan["Actual Loops"], (scan.get("Index Name"), scan.get("Filter"), plan)
