"""The README's run command: it serves, and on SIGTERM stops every process it started,
including the embedded PostgreSQL and Redis (which would otherwise outlive it)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_using(data_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(data_dir) in part for part in (proc.info["cmdline"] or [])):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.mark.slow
def test_run_command_serves_and_stops_everything_on_sigterm(tmp_path):
    data_dir = tmp_path / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(MEMORY_DATA_DIR=str(data_dir), PORT=str(port))
    service = subprocess.Popen(
        [sys.executable, "manage.py", "runservice", "--web-workers", "1"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        health = None
        deadline = time.time() + 120
        while time.time() < deadline and service.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=5) as response:
                    health = (response.status, json.loads(response.read()))
                    break
            except OSError:
                time.sleep(1)
        assert health is not None, "the service never answered its health check"
        assert health[0] == 200 and health[1]["status"] == "ok"
        assert processes_using(data_dir), "the embedded servers should run inside the data folder"
        children = psutil.Process(service.pid).children(recursive=True)
        assert len(children) >= 3  # web, worker, beat (and their own children)
    finally:
        service.send_signal(signal.SIGTERM)
        output, _ = service.communicate(timeout=60)
    assert service.returncode == 0, output[-2000:]
    assert f"http://127.0.0.1:{port}/" in output
    time.sleep(1)
    assert processes_using(data_dir) == []
    assert [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE] == []
