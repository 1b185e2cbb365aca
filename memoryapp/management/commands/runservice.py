"""`manage.py runservice`: the whole service in one command. Migrates, then runs the web server
(gunicorn), a Celery worker and Celery beat, restarting any of them that dies, and the embedded
PostgreSQL and Redis if one of them dies; stops all of them on Ctrl-C or SIGTERM. One service per
data folder: a second one refuses, naming the first."""
import argparse
import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management import BaseCommand, CommandError, call_command

from memoryapp import embedded

# A process that dies is started again after 1, 2, 4, 8, 16 s (its deaths within the window
# counted); one that dies more than RESTART_LIMIT times within RESTART_WINDOW seconds is
# failing for a reason a restart does not fix, and the service stops, saying so.
RESTART_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0)
RESTART_LIMIT = 5
RESTART_WINDOW = 300.0


PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
try:  # (looked up once, here: a dlopen between fork and exec can deadlock)
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def _die_with(parent_pid: int):
    """A Popen preexec_fn: the child gets SIGTERM when the supervisor dies, however it dies. Without
    it a supervisor killed with SIGKILL leaves gunicorn serving on its port, and the next run finds
    the port taken. Linux only; elsewhere None (no preexec_fn)."""
    if _prctl is None:
        return None

    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:  # the supervisor died before the prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)
    return preexec


@dataclass
class Child:
    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    restart_at: float | None = None
    deaths: deque = field(default_factory=deque)  # monotonic times of recent deaths


class Supervisor:
    """Keeps a set of processes running. `poll()` is called in a loop by the owner, which also
    decides when to stop; it returns a reason when a process keeps dying."""

    def __init__(self, commands: dict[str, list[str]], *, env: dict, log=print,
                 delays=RESTART_DELAYS, limit: int = RESTART_LIMIT, window: float = RESTART_WINDOW):
        self.children = [Child(name, command) for name, command in commands.items()]
        self.env, self.log = env, log
        self.delays, self.limit, self.window = delays, limit, window

    def _spawn(self, child: Child) -> subprocess.Popen:
        return subprocess.Popen(child.command, env=self.env, preexec_fn=_die_with(os.getpid()))

    def start(self) -> None:
        for child in self.children:
            child.process = self._spawn(child)

    def poll(self) -> str | None:
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.restart_at = None
                    child.process = self._spawn(child)
                    self.log(f"{child.name} restarted (pid {child.process.pid})")
                continue
            code = child.process.poll()
            if code is None:
                continue
            child.deaths.append(now)
            while child.deaths and now - child.deaths[0] > self.window:
                child.deaths.popleft()
            if len(child.deaths) > self.limit:
                return (f"{child.name} exited {len(child.deaths)} times within {self.window:g} s "
                        f"(last with {describe_exit(code)}); giving up and stopping the service")
            delay = self.delays[min(len(child.deaths), len(self.delays)) - 1]
            self.log(f"{child.name} exited with {describe_exit(code)}; restarting it in {delay:g} s")
            child.restart_at = now + delay
        return None

    def stop(self, timeout: float = 20) -> None:
        running = [c.process for c in self.children if c.process is not None and c.process.poll() is None]
        for process in running:
            process.terminate()
        deadline = time.monotonic() + timeout
        for process in running:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class ServerWatch:
    """Keeps the embedded PostgreSQL and Redis up while the service runs: one found dead is started
    again at once (the web and the workers reconnect by themselves; until then health names what
    is missing), a failed start is tried again after 1, 2, 4, 8 s, and after `limit` failures in a
    row `poll()` returns the reason to stop the service. `servers` maps a name to
    (is_running, start)."""

    def __init__(self, servers: dict, *, log=print, delays=RESTART_DELAYS, limit: int = RESTART_LIMIT):
        self.servers, self.log, self.delays, self.limit = servers, log, delays, limit
        self.failures = dict.fromkeys(servers, 0)
        self.next_try = dict.fromkeys(servers, 0.0)

    def poll(self) -> str | None:
        for name, (is_running, start) in self.servers.items():
            if is_running():
                continue
            now = time.monotonic()
            if now < self.next_try[name]:
                continue
            if not self.failures[name]:
                self.log(f"the embedded {name} is not running; starting it again")
            try:
                start()
            except Exception as exc:  # noqa: BLE001 (any failure to start is the same to the service)
                self.failures[name] += 1
                reason = f"{type(exc).__name__}: {exc}".strip()[:500]
                if self.failures[name] >= self.limit:
                    return (f"the embedded {name} could not be started again ({self.failures[name]} attempts; "
                            f"last: {reason}); stopping the service")
                delay = self.delays[min(self.failures[name], len(self.delays)) - 1]
                self.log(f"the embedded {name} did not start ({reason}); trying again in {delay:g} s")
                self.next_try[name] = now + delay
                continue
            self.failures[name], self.next_try[name] = 0, 0.0
            self.log(f"the embedded {name} is running again")
        return None


def port_taken(host: str, port: int) -> str | None:
    """Why the web server could not listen on host:port (naming the process that does, when it is
    this user's), or None when it can. Said at once: gunicorn would retry for a minute and then
    give up without naming the port."""
    address = host.strip("[]")  # "[::1]", as gunicorn's --bind takes an IPv6 address
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((address, port))
            return None
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"cannot listen on {host}:{port}: {exc.strerror}"
    holder = ""
    try:
        import psutil

        for conn in psutil.net_connections(kind="inet"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                holder = f" by pid {conn.pid}"  # (kept if its command line cannot be read)
                holder += f" ({' '.join(psutil.Process(conn.pid).cmdline())[:120]})"
                break
    except Exception:  # noqa: BLE001 (naming the holder is a courtesy; the refusal stands without it)
        pass
    return (f"port {port} on {host} is already in use{holder}. Stop that process, or run on another "
            "port (PORT=8001 make run).")


def _let_go_of_the_servers() -> None:
    """A service refused before it starts lets go of the private servers settings started for
    it, stopping them if no one else uses them (it left PostgreSQL running before)."""
    if not os.environ.get("DATABASE_URL"):
        embedded.process_user().release()


def metrics_folder() -> Path:
    """Where every process of the service writes its Prometheus samples (multiprocess mode), emptied
    at start: samples of a previous run's processes would be summed with this one's."""
    folder = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or embedded.DATA_DIR / "metrics")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink(missing_ok=True)
    return folder


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def _whole(variable: str):
    """argparse's `type` for a whole number set by `variable` or its option."""
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{variable} (or this option) must be a whole number, got {text!r}")
    return parse


class Command(BaseCommand):
    help = "Run the web server, a Celery worker and beat (on the embedded default unless configured)."

    def add_arguments(self, parser):
        # Defaults are given as the environment's text, so argparse reads them with `type` and a
        # malformed value ("PORT=80a") is a usage error naming the variable, not a traceback.
        parser.add_argument("--port", type=_whole("PORT"), default=os.environ.get("PORT") or "8000")
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--web-workers", type=_whole("WEB_CONCURRENCY"),
                            default=os.environ.get("WEB_CONCURRENCY") or "2")
        # One extraction process by default: on two cores a second one drained a backlog 8 % faster
        # but took CPU (and a second copy of the model) from the web workers under a mixed load
        # (docs/benchmarks.md, issue 16). More may be asked for; a subject's jobs still run one
        # after another (services/extraction.SubjectsInTurn).
        parser.add_argument("--worker-processes", type=_whole("WORKER_CONCURRENCY"),
                            default=os.environ.get("WORKER_CONCURRENCY") or "1")

    def handle(self, *args, port, host, web_workers, worker_processes, **options):
        if worker_processes < 1 or web_workers < 1:
            # Celery reads --concurrency 0 as "one per core", not as none.
            raise CommandError("WORKER_CONCURRENCY and WEB_CONCURRENCY (--worker-processes, --web-workers) "
                               "must be at least 1")
        display_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        url = f"http://{display_host}:{port}/"
        # Refuse rather than share: two services on one data folder would share its private servers,
        # and the first one stopped would stop them under the other.
        try:
            claim = embedded.service_claim(url)  # held (open) until this process ends
        except embedded.ServiceAlreadyRunning as exc:
            _let_go_of_the_servers()
            raise CommandError(str(exc)) from None
        taken = port_taken(host, port)
        if taken:
            claim.close()
            _let_go_of_the_servers()
            raise CommandError(taken)
        uses_embedded_db = not os.environ.get("DATABASE_URL")
        uses_embedded_redis = not os.environ.get("REDIS_URL")
        env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL,
               "PROMETHEUS_MULTIPROC_DIR": str(metrics_folder())}
        # A user of the private servers from here on: a test run or a benchmark using them too
        # keeps them up after this service stops, and stops them itself when it ends.
        servers = [name for name, used in (("postgres", uses_embedded_db), ("redis", uses_embedded_redis)) if used]
        in_use = embedded.process_user() if servers else None  # (settings' own, on the embedded default)
        try:
            if in_use:
                # (settings started PostgreSQL; a last user may have stopped it since)
                env.update({k: v for k, v in in_use.start(servers).items() if k == "REDIS_URL"})
            call_command("migrate", verbosity=0)
            # WhiteNoise serves through the finders (nothing is collected) but warns in every web
            # worker, at every start, that the folder collectstatic would fill is missing.
            Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
            bin_dir = os.path.dirname(sys.executable)
            beat_schedule = embedded.DATA_DIR / "celerybeat-schedule"
            commands = {
                "web": [
                    os.path.join(bin_dir, "gunicorn"), "memoryapp.wsgi:application",
                    "--config", "python:memoryapp.gunicorn_config",
                    "--bind", f"{host}:{port}", "--workers", str(web_workers),
                ],
                "worker": [
                    os.path.join(bin_dir, "celery"), "-A", "workers.celery", "worker",
                    "-Q", "extraction,maintenance,erasure", "--concurrency", str(worker_processes),
                    "--loglevel", "INFO",
                ],
                "beat": [
                    os.path.join(bin_dir, "celery"), "-A", "workers.celery", "beat",
                    "--schedule", str(beat_schedule), "--loglevel", "INFO",
                ],
            }
            supervisor = Supervisor(commands, env=env, log=lambda line: self.stderr.write(line))
            watched = {}
            if uses_embedded_db:
                watched["PostgreSQL"] = (embedded.postgres_is_running, embedded.start_postgres)
            if uses_embedded_redis:
                watched["Redis"] = (embedded.redis_is_running, embedded.start_redis)
            watch = ServerWatch(watched, log=lambda line: self.stderr.write(line))
            supervisor.start()
            stopping = False

            def stop(signum, frame):
                nonlocal stopping
                stopping = True

            signal.signal(signal.SIGINT, stop)
            signal.signal(signal.SIGTERM, stop)
            self.stdout.write(self.style.SUCCESS(f"Memory service running at {url} (pid {os.getpid()})"))
            self.stdout.write(f"  API: {url}api/v1/  docs: {url}api/docs/")
            self.stdout.write("  Ctrl-C (or `make stop`) stops everything.")
            exit_code = 0
            try:
                while not stopping:
                    given_up = watch.poll() or supervisor.poll()
                    if given_up:
                        self.stderr.write(given_up)
                        stopping, exit_code = True, 1
                        break
                    time.sleep(0.5)
            finally:
                supervisor.stop()
            if exit_code:
                sys.exit(exit_code)
        finally:
            # Whatever stopped the service (a failed migration or start too), its servers are
            # stopped with it, unless another run still uses them.
            if in_use:
                from django.db import connections

                connections.close_all()
                if not in_use.release(servers, always=True):
                    self.stdout.write("The private servers stay up for another run still using them "
                                      "(`make test`, a benchmark); the last one to finish stops them.")
            self.stdout.write("Stopped.")
            claim.close()
