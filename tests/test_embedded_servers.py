"""The embedded servers are shared by whoever uses them at once (a test run, a benchmark, the
service) and stopped by the last of them to finish: none of them stops PostgreSQL or Redis under
another that is still using them."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.processes import free_port, health, processes_using, wait_for

ROOT = Path(__file__).resolve().parent.parent

# An `exec` child that says it is running, waits for its go file, then uses both servers
# through the variables exec gave it and writes what it found.
USER = """
import os, sys, time, pathlib
import psycopg, redis
ready, go, result = map(pathlib.Path, sys.argv[1:4])
ready.write_text(os.environ["DATABASE_URL"] + "\\n" + os.environ["REDIS_URL"])
deadline = time.monotonic() + 240
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.1)
found = []
try:
    with psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=5) as conn:
        found.append("postgres %s" % conn.execute("SELECT 1").fetchone()[0])
except Exception as exc:
    found.append("postgres failed: %r" % exc)
try:
    path = os.environ["REDIS_URL"].split("://", 1)[1]
    found.append("redis %s" % redis.Redis(unix_socket_path=path, socket_timeout=5).ping())
except Exception as exc:
    found.append("redis failed: %r" % exc)
result.write_text("\\n".join(found))
"""


def _env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR")}
    env["MEMORY_DATA_DIR"] = str(data_dir)
    return env


class Run:
    """`python -m memoryapp.embedded exec -- python -c USER`: one user of the data folder's servers."""

    def __init__(self, tmp_path: Path, name: str, env: dict):
        self.ready, self.go, self.result = (tmp_path / f"{name}.{part}" for part in ("ready", "go", "result"))
        self.log = tmp_path / f"{name}.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memoryapp.embedded", "exec", "--", sys.executable, "-c", USER,
                 str(self.ready), str(self.go), str(self.result)],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        wait_for(lambda: self.ready.exists() or self.process.poll() is not None, 180, f"{name} never started",
                  self.output)
        assert self.ready.exists(), self.output()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def finish(self) -> str:
        """Let it use the servers now, wait for it to end, and return what it found."""
        self.go.touch()
        assert self.process.wait(timeout=120) == 0, self.output()
        return self.result.read_text()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _server_pids(data_dir: Path) -> dict:
    pids = {}
    for name, path in (("postgres", data_dir / "postgres" / "postmaster.pid"),
                       ("redis", data_dir / "redis" / "redis.pid")):
        try:
            pids[name] = int(path.read_text().splitlines()[0].strip())
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _stop_everything(data_dir: Path) -> None:
    subprocess.run([sys.executable, "-m", "memoryapp.embedded", "stop"], cwd=ROOT, env=_env(data_dir),
                   capture_output=True, timeout=120)


@pytest.mark.slow
def test_overlapping_runs_share_the_servers_and_the_last_one_out_stops_them(tmp_path):
    data_dir = tmp_path / "data"
    env = _env(data_dir)
    runs = []
    try:
        first = Run(tmp_path, "first", env)  # starts both servers for itself
        runs.append(first)
        pids = _server_pids(data_dir)
        assert set(pids) == {"postgres", "redis"} and all(map(_running, pids.values())), pids
        second = Run(tmp_path, "second", env)  # finds them running
        runs.append(second)
        assert _server_pids(data_dir) == pids

        # The one that started them ends first: they stay up for the other, which still uses them.
        assert first.finish() == "postgres 1\nredis True"
        time.sleep(1)
        assert all(map(_running, pids.values())), pids
        assert second.finish() == "postgres 1\nredis True"
        # The last one out stops them, although it did not start them.
        wait_for(lambda: not any(map(_running, pids.values())), 30, "the last user did not stop the servers")

        # Servers started on purpose (`embedded start`) are nobody's to stop but `embedded stop`'s.
        started = subprocess.run([sys.executable, "-m", "memoryapp.embedded", "start"], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, started.stderr[-3000:]
        pids = _server_pids(data_dir)
        third = Run(tmp_path, "third", env)
        runs.append(third)
        assert third.finish() == "postgres 1\nredis True"
        time.sleep(1)
        assert all(map(_running, pids.values())), pids
    finally:
        for run in runs:
            run.kill()
        _stop_everything(data_dir)
    wait_for(lambda: not any(map(_running, pids.values())), 30, "`embedded stop` did not stop the servers")


@pytest.mark.slow
def test_a_service_stopped_while_a_test_run_uses_its_servers_leaves_them_to_the_run(tmp_path):
    # `make run` in one terminal, `make test` in another, and the service is stopped first.
    data_dir = tmp_path / "data"
    env = _env(data_dir)
    port = free_port()
    log = tmp_path / "service.log"
    with open(log, "wb") as out:
        service = subprocess.Popen([sys.executable, "manage.py", "runservice", "--web-workers", "1"], cwd=ROOT,
                                   env={**env, "PORT": str(port)}, stdout=out, stderr=subprocess.STDOUT)
    run = None
    try:
        answer = wait_for(lambda: health(port) or service.poll() is not None, 180, "the service never answered",
                           lambda: log.read_text(errors="replace")[-3000:])
        assert answer is not True and answer[0] == 200, log.read_text(errors="replace")[-3000:]
        pids = _server_pids(data_dir)
        run = Run(tmp_path, "tests", env)

        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=60) == 0, log.read_text(errors="replace")[-3000:]
        assert all(map(_running, pids.values())), pids
        assert run.finish() == "postgres 1\nredis True"
        # The service asked for everything to stop with it: the run, last out, did it.
        wait_for(lambda: not any(map(_running, pids.values())), 30, "the servers outlived their last user")
        time.sleep(1)
        assert processes_using(data_dir) == []
    finally:
        if service.poll() is None:
            service.kill()
        if run:
            run.kill()
        _stop_everything(data_dir)


def _redis_servers(data_dir: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = proc.info["cmdline"] or []
            if any("redis-server" in part for part in cmdline) and any(str(data_dir) in part for part in cmdline):
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.mark.slow
def test_runs_starting_together_start_one_of_each_and_a_django_process_is_a_user_too(tmp_path):
    data_dir = tmp_path / "data"
    env = _env(data_dir)
    runs, django = [], None
    try:
        # Two runs arriving at once on a cold data folder: one PostgreSQL, one Redis between them
        # (a second Redis would take the socket and pid file, and nothing would stop the first).
        with open(tmp_path / "a.log", "wb") as a_out, open(tmp_path / "b.log", "wb") as b_out:
            both = [subprocess.Popen(
                [sys.executable, "-m", "memoryapp.embedded", "exec", "--", sys.executable, "-c", USER,
                 str(tmp_path / f"{name}.ready"), str(tmp_path / f"{name}.go"), str(tmp_path / f"{name}.result")],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
                for name, out in (("a", a_out), ("b", b_out))]

        def logs() -> str:
            return (tmp_path / "a.log").read_text() + (tmp_path / "b.log").read_text()

        wait_for(lambda: all((tmp_path / f"{n}.ready").exists() for n in "ab")
                  or any(p.poll() is not None for p in both), 180, "the two runs never started", logs)
        assert len(_redis_servers(data_dir)) == 1, _redis_servers(data_dir)
        pids = _server_pids(data_dir)

        # A Django process started directly (a shell, a migration, a benchmark run without
        # exec) uses them too: the runs ending leave them to it.
        script = ("import os, pathlib, django, time\n"
                  "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'memoryapp.settings')\n"
                  "django.setup()\n"
                  "from django.db import connections\n"
                  "pathlib.Path(%r).touch()\n"
                  "while not pathlib.Path(%r).exists(): time.sleep(0.1)\n"
                  "with connections['owner'].cursor() as c:  # (no migration ran: no app role yet)\n"
                  "    c.execute('SELECT 1'); print('django', c.fetchone()[0])\n"
                  % (str(tmp_path / "django.ready"), str(tmp_path / "django.go")))
        django = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        wait_for(lambda: (tmp_path / "django.ready").exists() or django.poll() is not None, 120,
                  "the Django process never started")
        for name, process in zip("ab", both):
            (tmp_path / f"{name}.go").touch()
            assert process.wait(timeout=120) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
            assert (tmp_path / f"{name}.result").read_text() == "postgres 1\nredis True"
        time.sleep(1)
        assert all(map(_running, pids.values())), pids
        (tmp_path / "django.go").touch()
        out, _ = django.communicate(timeout=120)
        assert django.returncode == 0 and "django 1" in out, out[-3000:]
        # The servers started on demand outlive the Django process (it stops nothing); the next
        # run to finish, last out, stops them.
        assert all(map(_running, pids.values())), pids
        last = Run(tmp_path, "last", env)
        runs.append(last)
        assert last.finish() == "postgres 1\nredis True"
        wait_for(lambda: not any(map(_running, pids.values())), 30, "the last run did not stop the servers")
    finally:
        for run in runs:
            run.kill()
        if django and django.poll() is None:
            django.kill()
        _stop_everything(data_dir)


# pg_ctl failed once, under heavy load, before it signalled the server (its log showed no
# shutdown request), and the server outlived the service that had started it. The fallback
# signals the postmaster itself; here pg_ctl is replaced by one that fails the same way (the
# only stand-in: the server, its folder and its log are real), so only the fallback can stop it.
STOP_WITHOUT_PG_CTL = """
import subprocess, sys
from memoryapp import embedded
from pgserver import _commands
embedded.start_postgres()
pid = int((embedded.PG_DIR / "postmaster.pid").read_text().splitlines()[0])
def failing_pg_ctl(args, **kwargs):
    raise subprocess.CalledProcessError(1, ["pg_ctl"] + args)
_commands.pg_ctl = failing_pg_ctl
embedded.stop_postgres()
print("running" if embedded.postgres_is_running() else "stopped", pid)
"""


@pytest.mark.slow
def test_postgres_is_stopped_even_when_pg_ctl_fails(tmp_path):
    data_dir = tmp_path / "data"
    done = subprocess.run([sys.executable, "-c", STOP_WITHOUT_PG_CTL], cwd=ROOT, env=_env(data_dir),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    state, pid = done.stdout.split()[-2:]
    assert state == "stopped"
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE
    assert "fast shutdown request" in (data_dir / "postgres" / "log").read_text()
    assert processes_using(data_dir) == []
