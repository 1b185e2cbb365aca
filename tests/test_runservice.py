"""The README's run command: it serves, restarts a process that dies (and gives up, saying why,
on one that keeps dying), and on SIGTERM stops every process it started, including the embedded
PostgreSQL and Redis (which would otherwise outlive it)."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from memoryapp.management.commands.runservice import ServerWatch, Supervisor
from tests.processes import free_port, health, processes_using, wait_for

ROOT = Path(__file__).resolve().parent.parent


def celery_worker_of(service: subprocess.Popen) -> psutil.Process | None:
    for child in psutil.Process(service.pid).children():
        try:
            cmdline = child.cmdline()
        except psutil.NoSuchProcess:
            continue
        if "worker" in cmdline and any(part.endswith("celery") for part in cmdline):
            return child
    return None


def alive(processes) -> list[int]:
    return [p.pid for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
def test_run_command_serves_restarts_a_killed_worker_and_stops_everything_on_sigterm(tmp_path):
    data_dir = tmp_path / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(MEMORY_DATA_DIR=str(data_dir), PORT=str(port))
    log = tmp_path / "service.log"
    with open(log, "wb") as out:
        service = subprocess.Popen(
            [sys.executable, "manage.py", "runservice", "--web-workers", "1"], cwd=ROOT, env=env,
            stdout=out, stderr=subprocess.STDOUT,
        )

    def output() -> str:
        return log.read_text(errors="replace")

    try:
        answer = None
        deadline = time.time() + 120
        while answer is None and time.time() < deadline and service.poll() is None:
            answer = health(port) or time.sleep(1)
        assert answer is not None, f"the service never answered its health check:\n{output()[-2000:]}"
        assert answer[0] == 200 and answer[1]["status"] == "ok"
        assert processes_using(data_dir), "the embedded servers should run inside the data folder"
        assert len(psutil.Process(service.pid).children(recursive=True)) >= 3  # web, worker, beat (and theirs)

        # Celery's main process dies: the service starts another and the API keeps answering.
        worker = celery_worker_of(service)
        assert worker is not None
        pool = worker.children()
        worker.send_signal(signal.SIGKILL)
        answers, deadline = [], time.time() + 60
        while time.time() < deadline:
            answers.append(health(port))
            replacement = celery_worker_of(service)
            if replacement is not None and replacement.pid != worker.pid and "worker restarted" in output():
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the worker was not restarted:\n{output()[-2000:]}")
        assert service.poll() is None, output()[-2000:]
        assert "worker exited with signal SIGKILL; restarting it in 1 s" in output()
        assert answers and all(a is not None and a[0] == 200 for a in answers)
        wait_until = time.time() + 10
        while alive(pool) and time.time() < wait_until:  # the old pool dies with its parent
            time.sleep(0.2)
        assert alive(pool) == []
        children = psutil.Process(service.pid).children(recursive=True)
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)
    assert service.returncode == 0, output()[-2000:]
    assert f"http://127.0.0.1:{port}/" in output()
    time.sleep(1)
    assert processes_using(data_dir) == []
    assert alive(children) == []


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _supervise(supervisor: Supervisor, seconds: float) -> str | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reason = supervisor.poll()
        if reason:
            return reason
        time.sleep(0.05)
    return None


def test_a_process_that_dies_is_restarted_after_a_short_delay_and_the_others_keep_running(tmp_path):
    marker = tmp_path / "runs"
    # Dies on its first run, stays up on its second.
    flaky = _python(f"import pathlib, sys, time; p = pathlib.Path({str(marker)!r}); runs = p.read_text() if "
                    f"p.exists() else ''; p.write_text(runs + 'x'); time.sleep(0 if not runs else 60); sys.exit(3)")
    lines = []
    supervisor = Supervisor({"flaky": flaky, "steady": _python("import time; time.sleep(60)")}, env=dict(os.environ),
                            log=lines.append, delays=(0.2, 0.4), limit=3, window=60)
    supervisor.start()
    steady = supervisor.children[1].process
    try:
        assert _supervise(supervisor, 3) is None
        assert marker.read_text() == "xx"
        assert lines[0] == "flaky exited with code 3; restarting it in 0.2 s" and lines[1].startswith("flaky restarted")
        assert steady.poll() is None and supervisor.children[1].process is steady
    finally:
        supervisor.stop()
    assert steady.poll() is not None and supervisor.children[0].process.poll() is not None


def test_a_process_that_keeps_dying_makes_the_supervisor_give_up_and_say_why():
    supervisor = Supervisor({"broken": _python("import sys; sys.exit(2)"), "steady": _python("import time; time.sleep(60)")},
                            env=dict(os.environ), log=lambda line: None, delays=(0.05,), limit=3, window=60)
    supervisor.start()
    try:
        reason = _supervise(supervisor, 10)
    finally:
        supervisor.stop()
    assert reason == "broken exited 4 times within 60 s (last with code 2); giving up and stopping the service"
    assert all(child.process.poll() is not None for child in supervisor.children)


def _pid_in(path: Path) -> int:
    return int(path.read_text().splitlines()[0].strip())


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
def test_a_second_run_refuses_killed_servers_come_back_and_make_stop_stops_the_service(tmp_path):
    data_dir = tmp_path / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR")}
    env.update(MEMORY_DATA_DIR=str(data_dir), PORT=str(port))
    log = tmp_path / "service.log"
    with open(log, "wb") as out:
        service = subprocess.Popen([sys.executable, "manage.py", "runservice", "--web-workers", "1"], cwd=ROOT,
                                   env=env, stdout=out, stderr=subprocess.STDOUT)

    def output() -> str:
        return log.read_text(errors="replace")

    def healthy():
        answer = health(port)
        return answer is not None and answer[0] == 200

    try:
        wait_for(lambda: healthy() or service.poll() is not None, 180, "the service never answered", output)
        assert healthy(), output()[-3000:]
        children = psutil.Process(service.pid).children(recursive=True)

        # A second `make run` in the same checkout, on another port: refuses, naming the first.
        second = subprocess.run([sys.executable, "manage.py", "runservice", "--port", str(free_port())], cwd=ROOT,
                                env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 1, second.stdout + second.stderr
        assert f"pid {service.pid}, serving http://127.0.0.1:{port}/" in second.stderr, second.stderr
        assert healthy() and service.poll() is None

        for name, pid_file, part in (("PostgreSQL", data_dir / "postgres" / "postmaster.pid", "database"),
                                     ("Redis", data_dir / "redis" / "redis.pid", "broker")):
            old_pid = _pid_in(pid_file)
            # The supervisor is paused while its server is killed, so the gap can be seen: health names it.
            service.send_signal(signal.SIGSTOP)
            try:
                os.kill(old_pid, signal.SIGKILL)
                wait_for(lambda: _dead(old_pid), 10, f"{name} did not die")
                answer = wait_for(lambda: (a := health(port)) and a[0] == 503 and a, 30,
                                   f"health did not report the dead {name}", output)
                assert answer[1]["error"]["details"]["failing"] == [part], answer
            finally:
                service.send_signal(signal.SIGCONT)
            # (Health may pass a moment before the supervisor's line about it is written.)
            wait_for(lambda: healthy() and f"the embedded {name} is running again" in output(), 60,
                      f"the service did not recover from the killed {name}", output)
            assert _pid_in(pid_file) != old_pid and service.poll() is None
    finally:
        # `make stop` in another terminal stops the running service itself, not only its servers.
        stopped = subprocess.run([sys.executable, "-m", "memoryapp.embedded", "stop"], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=120)
        try:
            service.wait(timeout=60)
        except subprocess.TimeoutExpired:
            service.kill()
            raise
    assert f"stopped the memory service (pid {service.pid}" in stopped.stdout, stopped.stdout + stopped.stderr
    assert service.returncode == 0, output()[-3000:]
    time.sleep(1)
    assert processes_using(data_dir) == []
    assert alive(children) == []


def test_a_server_that_cannot_be_started_again_stops_the_service_with_the_reason():
    lines, attempts = [], []

    def start():
        attempts.append(1)
        raise RuntimeError("the data folder is gone")

    watch = ServerWatch({"PostgreSQL": (lambda: False, start)}, log=lines.append, delays=(0.05,), limit=3)
    deadline, reason = time.monotonic() + 5, None
    while reason is None and time.monotonic() < deadline:
        reason = watch.poll()
        time.sleep(0.01)
    assert reason == ("the embedded PostgreSQL could not be started again (3 attempts; last: RuntimeError: "
                      "the data folder is gone); stopping the service")
    assert len(attempts) == 3 and lines[0] == "the embedded PostgreSQL is not running; starting it again"


def test_a_postgresql_that_refuses_to_start_is_reported_in_its_own_words(tmp_path):
    # A real PostgreSQL on a data folder whose configuration it rejects: the reason the service
    # gives up with must be PostgreSQL's (pg_ctl alone says only "could not start server").
    folder = tmp_path / "postgres"
    folder.mkdir()
    (folder / "PG_VERSION").write_text("16\n")
    (folder / "postgresql.conf").write_text("shared_buffers = a_banana\n")
    probe = ("from memoryapp import embedded\n"
             "try:\n    embedded.start_postgres()\n"
             "except embedded.PostgresDidNotStart as exc:\n    print(exc)\n")
    env = {**os.environ, "MEMORY_DATA_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    said = result.stdout.strip()
    assert said.startswith("PostgreSQL did not start: "), (said, result.stderr[-2000:])
    assert 'invalid value for parameter "shared_buffers": "a_banana"' in said
    assert "FATAL: configuration file" in said and said.endswith(f"(its log: {folder / 'log'})")
    assert "pg_ctl" not in said and "Failed postgres command" not in result.stderr


def test_a_server_found_dead_is_started_again_once_and_said_so():
    state, lines = {"up": False}, []
    watch = ServerWatch({"Redis": (lambda: state["up"], lambda: state.update(up=True))}, log=lines.append)
    assert watch.poll() is None and watch.poll() is None
    assert lines == ["the embedded Redis is not running; starting it again", "the embedded Redis is running again"]


def test_the_supervised_processes_die_with_a_supervisor_killed_with_sigkill(tmp_path):
    # A supervisor killed outright has no chance to stop its children: the kernel must (else
    # gunicorn would go on serving its port, and the next run would find the port taken).
    pid_file = tmp_path / "child.pid"
    script = (
        "import os, sys, time\n"
        "from memoryapp.management.commands.runservice import Supervisor\n"
        "s = Supervisor({'sleeper': [sys.executable, '-c', 'import time; time.sleep(120)']}, env=dict(os.environ))\n"
        "s.start()\n"
        f"open({str(pid_file)!r}, 'w').write(str(s.children[0].process.pid))\n"
        "time.sleep(120)\n"
    )
    supervisor = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=dict(os.environ))
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text(), 30, "the supervisor did not start its child")
        child = psutil.Process(int(pid_file.read_text()))
        assert alive([child]) == [child.pid]
    finally:
        supervisor.kill()
        supervisor.wait()
    try:
        wait_for(lambda: not alive([child]), 10, "the child outlived its SIGKILLed supervisor")
    finally:
        if alive([child]):  # (a failure must not leave it sleeping behind the test run)
            child.kill()


def test_a_run_on_a_port_already_in_use_refuses_at_once_naming_the_holder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["MEMORY_DATA_DIR"] = str(tmp_path / "data")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        run = subprocess.run([sys.executable, "manage.py", "runservice", "--port", str(port)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"port {port} on 127.0.0.1 is already in use by pid {os.getpid()}" in run.stderr, run.stderr
    assert time.monotonic() - started < 30
    assert "Memory service running" not in run.stdout
    # (settings had started the private PostgreSQL for it: refused, it leaves nothing running)
    wait_for(lambda: processes_using(tmp_path / "data") == [], 30, "the refused service's servers stopped",
             lambda: str(processes_using(tmp_path / "data")))


def test_no_worker_processes_is_refused_before_anything_starts():
    from django.core.management import CommandError, call_command

    # Celery would read --concurrency 0 as one process per core.
    with pytest.raises(CommandError, match="at least 1"):
        call_command("runservice", worker_processes=0)


def test_a_malformed_process_count_in_the_environment_is_named_not_a_traceback(monkeypatch):
    from django.core.management import CommandError, call_command

    monkeypatch.setenv("WORKER_CONCURRENCY", "two")
    with pytest.raises(CommandError, match="WORKER_CONCURRENCY .* must be a whole number, got 'two'"):
        call_command("runservice")
