"""Helpers shared by the worker and pipeline tests: append events and run their extraction the
way a worker does (job_run with the real runners), in this process; walk a plan and hold
autovacuum off for the tests of plans."""
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone as dt_timezone

from django.db import connections

from memoryapp.models import Event, Memory
from memoryapp.services.events import EventInput, event_append
from tests.conftest import as_tenant

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=dt_timezone.utc)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def append(tenant, subject, actor, *items):
    """items: (event_id, role, content[, source_kind[, occurred_at]])."""
    events = []
    for item in items:
        event_id, role, content, *rest = item
        source = rest[0] if rest else None
        occurred = rest[1] if len(rest) > 1 else None
        events.append(EventInput(event_id, role, content, source_kind=source, occurred_at=occurred))
    results, job = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
    return results, job


def run_job_here(tenant, job):
    from memoryapp.services.jobs import job_run
    from workers.tasks import JOB_RUNNERS, resolve

    job_run(tenant_id=tenant.pk, job_id=str(job.id), runners={"extraction": resolve(JOB_RUNNERS["extraction"])})


def ingest(tenant, subject, actor, *items):
    results, job = append(tenant, subject, actor, *items)
    if job is not None:
        run_job_here(tenant, job)
    return results, job


def memories(tenant, subject, **filters):
    with as_tenant(tenant):
        return list(Memory.objects.filter(tenant=tenant, subject__external_id=subject, **filters).order_by("valid_from"))


def event(tenant, subject, event_id):
    with as_tenant(tenant):
        return Event.objects.get(tenant=tenant, subject__external_id=subject, event_id=event_id)


def plan_nodes(node):
    """Every node of an EXPLAIN (FORMAT JSON) plan, the root first."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


@contextmanager
def autoanalyze_off():
    """Autovacuum's ANALYZE held off the project's tables meanwhile, so statistics a test took
    stay as it took them (the tests of plans under statistics that lag the rows)."""
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND starts_with(relname, 'memoryapp_')")
        tables = [row[0] for row in cursor.fetchall()]
        for table in tables:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
    try:
        yield
    finally:
        with connections["owner"].cursor() as cursor:
            for table in tables:
                cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
