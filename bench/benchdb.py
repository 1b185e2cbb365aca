"""A dedicated, migrated database for a benchmark run, on the same PostgreSQL server as the app.

The benchmark never touches the app's own database: it creates `name` through the owner
connection, points both aliases at it and migrates it (which also grants the application role
its rights and turns row-level security on). `drop()` removes it again.
"""
from __future__ import annotations

import os
import sys

_original: str | None = None
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def django_setup() -> None:
    if PROJECT_ROOT not in sys.path:
        sys.path.insert(0, PROJECT_ROOT)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
    # Building a benchmark's data (100,000 memories, a whole LoCoMo run) is one long job, not a
    # request: the web's statement timeout would cut it short. Searches are timed, not limited.
    os.environ.setdefault("DB_STATEMENT_TIMEOUT_MS", "0")
    os.environ.setdefault("DB_LOCK_TIMEOUT_MS", "0")
    import django

    django.setup()


def _exists(name: str) -> bool:
    from django.db import connections

    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        return cursor.fetchone() is not None


def use(name: str, *, create: bool) -> bool:
    """Point the app at database `name`, creating and migrating it if asked. Returns whether it
    already existed (a kept database from an earlier run)."""
    from django.core.management import call_command
    from django.db import connections

    from memoryapp.dbroles import quote_ident

    global _original
    _original = _original or connections["owner"].settings_dict["NAME"]
    existed = _exists(name)
    if not existed:
        if not create:
            raise SystemExit(f"database {name} does not exist")
        with connections["owner"].cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {quote_ident(name)}")
    for alias in ("owner", "default"):
        connections[alias].close()
        connections[alias].settings_dict["NAME"] = name
    call_command("migrate", database="owner", verbosity=0)
    return existed


def drop(name: str) -> None:
    from django.db import connections

    from memoryapp.dbroles import quote_ident

    original = _original or "postgres"
    for alias in ("owner", "default"):
        connections[alias].close()
        connections[alias].settings_dict["NAME"] = original
    with connections["owner"].cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")



def publish_jobs_to(queue: str) -> None:
    """Publish extraction jobs as in production, but to `queue`, which no worker reads: a worker
    of the app's own database would find none of the bench database's jobs (the bench runs them
    itself, or never). delete_queue() at the end."""
    from memoryapp import dispatch

    dispatch.QUEUE_BY_JOB_KIND = {**dispatch.QUEUE_BY_JOB_KIND, "extraction": queue}


def delete_queue(queue: str) -> None:
    from workers.celery import app

    with app.connection_for_write() as broker:
        broker.default_channel.queue_delete(queue)
