"""Tests run against a real PostgreSQL with pgvector (embedded by default, or DATABASE_URL)
and, where they need one, a real Redis and Celery worker.

The test database is created and migrated by the schema owner; the tests themselves use the
application's role, so row-level security binds every query a test makes, as in production.
"""
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connections
from django.test.utils import setup_databases, teardown_databases

from memoryapp.actors import Actor
from memoryapp.dbroles import quote_ident

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _flush_without_timeouts():
    """Transactional tests flush every table between tests, on the application's connection,
    which has a lock timeout: a flush that had to wait for a lock a finished test's server or
    worker has not yet released would fail, and fail the next test. The flush waits instead."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    flush = DatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        # Inside the flush's own transaction (SET LOCAL): the connection's timeouts come back after.
        return flush(self, ["SET LOCAL lock_timeout = 0", "SET LOCAL statement_timeout = 0", *sql_list])

    DatabaseOperations.execute_sql_flush = execute_sql_flush


_flush_without_timeouts()


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, django_db_keepdb):
    from django.conf import settings

    # The cache is Redis, shared with every process and outliving a session: a new test database
    # numbers API keys from 1 again, and a rate count or last-used stamp of a previous run's key 1
    # must not apply to this run's.
    from django.core.cache import cache

    cache.clear()
    with django_db_blocker.unblock():
        old = setup_databases(verbosity=0, interactive=False, keepdb=django_db_keepdb, aliases={"owner"})
        test_name = connections["owner"].settings_dict["NAME"]
        connections["default"].close()
        connections["default"].settings_dict["NAME"] = test_name
        with connections["owner"].cursor() as cursor:
            # Transactional tests flush tables between tests; only the test role may truncate.
            cursor.execute(
                f"GRANT TRUNCATE ON ALL TABLES IN SCHEMA public TO {quote_ident(settings.DB_APP_USER)}"
            )
    yield
    with django_db_blocker.unblock():
        for connection in connections.all():
            connection.close()
        teardown_databases(old, verbosity=0, keepdb=django_db_keepdb)


@pytest.fixture
def actor():
    return Actor("system", "tests")


def _make_tenant(slug):
    from memoryapp.services.tenants import tenant_create

    return tenant_create(slug=slug)


@pytest.fixture
def tenant_a(db):
    return _make_tenant("tenant-a")


@pytest.fixture
def tenant_b(db):
    return _make_tenant("tenant-b")


# Two subjects in each tenant; tenant B reuses tenant A's subject ids on purpose: the same
# external id in another tenant is a different person.
SUBJECTS_A = ("alice", "bob")
SUBJECTS_B = ("alice", "carol")


class as_tenant:
    """Run a block in a transaction bound to `tenant` (what a request or a task does)."""

    def __init__(self, tenant):
        from django.db import transaction

        self.tenant = tenant
        self.atomic = transaction.atomic()

    def __enter__(self):
        from memoryapp.tenancy import tenant_activate

        self.atomic.__enter__()
        tenant_activate(tenant=self.tenant)
        return self.tenant

    def __exit__(self, *exc):
        return self.atomic.__exit__(*exc)


GUNICORN_LOG = PROJECT_ROOT / "var" / "test-gunicorn.log"


def gunicorn_errors(limit: int = 4000) -> str:
    """The end of what the tests' gunicorn logged from its last error on: for a failing test's
    message, so a server error is diagnosed from CI's output, not guessed at."""
    try:
        text = GUNICORN_LOG.read_text(errors="replace")
    except OSError:
        return ""
    start = max(text.rfind("Traceback"), text.rfind(" ERROR "))
    return text[start:][:limit] if start >= 0 else ""


@contextlib.contextmanager
def running_gunicorn(*, workers: int = 1, threads: int = 4, ready_timeout: float = 30, env: dict | None = None):
    """A real gunicorn with the project's config, serving the test database as the application
    role (for tests that need real processes: gunicorn's own answers, concurrent writers).
    Yields its port; the master listens at once and queues requests until a worker has loaded.
    `env` adds to or overrides the server's environment."""
    with gunicorn_process(workers=workers, threads=threads, ready_timeout=ready_timeout, env=env) as (port, _):
        yield port


@contextlib.contextmanager
def gunicorn_process(*, workers: int = 1, threads: int = 4, ready_timeout: float = 30, env: dict | None = None):
    """running_gunicorn, yielding (port, the master's Popen) for tests that look at its workers."""
    from django.conf import settings

    from tests.workers.conftest import _database_url

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server_env = {**os.environ, "DATABASE_URL": _database_url(), "MEMORY_DB_APP_USER": settings.DB_APP_USER,
           "MEMORY_DB_APP_PASSWORD": settings.DB_APP_PASSWORD, "DJANGO_SETTINGS_MODULE": "memoryapp.settings",
           "PYTHONPATH": str(PROJECT_ROOT), "API_THROTTLE_RATE": "100000000/min", "TORCH_NUM_THREADS": "1",
           "DB_CONN_MAX_AGE": "0", **(env or {})}
    GUNICORN_LOG.parent.mkdir(parents=True, exist_ok=True)
    with open(GUNICORN_LOG, "wb") as log:  # the child keeps its own handle
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "memoryapp.wsgi:application",
             "--config", "python:memoryapp.gunicorn_config", "--bind", f"127.0.0.1:{port}",
             "--workers", str(workers), "--threads", str(threads), "--log-level", "warning"],
            cwd=PROJECT_ROOT, env=server_env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
        )
    deadline = time.monotonic() + ready_timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("gunicorn did not start")
            time.sleep(0.05)
    try:
        yield port, process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


def gunicorn_workers(master: subprocess.Popen, count: int, timeout: float = 60) -> list[int]:
    """The PIDs of a gunicorn's workers, once it has `count` of them."""
    import psutil

    deadline = time.monotonic() + timeout
    while True:
        pids = sorted(child.pid for child in psutil.Process(master.pid).children())
        if len(pids) == count:
            return pids
        if time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn has workers {pids}, expected {count}")
        time.sleep(0.1)


@contextlib.contextmanager
def served_by(worker: int, workers: list[int]):
    """Every connection opened in the block is served by `worker`: the other workers are paused
    (SIGSTOP) meanwhile, so only it can accept one. Requests must not keep a connection alive
    from one block into another (urllib closes each one)."""
    others = [pid for pid in workers if pid != worker]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)


@pytest.fixture(autouse=True)
def _worker_quiet_before_flush(request):
    """A test that used the real worker ends only once that worker is idle. Its last job (a
    message redelivered after a kill, a sweep's republish) may still hold row locks when the
    test's table flush takes its exclusive locks one table at a time: the two deadlock and the
    flush fails, leaving the rows for the next test."""
    yield
    if "celery_worker" in request.fixturenames:
        from tests.workers.conftest import wait_until_worker_idle

        wait_until_worker_idle(request.getfixturevalue("broker"))


def pytest_collection_modifyitems(session, config, items):
    """Tests that start the session's real Celery worker run last, in their collected order.
    Once started, that worker takes every job the session publishes, so a later test that runs
    a job in its own process (most of tests/maintenance and tests/retrieval) would race it for
    the claim, and a table flush would wait on the job it holds."""
    first = [item for item in items if "celery_worker" not in item.fixturenames]
    last = [item for item in items if "celery_worker" in item.fixturenames]
    items[:] = first + last
