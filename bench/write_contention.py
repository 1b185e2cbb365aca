"""Concurrent writes to one subject: the mixes an outside probe used to find deadlocks, counted.

    .venv/bin/python bench/write_contention.py [--duration-pair 15] [--duration-mix 40] [--clients 14]

Two mixes against a real gunicorn and a real Celery worker, on one hot subject:

- pair: 2 clients correcting (each its own keyed fact) while 2 write keyed facts;
- mix: N clients sending events, keyed writes, corrections, forgets, idempotent writes (a small
  pool of keys, so most are replays) and searches.

Every answer is classified: the one the contract promises (201, 202, 200), an expected
refusal (409 `memory_not_current` when another client corrected or superseded the same memory
first; 409 `erased` when an idempotent write's memory was forgotten meanwhile), or an error (any
5xx, an unexpected 4xx, a broken connection). The target is 0 errors. It uses its own database
(`bench_contention` unless --database) and private Redis, like bench/api_load.py, and prints the
counts per operation. `run_mix` is also what tests/api/test_write_contention.py drives.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.api_load import GUNICORN, PYTHON, bench_database, free_port, owner_url, start_redis, wait_ready  # noqa: E402

CELERY = os.path.join(ROOT, ".venv", "bin", "celery")
SUBJECT = "hot-subject"
CITIES = ["Lisbon", "Porto", "Braga", "Faro", "Coimbra", "Evora", "Aveiro", "Viseu"]
FACTS = ["I like green tea.", "I play the cello.", "I am learning Japanese.", "I cycle to work.",
         "My daughter is called Ana.", "I prefer short answers."]
# What a correct service may answer besides success, per operation (status, error code).
EXPECTED_REFUSALS = {
    "correct": {(409, "memory_not_current"), (404, "memory_not_found")},
    "forget": {(404, "memory_not_found")},
    "idempotent": {(409, "erased")},
}


class Client:
    def __init__(self, port: int, key: str, timeout: float = 60):
        self.port, self.key, self.timeout = port, key, timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, method: str, path: str, body=None, headers=None) -> tuple[int, dict | None]:
        sent = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json", **(headers or {})}
        try:
            self.conn.request(method, "/api/v1/" + path, body=None if body is None else json.dumps(body), headers=sent)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            raise
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, {"error": {"code": "not_json"}}


@dataclass
class Tally:
    ok: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    samples: list = field(default_factory=list)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def _code(body) -> str:
    return ((body or {}).get("error") or {}).get("code", "") if isinstance(body, dict) else ""


class Worker:
    """One simulated agent: a loop of operations on the hot subject."""

    def __init__(self, n: int, port: int, key: str, ops: list[str], tally: Tally, lock: threading.Lock):
        self.n, self.api, self.ops, self.tally, self.lock = n, Client(port, key), ops, tally, lock
        self.rng = random.Random(n)
        self.own: str | None = None  # the current version of this client's own fact
        self.i = 0

    def record(self, op: str, status: int, body, expected: int) -> None:
        with self.lock:
            if status == expected:
                self.tally.ok[op] += 1
            elif (status, _code(body)) in EXPECTED_REFUSALS.get(op, set()):
                self.tally.refused[f"{op} {status} {_code(body)}"] += 1
            else:
                self.tally.errors[f"{op} {status} {_code(body)}"] += 1
                if len(self.tally.samples) < 10:
                    self.tally.samples.append((op, status, body))

    def step(self) -> None:
        self.i += 1
        op = self.rng.choice(self.ops)
        path = f"subjects/{SUBJECT}"
        if op == "event":
            status, body = self.api.call("POST", f"{path}/events", {
                "event_id": f"c{self.n}-{self.i}-{time.time_ns()}", "role": "user",
                "content": f"I live in {self.rng.choice(CITIES)} now and {self.rng.choice(FACTS).lower()}"})
            self.record(op, status, body, 202)
        elif op == "write":
            status, body = self.api.call("POST", f"{path}/memories", {
                "statement": f"I live in {self.rng.choice(CITIES)}.", "key": "user:home_city"})
            self.record(op, status, body, 201)
        elif op == "correct":
            if self.own is None:
                status, body = self.api.call("POST", f"{path}/memories", {
                    "statement": f"My locker is number {self.i}.", "key": f"user:locker_{self.n}"})
                self.record("write", status, body, 201)
                self.own = body["id"] if status == 201 else None
                return
            status, body = self.api.call("PATCH", f"{path}/memories/{self.own}",
                                         {"statement": f"My locker is number {self.i}."})
            self.record(op, status, body, 200)
            self.own = body["id"] if status == 200 else None
        elif op == "forget":
            status, body = self.api.call("POST", f"{path}/memories", {"statement": self.rng.choice(FACTS)})
            self.record("write", status, body, 201)
            if status == 201:
                status, body = self.api.call("DELETE", f"{path}/memories/{body['id']}")
                self.record(op, status, body, 202)
        elif op == "idempotent":
            key = f"idem-{self.rng.randrange(5)}"
            status, body = self.api.call("POST", f"{path}/memories", {"statement": f"Note {key}."},
                                         headers={"Idempotency-Key": key})
            self.record(op, status, body, 201)
        elif op == "search":
            status, body = self.api.call("POST", f"{path}/search", {"query": "where do I live?", "k": 5})
            self.record(op, status, body, 200)

    def run(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                self.step()
            except Exception as exc:  # a broken connection or a timeout is an error too
                with self.lock:
                    self.tally.errors[f"connection {type(exc).__name__}"] += 1


MIXES = {
    "pair": ["correct", "correct", "write", "write"],
    "mix": ["event", "write", "correct", "forget", "idempotent", "search"],
}


def run_mix(*, port: int, key: str, mix: str, clients: int, duration: float) -> Tally:
    """Drive `clients` threads for `duration` seconds. The pair mix gives each client one
    operation (two correctors, two writers); the mix gives each a random operation per step."""
    tally, lock = Tally(), threading.Lock()
    deadline = time.monotonic() + duration
    workers = []
    for n in range(clients):
        ops = [MIXES["pair"][n % 4]] if mix == "pair" else MIXES["mix"]
        workers.append(Worker(n, port, key, ops, tally, lock))
    threads = [threading.Thread(target=w.run, args=(deadline,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally


def report(name: str, tally: Tally, seconds: float) -> None:
    total = sum(tally.ok.values()) + sum(tally.refused.values()) + tally.error_count
    print(f"{name}: {total} requests in {seconds:.0f} s, errors {tally.error_count}")
    print(f"  ok:      {dict(sorted(tally.ok.items()))}")
    print(f"  refused: {dict(sorted(tally.refused.items()))} (expected answers to a race)")
    if tally.errors:
        print(f"  errors:  {dict(sorted(tally.errors.items()))}")
        for sample in tally.samples[:5]:
            print(f"    e.g. {sample}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration-pair", type=float, default=15.0)
    parser.add_argument("--duration-mix", type=float, default=40.0)
    parser.add_argument("--clients", type=int, default=14)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--database", default="bench_contention")
    args = parser.parse_args()

    db_url = bench_database(owner_url(), args.database)
    tmp = tempfile.mkdtemp(prefix="contention-")
    redis, redis_url = start_redis(tmp)
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url, "API_THROTTLE_RATE": "100000000/min",
           "LOG_LEVEL": "WARNING", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TORCH_NUM_THREADS": "1"}
    processes = []
    try:
        subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        out = subprocess.run([PYTHON, "manage.py", "create_api_key", "--tenant", "contention", "--create-tenant",
                              "--name", "contention"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        key = out.stdout.strip().splitlines()[-1]
        port = free_port()
        processes.append(subprocess.Popen(
            [GUNICORN, "memoryapp.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers),
             "--threads", str(args.threads), "--config", "python:memoryapp.gunicorn_config"],
            cwd=ROOT, env=env, start_new_session=True))
        processes.append(subprocess.Popen(
            [CELERY, "-A", "workers.celery", "worker", "-Q", "extraction,maintenance,erasure", "--concurrency", "1",
             "--loglevel", "WARNING"], cwd=ROOT, env=env, start_new_session=True))
        wait_ready(port)
        Client(port, key, timeout=180).call("POST", f"subjects/{SUBJECT}/search", {"query": "warm up"})
        errors = 0
        for name, duration, clients in (("pair", args.duration_pair, 4), ("mix", args.duration_mix, args.clients)):
            print(f"{name}: {clients} clients for {duration:.0f} s...", flush=True)
            started = time.monotonic()
            tally = run_mix(port=port, key=key, mix=name, clients=clients, duration=duration)
            report(name, tally, time.monotonic() - started)
            errors += tally.error_count
        return 1 if errors else 0
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(process.pid, signal.SIGKILL)
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
