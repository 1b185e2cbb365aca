"""A million memories: search, ingestion, listing, erasure, export and size at 100k and at 1M in
one run, and the memory footprint of a web and a worker process (issue 18).

The run builds a tenth of the data (100 tenants, ~100 memories per subject), measures, grows the
same tenants to the full size (10,000 subjects at 1M) and measures again, so every 1M figure has
its 100k counterpart taken minutes apart on the same machine. The searches at both sizes ask the
same questions of the same subjects (those of the first tenth): only the table around them grows.

How the data is made (printing how long each step takes):

- A pool of distinct, real texts is embedded for real with MiniLM, once: LoCoMo's conversation
  turns (the messages, ~23 words), each turn's clauses (memoryapp/clauses.py, as the extractor
  embeds them), LoCoMo's per-session observations (facts, ~15 words) and short template facts
  (bench/search_latency.py). Without LoCoMo on disk, only template texts are used.
- Each subject gets ~67 events, each a pool message; each event has its episode (an episodic
  memory: the message, its vector and its clause vectors) and every other event one semantic
  fact from the pool, cited by an evidence link: ~1.5 memories per event, ~100 per subject.
  Events, memories and evidence are generated inside PostgreSQL (INSERT ... SELECT, columns in
  COLUMNS below), not embedded: a memory's vector is its pool text's vector plus one of 2,000
  fixed Gaussian noise vectors (sigma 0.02 per dimension: cosine ~0.93 to the text's own; length
  1 +- 2%, not exactly 1, since the embedded pgvector 0.6 cannot normalise in SQL), so ~24k real
  vectors become a million distinct ones in minutes instead of the day that embedding a million
  statements would take on two busy cores. What this means for the figures: the texts, their
  lengths, the full-text index and the vector geometry within a subject are real; but at 1M each
  message recurs ~110 times across the store (rarely twice in one subject), so the HNSW graph
  holds clusters of near-duplicates that truly distinct statements would not form, and the GIN
  index sees ~10k distinct texts' lexemes. Search scopes by subject before ranking (an exact scan
  of the subject's rows, not the HNSW graph), so its figures are not flattered by the clusters;
  the HNSW index's size and build time are those of this clustered graph. Query vectors are real
  embeddings of LoCoMo's questions.
- Tenants and subjects are created through the services (tenant_create, subject_get_or_create),
  which write their audit trail; the bulk rows have no audit entries of their own, except the
  heavy subject's (below): a `memory_written` entry with its snapshot per memory and an
  `events_appended` entry per 20 events, as writes through the services leave.
- Indexes of the memory table that back no constraint (HNSW, GIN, btrees) are dropped before a
  bulk insert and rebuilt after it (their definitions read from pg_indexes), then the tables are
  vacuumed and analysed, as a live store would be.

Measured at each size, through the code a request or a worker runs:

- search: memory_search (k=10) in a transaction, as a request, p50/p95/p99, with the query vector
  given and with the query embedded per call; the ratio of 1M to 100k (target <= 1.5) and the
  plan (EXPLAIN ANALYZE) of the ranking statement of the search at p95;
- ingestion: events appended with event_append and extracted by a real Celery worker (its own
  redis-server), events/s from the first append to the last event processed;
- listing: the API's memory_page (first page of 50 of a random subject; and every page of 100 of
  the 10,000-memory subject, following the cursor);
- export and erasure of a subject holding 10,000 memories (~6,667 events): requested through the
  services, run by the worker, timed to the job's end; the erasure's receipt is printed (its
  `verification.passed`, residue and what it removed, as the console shows it) and the tenant's
  audit chain is verified after it (audit_verify);
- size: pg_total_relation_size of every memoryapp table over the number of memories.

At the end: the RSS (and USS, PSS) of a gunicorn worker with the model loaded after 100 requests
(bench/api_load.py's bench_service, the project's gunicorn config, 2 workers) and of the Celery
worker after its jobs, and how many of each fit in 24 GiB.

    .venv/bin/python -m memoryapp.embedded exec -- .venv/bin/python bench/scale.py [--size 1000000]
        [--queries 400] [--list-calls 200] [--ingest-events 400] [--database bench_scale]
        [--keep | --reuse] [--explain N] [--profile-erasure | --erasure-only]

`--size 20000 --queries 50 --list-calls 20 --ingest-events 40` is a smoke run (~15 min on a busy
machine, most of it the first embedding of the pool). `--keep` leaves the database; `--reuse`
measures a kept one at the size it has (one stage, no build). `--explain N` prints the plans of
N searches and measures nothing; `--profile-erasure` erases a new 10,000-memory subject in this
process under cProfile with every SQL statement timed, and measures nothing else;
`--erasure-only` exports and erases a new one through the worker, as the stages do.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402

DB_NAME = "bench_scale"
TENANTS = 100
MEMORIES_PER_SUBJECT = 100
EVENTS_PER_SUBJECT = (54, 80)  # uniform: mean 67 events, +1 fact every other event -> ~100 memories
HEAVY_MEMORIES = 10_000  # the subject that is exported and erased at each size
NOISE_VECTORS = 2000
NOISE_SIGMA = 0.02
GEN = "benchgen"  # schema of the pool tables (owner only; not counted in the store's size)
GiB = 1024 ** 3

# Every column the bulk loader writes, one place: table -> {column: SQL expression}. The
# expressions read `subj` (the subject row), `s.events` (its number of events), `g.n` (the
# event's number, 1-based), `b.at` (now), `e` (the event, for memories), `m` (the memory, for
# evidence), `p` (the pool row) and `z` (the noise row). A schema change (a renamed or added
# column, a composite key) is an edit here.
COLUMNS = {
    "memoryapp_event": {
        "id": "gen_random_uuid()",
        "tenant_id": "subj.tenant_id",
        "subject_id": "subj.id",
        "event_id": "'e' || g.n",
        "seq": "g.n",
        "role": "'user'",
        "source_kind": "'user'",
        "content": "p.statement",
        "occurred_at": "b.at - (s.events - g.n) * interval '53 minutes'",
        "recorded_at": "b.at - (s.events - g.n) * interval '53 minutes'",
        "session_id": "'s' || (g.n / 20)",
        "speaker": "''",
        "metadata": "'{}'::jsonb",
        "status": "'processed'",
        "attempts": "1",
        "processed_at": "b.at - (s.events - g.n) * interval '53 minutes'",
        "redacted": "false",
        "quarantined": "false",
        "erasing": "false",
        "flags": "'[]'::jsonb",
        "error": "''",
    },
    # The memory columns shared by episodes and facts; the two differ in EPISODE / FACT below.
    "memoryapp_memory": {
        "id": "gen_random_uuid()",
        "tenant_id": "e.tenant_id",
        "subject_id": "e.subject_id",
        "namespace": "''",
        "statement": "p.statement",
        "key": "''",
        "source_kind": "'user'",
        "source_event_id": "e.id",
        "evidence_count": "1",
        "confidence": "1.0",
        "sensitivity": "'personal'",
        "valid_from": "e.occurred_at",
        "recorded_at": "e.recorded_at",
        "status": "'active'",
        "status_reason": "''",
        "access_count": "0",
        "flags": "'[]'::jsonb",
        "erasing": "false",
        "content_hash": "p.content_hash",
        "embedding": "p.embedding + z.v",
        "embedding_version": "%(embedding_version)s",
        "extractor_version": "'bench-scale'",
    },
    "memoryapp_memoryevidence": {
        "tenant_id": "m.tenant_id",
        "memory_id": "m.id",
        "event_id": "m.source_event_id",
        "created_at": "m.recorded_at",
    },
}
EPISODE = {
    "memory_type": "'episodic'",
    "importance": "0.4",
    "metadata": "jsonb_build_object('session_id', e.session_id, 'speaker', e.speaker, 'role', e.role, "
                "'event_id', e.event_id, 'seq', e.seq)",
    "clause_embeddings": f"(SELECT array_agg(c.embedding + z.v ORDER BY c.n) FROM {GEN}.clause c "
                         "WHERE c.message = p.idx)",
}
FACT = {"memory_type": "'semantic'", "importance": "0.6", "metadata": "'{}'::jsonb", "clause_embeddings": "NULL"}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------------------------------------
# The pool of real texts and vectors

def pool_texts() -> tuple[list[str], list[str], list[str]]:
    """(messages, facts, queries): distinct real texts. LoCoMo when it is on disk."""
    from bench.search_latency import QUERIES, TEMPLATES, fill

    rng = random.Random(7)
    facts = sorted({fill(rng.choice(TEMPLATES), rng) for _ in range(20000)})
    messages, queries = [], []
    try:
        from bench.locomo_data import DEFAULT_PATH

        data = json.loads(Path(os.environ.get("LOCOMO_PATH", DEFAULT_PATH)).read_text())
    except OSError:
        data = []
    for conv in data:
        for key, turns in conv["conversation"].items():
            if isinstance(turns, list):
                messages += [t["text"].strip() for t in turns if t.get("text", "").strip()]
        for session in conv.get("observation", {}).values():
            for items in session.values():
                facts += [item[0] if isinstance(item, list) else item for item in items]
        queries += [q["question"] for q in conv.get("qa", []) if q.get("question")]
    if not messages:  # no LoCoMo here: template sentences stand in for messages
        messages = sorted({f"{fill(rng.choice(TEMPLATES), rng)} {fill(rng.choice(TEMPLATES), rng)}"
                           for _ in range(8000)})
        queries = [fill(rng.choice(QUERIES), rng) for _ in range(1000)]
    messages = sorted(set(messages))
    facts = sorted(set(facts) - set(messages))
    return messages, facts, sorted(set(queries))


def build_pool(messages: list[str] | None = None, facts: list[str] | None = None, cache: bool = True) -> dict:
    """Embed the pool (pool_texts() unless given) for real and store it in GEN tables. Returns counts."""
    from django.db import connections

    from memoryapp import embeddings
    from memoryapp.clauses import statement_clauses
    from memoryapp.services.memories import content_hash

    if messages is None or facts is None:
        messages, facts, _ = pool_texts()
    clauses = [statement_clauses(m) for m in messages]
    texts = sorted(set(messages) | set(facts) | {c for found in clauses for c in found})
    # The pool's vectors are kept in var/ between runs (keyed by the texts and the model): a rerun
    # on a busy machine need not embed 20k texts again. Its embedding time is that of the run
    # that made the file.
    digest = hashlib.sha256("\n".join([embeddings.EMBEDDING_VERSION, *texts]).encode()).hexdigest()[:16]
    path = Path(benchdb.PROJECT_ROOT) / "var" / f"bench-scale-pool-{digest}.npz"
    if cache and path.exists():
        stored = np.load(path)
        vectors, seconds = stored["vectors"], float(stored["seconds"])
        log(f"pool vectors read from {path.name} (embedded in {seconds:.0f} s when made)")
    else:
        start = time.perf_counter()
        vectors = embeddings.embed_texts(texts, batch_size=64)
        seconds = time.perf_counter() - start
        if cache:
            path.parent.mkdir(exist_ok=True)
            np.savez(path, vectors=vectors, seconds=seconds)
    index = {t: i for i, t in enumerate(texts)}
    log(f"embedded a pool of {len(texts):,} distinct texts ({len(messages):,} messages, {len(facts):,} facts, "
        f"the rest clauses) in {seconds:.0f} s")
    noise = np.random.default_rng(11).normal(0, NOISE_SIGMA, (NOISE_VECTORS, vectors.shape[1])).astype(np.float32)
    # pgvector before 0.7 (the embedded default has 0.6) has no l2_normalize: text and noise are
    # both scaled by the expected norm of their sum, which then has length 1 +- ~2%. Search
    # compares by cosine only, which no length changes.
    scale = 1 / math.sqrt(1 + vectors.shape[1] * NOISE_SIGMA ** 2)
    vectors, noise = vectors * scale, noise * scale
    owner = connections["owner"]
    owner.ensure_connection()
    raw = owner.connection
    with raw.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {GEN} CASCADE")
        cur.execute(f"CREATE SCHEMA {GEN}")
        cur.execute(f"CREATE TABLE {GEN}.pool (idx int PRIMARY KEY, kind text, statement text, content_hash text, "
                    "embedding vector(384))")
        cur.execute(f"CREATE TABLE {GEN}.clause (message int, n int, embedding vector(384))")
        cur.execute(f"CREATE TABLE {GEN}.noise (idx int PRIMARY KEY, v vector(384))")
        with cur.copy(f"COPY {GEN}.pool FROM STDIN") as copy:
            for kind, items in (("message", messages), ("fact", facts)):
                for i, text in enumerate(items):
                    # message i is idx i; fact i is idx 1,000,000 + i
                    copy.write_row((i if kind == "message" else 1_000_000 + i, kind, text, content_hash(text),
                                    vector_text(vectors[index[text]])))
        with cur.copy(f"COPY {GEN}.clause FROM STDIN") as copy:
            for i, found in enumerate(clauses):
                for n, clause in enumerate(found):
                    copy.write_row((i, n, vector_text(vectors[index[clause]])))
        with cur.copy(f"COPY {GEN}.noise FROM STDIN") as copy:
            for i, v in enumerate(noise):
                copy.write_row((i, vector_text(v)))
        cur.execute(f"CREATE INDEX ON {GEN}.clause (message)")
        cur.execute(f"ANALYZE {GEN}.pool")
        cur.execute(f"ANALYZE {GEN}.clause")
    raw.commit()
    return {"messages": len(messages), "facts": len(facts), "texts": len(texts), "embed_seconds": seconds}


def vector_text(v) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(v).tolist()) + "]"


# ---------------------------------------------------------------------------------------------
# Building the store

def subjects_create(tenants: list, refs: list[str]) -> list[int]:
    """The subjects `refs` in every tenant, through the service. Returns their row ids."""
    from django.db import transaction

    from memoryapp.services.tenants import subject_get_or_create

    ids = []
    for tenant in tenants:
        with transaction.atomic():  # one per tenant, as the caller of the service owns it
            for ref in refs:
                ids.append(subject_get_or_create(tenant=tenant, external_id=ref).pk)
    return ids


def _insert(cur, ids: list[int], counts: list[int]) -> tuple[int, int, dict]:
    """Events, then episodes and facts, then evidence links for the subjects `ids` (which have
    no events yet), `counts` events each. Returns (events, memories, seconds per step)."""
    from memoryapp import embeddings

    params = {"ids": ids, "counts": counts, "embedding_version": embeddings.EMBEDDING_VERSION}
    cur.execute(f"SELECT count(*) FILTER (WHERE kind = 'message'), count(*) FILTER (WHERE kind = 'fact') "
                f"FROM {GEN}.pool")
    messages, facts = cur.fetchone()
    times = {}
    start = time.perf_counter()
    cols = COLUMNS["memoryapp_event"]
    cur.execute(
        f"""INSERT INTO memoryapp_event ({', '.join(cols)})
            SELECT {', '.join(cols.values())}
            FROM unnest(%(ids)s::bigint[], %(counts)s::int[]) AS s(id, events)
            JOIN memoryapp_subject subj ON subj.id = s.id
            CROSS JOIN LATERAL generate_series(1, s.events) AS g(n)
            CROSS JOIN (SELECT now() AS at) AS b
            JOIN {GEN}.pool p ON p.kind = 'message'
                              AND p.idx = abs(hashtextextended(s.id || ':' || g.n, 0)) %% {messages}""",
        params,
    )
    events = cur.rowcount
    # event_append numbers a subject's next event from last_seq.
    cur.execute("""UPDATE memoryapp_subject SET last_seq = x.events
                   FROM unnest(%(ids)s::bigint[], %(counts)s::int[]) AS x(id, events)
                   WHERE memoryapp_subject.id = x.id""", params)
    times["events"] = time.perf_counter() - start
    start = time.perf_counter()
    memories = 0
    for extra, join, where in (
        (EPISODE, f"JOIN {GEN}.pool p ON p.kind = 'message' AND p.statement = e.content", "true"),
        (FACT, f"JOIN {GEN}.pool p ON p.kind = 'fact' "
               f"AND p.idx = 1000000 + abs(hashtextextended(e.id::text, 1)) %% {facts}",
         "e.seq %% 2 = 0"),
    ):
        cols = {**COLUMNS["memoryapp_memory"], **extra}
        cur.execute(
            f"""INSERT INTO memoryapp_memory ({', '.join(cols)})
                SELECT {', '.join(cols.values())}
                FROM memoryapp_event e {join}
                JOIN {GEN}.noise z ON z.idx = abs(hashtextextended(e.id::text, 2)) %% {NOISE_VECTORS}
                WHERE e.subject_id = ANY(%(ids)s::bigint[]) AND {where}""",
            params,
        )
        memories += cur.rowcount
    times["memories"] = time.perf_counter() - start
    start = time.perf_counter()
    cols = COLUMNS["memoryapp_memoryevidence"]
    cur.execute(
        f"""INSERT INTO memoryapp_memoryevidence ({', '.join(cols)})
            SELECT {', '.join(cols.values())} FROM memoryapp_memory m
            WHERE m.subject_id = ANY(%(ids)s::bigint[]) AND m.source_event_id IS NOT NULL""",
        params,
    )
    times["evidence"] = time.perf_counter() - start
    return events, memories, times


def _owner_raw():
    from django.db import connections

    owner = connections["owner"]
    owner.ensure_connection()
    return owner.connection


def generate(subject_events: dict[int, int]) -> dict:
    """Events, memories and evidence for new subjects ({subject id: events}), generated inside
    PostgreSQL as the owner, in chunks of subjects (one transaction each), with the memory
    table's indexes that back no constraint dropped meanwhile and rebuilt after."""
    raw = _owner_raw()
    ids = list(subject_events)
    times: dict[str, float] = {}
    events = memories = 0
    with raw.cursor() as cur:
        cur.execute("""SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
                       FROM pg_index i WHERE i.indrelid = 'memoryapp_memory'::regclass
                       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)""")
        dropped = cur.fetchall()
        for name, _ in dropped:
            cur.execute(f"DROP INDEX {name}")
        raw.commit()
        chunk = 500
        for i in range(0, len(ids), chunk):
            part = ids[i:i + chunk]
            e, m, t = _insert(cur, part, [subject_events[s] for s in part])
            raw.commit()
            events, memories = events + e, memories + m
            for k, v in t.items():
                times[k] = times.get(k, 0.0) + v
            if (i // chunk) % 4 == 3:
                log(f"  ... {i + len(part):,}/{len(ids):,} subjects, {memories:,} memories")
        # Room to build the HNSW graph in memory, and one parallel helper (two cores).
        cur.execute("SET maintenance_work_mem = '3GB'")
        cur.execute("SET max_parallel_maintenance_workers = 1")
        for name, definition in dropped:
            start = time.perf_counter()
            cur.execute(definition)
            raw.commit()
            times[f"index {name}"] = time.perf_counter() - start
        cur.execute("RESET maintenance_work_mem")
        cur.execute("RESET max_parallel_maintenance_workers")
        raw.commit()
    was = raw.autocommit  # VACUUM runs outside a transaction; the connection is Django's
    raw.autocommit = True
    try:
        start = time.perf_counter()
        with raw.cursor() as cur:
            for table in ("memoryapp_event", "memoryapp_memory", "memoryapp_memoryevidence", "memoryapp_subject"):
                cur.execute(f"VACUUM (ANALYZE) {table}")
        times["vacuum, analyze"] = time.perf_counter() - start
    finally:
        raw.autocommit = was
    return {"events": events, "memories": memories, "times": times}


def heavy_subject(tenant, ref: str) -> dict:
    """A subject holding HEAVY_MEMORIES memories (with its events and evidence), inserted into the
    live indexes: a big subject arriving in a running store."""
    sid = subjects_create([tenant], [ref])[0]
    raw = _owner_raw()
    start = time.perf_counter()
    with raw.cursor() as cur:
        events, memories, _ = _insert(cur, [sid], [math.ceil(HEAVY_MEMORIES / 1.5)])
        raw.commit()
        cur.execute("ANALYZE memoryapp_memory")
        cur.execute("ANALYZE memoryapp_event")
        raw.commit()
    audit_entries = heavy_audit_trail(tenant, ref)
    return {"memories": memories, "events": events, "audit_entries": audit_entries,
            "seconds": time.perf_counter() - start}


def heavy_audit_trail(tenant, ref: str) -> int:
    """The audit trail a subject written through the services has (the bulk rows have none):
    a `memory_written` entry per memory with its snapshot (statement included) as `after`, and
    an `events_appended` entry per 20 events, sealed into the tenant's chain. An erasure must
    blank these payloads, and its verification reads them all."""
    from django.db import transaction

    from memoryapp.actors import Actor
    from memoryapp.models import Event, Memory
    from memoryapp.services.audit import AuditBuffer
    from memoryapp.services.memories import memory_snapshot
    from memoryapp.tenancy import tenant_activate

    actor = Actor("system", "bench-scale")
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        buffer = AuditBuffer(tenant=tenant)
        events = list(Event.objects.filter(tenant=tenant, subject__external_id=ref).order_by("seq")
                      .values_list("event_id", flat=True))
        for start in range(0, len(events), 20):
            buffer.record(tenant=tenant, actor=actor, action="events_appended", subject_ref=ref,
                          details={"event_ids": events[start:start + 20]})
        for memory in Memory.objects.filter(tenant=tenant, subject__external_id=ref).defer(
                "embedding", "clause_embeddings").iterator(chunk_size=2000):
            buffer.record(tenant=tenant, actor=actor, action="memory_written", subject_ref=ref,
                          memory_id=memory.id, after=memory_snapshot(memory),
                          details={"supersedes": [], "conflicts": []})
        written = len(buffer.flush())
    return written


def store_counts() -> dict:
    """Memories, events and the size of every memoryapp table (owner: sees every tenant)."""
    raw = _owner_raw()
    with raw.cursor() as cur:
        cur.execute("SELECT count(*) FROM memoryapp_memory")
        memories = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM memoryapp_event")
        events = cur.fetchone()[0]
        cur.execute("""SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
                       JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE c.relkind = 'r' AND n.nspname = 'public' AND c.relname LIKE 'memoryapp\\_%%'
                       ORDER BY 2 DESC""")
        tables = dict(cur.fetchall())
        cur.execute("""SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index
                       WHERE indrelid = 'memoryapp_memory'::regclass ORDER BY 2 DESC""")
        indexes = dict(cur.fetchall())
    raw.commit()
    return {"memories": memories, "events": events, "tables": tables, "indexes": indexes,
            "total": sum(tables.values())}


# ---------------------------------------------------------------------------------------------
# Measurements

def pct(values, p) -> float:
    return float(np.percentile(np.array(values), p)) if values else float("nan")


def search_plan(tenants, refs, queries: list[str], count: int, seed: int) -> list:
    rng = random.Random(seed)
    return [(rng.choice(tenants), rng.choice(refs), rng.choice(queries)) for _ in range(count)]


def measure_search(plan, vectors, k: int = 10) -> dict:
    """memory_search as a request runs it (inside a transaction), with the query's vector given
    and embedded per call. Returns ms lists and the slowest statement of the p95 search."""
    from django.db import transaction

    from memoryapp.retrieval import memory_search

    def run(with_embedding: bool) -> list[float]:
        times, returned = [], 0
        for (tenant, ref, query), vector in zip(plan, vectors):
            start = time.perf_counter()
            with transaction.atomic():
                hits = memory_search(tenant=tenant, subject_ref=ref, query=query, k=k,
                                     query_embedding=None if with_embedding else vector)
            times.append(1000 * (time.perf_counter() - start))
            returned += len(hits)
        assert returned >= k * len(plan) * 0.95, f"searches returned {returned} hits for {len(plan)} searches"
        return times

    run(False)  # warm-up: connections, caches, prepared statements
    plain = run(False)
    embedded = run(True)
    return {"without": plain, "with": embedded}


def explain_search(tenant, ref: str, query: str, vector) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the slowest statement one search runs (its SQL and
    parameters captured as the search runs them), in a transaction bound to the tenant."""
    from django.db import connection, transaction

    from memoryapp.retrieval import memory_search
    from memoryapp.tenancy import tenant_activate

    seen = []

    def capture(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            seen.append((time.perf_counter() - start, sql, params))

    with transaction.atomic():
        with connection.execute_wrapper(capture):
            memory_search(tenant=tenant, subject_ref=ref, query=query, k=10, query_embedding=vector)
    # The ranking statement (retrieval._SQL) is the one that reads the memory table; the others
    # are small. Under load any statement can be the slowest once, so pick it by what it is.
    ranking = [s for s in seen if "scope AS" in s[1]]
    seconds, sql, params = max(ranking or seen, key=lambda s: s[0])
    # The tenant binding travels in front of the ranking statement (tenancy.py); EXPLAIN would
    # explain only that first statement, so it is bound apart below.
    sql = re.sub(r"^\s*SELECT set_config\([^;]*\);\s*", "", sql)
    try:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
            transaction.set_rollback(True)
    except Exception as exc:  # the plan is a diagnosis, not a figure: say why it is missing
        plan = f"(EXPLAIN failed: {exc})"
    return f"{'ranking statement' if ranking else 'slowest'} of {len(seen)}, {1000 * seconds:.1f} ms when run:\n{plan}"


def api_request(tenant, api_key):
    """What an authenticated API request carries into the answer functions (api/views)."""
    return SimpleNamespace(tenant=tenant, api_key=api_key)


def measure_listing(tenants_keys: dict, refs_by_tenant: dict, heavy: tuple, calls: int, seed: int) -> dict:
    """The API's memory_page: first pages of 50 of random subjects, and every page of 100 of the
    heavy subject following the cursor."""
    from django.db import transaction

    from api.views.memories import memory_page
    from memoryapp.tenancy import tenant_activate

    rng = random.Random(seed)
    tenants = list(tenants_keys)
    first = []
    for i in range(calls + 20):
        tenant = rng.choice(tenants)
        start = time.perf_counter()
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            page = memory_page(api_request(tenant, tenants_keys[tenant]), rng.choice(refs_by_tenant[tenant.pk]),
                               {"limit": 50})
        if i >= 20:  # the first 20 warm up
            first.append(1000 * (time.perf_counter() - start))
        assert len(page["results"]) == 50, "a subject's first page is not full"
    tenant, ref = heavy
    pages, cursor, listed = [], None, 0
    walk = time.perf_counter()
    while True:
        start = time.perf_counter()
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            page = memory_page(api_request(tenant, tenants_keys[tenant]), ref,
                               {"limit": 100, **({"cursor": cursor} if cursor else {})})
        pages.append(1000 * (time.perf_counter() - start))
        listed += len(page["results"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    return {"first": first, "pages": pages, "listed": listed, "walk_seconds": time.perf_counter() - walk}


def wait_job(tenant, job_id, timeout: float = 3600):
    from django.db import transaction

    from memoryapp.models import Job
    from memoryapp.tenancy import tenant_activate

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            job = Job.objects.get(pk=job_id)
        if job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED):
            return job
        time.sleep(0.05)
    raise SystemExit(f"job {job_id} did not finish in {timeout} s")


def measure_export_erasure(tenant, ref: str) -> dict:
    """Export, then erase, the heavy subject through the services and the worker."""
    from django.db import transaction

    from memoryapp.actors import Actor
    from memoryapp.services.audit import audit_verify
    from memoryapp.services.export import export_request
    from memoryapp.services.memories import subject_erase_request
    from memoryapp.tenancy import tenant_activate

    actor = Actor("system", "bench-scale")
    out = {}
    start = time.perf_counter()
    job = export_request(tenant=tenant, subject_ref=ref, actor=actor)
    job = wait_job(tenant, job.pk)
    out["export_seconds"] = time.perf_counter() - start
    assert job.status == "succeeded", f"export failed: {job.error}"
    out["export"] = job.result
    out["export_job_seconds"] = (job.finished_at - job.started_at).total_seconds()

    start = time.perf_counter()
    with transaction.atomic():  # the request's transaction (ATOMIC_REQUESTS)
        job = subject_erase_request(tenant=tenant, subject_ref=ref, actor=actor)
    job = wait_job(tenant, job.pk)
    out["erase_seconds"] = time.perf_counter() - start
    out["erase_job_seconds"] = (job.finished_at - job.started_at).total_seconds()
    assert job.status == "succeeded", f"erasure failed: {job.error}"
    receipt = job.result
    out["receipt"] = {"passed": receipt["verification"]["passed"], "residue": receipt["verification"]["residue"],
                      "texts_searched": receipt["verification"].get("texts_searched"),
                      "removed": {k: v for k, v in receipt["removed"].items() if v}}
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        chain = audit_verify(tenant=tenant)
    out["audit_chain_ok"] = chain.ok
    out["audit_chain"] = {"checked": chain.checked, "problems": chain.problems[:5]}
    return out


def measure_ingest(tenant, label: str, texts: list[str], subjects: int = 4) -> dict:
    """event_append in batches (as the API takes them) into fresh subjects of a loaded tenant,
    extracted by the worker; events/s from the first append to the last event processed."""
    from datetime import datetime, timedelta, timezone as dt_timezone

    from bench.ingest import wait_processed
    from memoryapp.actors import Actor
    from memoryapp.services.events import EventInput, event_append

    actor = Actor("system", "bench-scale")
    refs = [f"ingest-{label}-{int(time.time())}-{i}" for i in range(subjects)]
    per = len(texts) // subjects
    base = datetime.now(dt_timezone.utc) - timedelta(hours=1)
    start = time.perf_counter()
    for si, ref in enumerate(refs):
        chunk = texts[si * per:(si + 1) * per]
        for b in range(0, len(chunk), 50):
            events = [EventInput(f"i{b + i}", "user", text, occurred_at=base + timedelta(seconds=b + i))
                      for i, text in enumerate(chunk[b:b + 50])]
            event_append(tenant=tenant, subject_ref=ref, events=events, actor=actor)
    accepted = time.perf_counter() - start
    wait_processed(tenant, refs, per * subjects, timeout=3600)
    elapsed = time.perf_counter() - start
    return {"events": per * subjects, "accepted_seconds": accepted, "seconds": elapsed,
            "per_second": per * subjects / elapsed}


def worker_splits(log_path: Path) -> list[dict]:
    """The worker's own split of each extraction job (claim, embed_wait, write seconds), from its log."""
    import ast

    out = []
    for line in log_path.read_text().splitlines():
        found = re.search(r"extraction job \S+: \d+ events; seconds (\{.*\})", line)
        if found:
            out.append(ast.literal_eval(found.group(1)))
    return out


def process_memory(pid: int) -> dict:
    import psutil

    info = psutil.Process(pid).memory_full_info()
    return {"rss": info.rss, "uss": info.uss, "pss": getattr(info, "pss", 0)}


def measure_web_rss(database: str, tenant, refs: list[str], queries: list[str], requests: int = 100) -> list[dict]:
    """RSS of each gunicorn worker (the project's config, model loaded at start) after
    `requests` searches and listings over HTTP on a loaded tenant."""
    import psutil

    from bench.api_load import Api, bench_service
    from memoryapp.actors import Actor
    from memoryapp.services.tenants import api_key_create

    _, raw_key = api_key_create(tenant=tenant, name="bench-scale-rss", actor=Actor("system", "bench-scale"))
    rng = random.Random(5)
    with bench_service(database=database, tenant="bench-scale-rss-probe", key_name="probe", prefix="bench-scale-",
                       workers=2, threads=4) as (port, _):
        api = Api(port, raw_key, timeout=120)
        statuses = []
        for i in range(requests):
            ref = rng.choice(refs)
            if i % 5 == 4:
                status, _ = api.call("GET", f"subjects/{ref}/memories?limit=50")
            else:
                status, _ = api.call("POST", f"subjects/{ref}/search", {"query": rng.choice(queries), "k": 10})
            statuses.append(status)
        assert statuses.count(200) == len(statuses), f"requests failed: {sorted(set(statuses))}"
        bind = f"127.0.0.1:{port}"
        procs = {p.pid: p for p in psutil.process_iter(["cmdline"]) if bind in " ".join(p.info["cmdline"] or [])}
        out = []
        for p in procs.values():
            role = "worker" if p.ppid() in procs else "master"
            out.append({"role": role, "pid": p.pid, **process_memory(p.pid)})
        return out


def profile_erasure(tenant, ref: str) -> None:
    """Erase a heavy subject in this process (the worker's job_run with its runners) under
    cProfile, with the time of every SQL statement summed by its first words: where the
    seconds go."""
    import cProfile
    import pstats
    from collections import defaultdict

    from django.db import connection, transaction

    from memoryapp.actors import Actor
    from memoryapp.services.jobs import job_run
    from memoryapp.services.memories import subject_erase_request
    from workers.tasks import JOB_RUNNERS, resolve

    heavy = heavy_subject(tenant, ref)
    log(f"profile: heavy subject of {heavy['memories']:,} memories, {heavy['audit_entries']:,} audit entries, "
        f"in {heavy['seconds']:.0f} s")
    with transaction.atomic():
        job = subject_erase_request(tenant=tenant, subject_ref=ref, actor=Actor("system", "bench-scale"))
    sql_time: dict = defaultdict(lambda: [0.0, 0])

    def timed(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            key = " ".join(sql.split())[:110]
            sql_time[key][0] += time.perf_counter() - start
            sql_time[key][1] += 1

    profiler = cProfile.Profile()
    start = time.perf_counter()
    with connection.execute_wrapper(timed):
        profiler.enable()
        job_run(tenant_id=tenant.pk, job_id=str(job.pk), runners={k: resolve(v) for k, v in JOB_RUNNERS.items()})
        profiler.disable()
    elapsed = time.perf_counter() - start
    job = wait_job(tenant, job.pk, timeout=10)
    print(f"erasure of {heavy['memories']:,} memories in this process: {elapsed:.1f} s, status {job.status}, "
          f"verification passed: {(job.result or {}).get('verification', {}).get('passed')}")
    print(f"SQL: {sum(v[0] for v in sql_time.values()):.1f} s in {sum(v[1] for v in sql_time.values())} statements; "
          "the costliest:")
    for key, (seconds, count) in sorted(sql_time.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"  {seconds:7.2f} s {count:5d}x  {key}")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


# ---------------------------------------------------------------------------------------------
# The run

def attempt(result: dict, name: str, fn):
    """Run one measurement; a failure is logged and reported, and the run goes on (a run at 1M
    takes an hour: one broken figure must not cost the others)."""
    import traceback

    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - reported below with its traceback
        traceback.print_exc()
        result.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
        return None


def stage(label: str, ctx: dict, args) -> dict:
    """Everything measured at one size; printed as soon as it is measured."""
    from memoryapp import embeddings

    result = {"label": label, "load_before": os.getloadavg()}
    result["counts"] = counts = store_counts()
    log(f"[{label}] store: {counts['memories']:,} memories, {counts['events']:,} events, "
        f"{counts['total'] / GiB:.2f} GiB")

    def search():
        plan = search_plan(ctx["tenants"], ctx["search_refs"], ctx["queries"], args.queries, seed=4242)
        vectors = embeddings.embed_texts([q for _, _, q in plan], batch_size=64)
        s = measure_search(plan, vectors)
        result["search"] = {name: {p: pct(v, p) for p in (50, 95, 99)} for name, v in s.items()}
        log(f"[{label}] search p95: {result['search']['without'][95]:.1f} ms without embedding, "
            f"{result['search']['with'][95]:.1f} ms with")
        # The search at p95 (without embedding), explained.
        order = np.argsort(s["without"])
        at = int(order[min(len(order) - 1, int(0.95 * len(order)))])
        tenant, ref, query = plan[at]
        result["plan"] = explain_search(tenant, ref, query, vectors[at])

    def search_all():
        plan = search_plan(ctx["tenants"], ctx["all_refs"], ctx["queries"], args.queries, seed=4343)
        vectors = embeddings.embed_texts([q for _, _, q in plan], batch_size=64)
        s = measure_search(plan, vectors)
        result["search_all"] = {name: {p: pct(v, p) for p in (50, 95, 99)} for name, v in s.items()}

    heavy_tenant, heavy_ref = ctx["tenants"][0], f"heavy-{label}-{int(time.time())}"

    def listing():
        result["listing"] = measure_listing(ctx["keys"], ctx["refs_by_tenant"], (heavy_tenant, heavy_ref),
                                            calls=args.list_calls, seed=99)
        log(f"[{label}] listing: first page p95 {pct(result['listing']['first'], 95):.1f} ms; "
            f"{result['listing']['listed']:,} listed in {result['listing']['walk_seconds']:.1f} s")

    def export_erasure():
        result["export_erasure"] = ee = measure_export_erasure(heavy_tenant, heavy_ref)
        log(f"[{label}] export {ee['export_seconds']:.1f} s; erasure {ee['erase_seconds']:.1f} s, "
            f"receipt passed={ee['receipt']['passed']}")

    def ingest():
        texts = ctx["ingest_texts"][:args.ingest_events]
        seen = len(worker_splits(ctx["worker_log"]))
        result["ingest"] = measure_ingest(ctx["tenants"][1 % len(ctx["tenants"])], label, texts)
        time.sleep(0.5)  # the worker logs a job's split right after committing it
        split: dict[str, float] = {}
        for job in worker_splits(ctx["worker_log"])[seen:]:
            for k, v in job.items():
                split[k] = split.get(k, 0.0) + v
        result["ingest"]["worker_split"] = split
        log(f"[{label}] ingestion: {result['ingest']['per_second']:.1f} events/s; worker seconds {split}")

    attempt(result, "search", search)
    if ctx.get("all_refs") and ctx["all_refs"] != ctx["search_refs"]:
        attempt(result, "search over all subjects", search_all)
    result["heavy"] = attempt(result, "heavy subject", lambda: heavy_subject(heavy_tenant, heavy_ref))
    if result["heavy"]:
        log(f"[{label}] heavy subject: {result['heavy']['memories']:,} memories in {result['heavy']['seconds']:.0f} s")
        attempt(result, "listing", listing)
        attempt(result, "export, erasure", export_erasure)
    attempt(result, "ingestion", ingest)
    result["size"] = store_counts()
    result["load_after"] = os.getloadavg()
    attempt(result, "report", lambda: print_stage(result))
    return result


def print_stage(st: dict) -> None:
    c = st["counts"]
    print()
    print(f"== {st['label']}: {c['memories']:,} memories, {c['events']:,} events "
          f"(load {st['load_before'][0]:.2f} -> {st['load_after'][0]:.2f}) ==")
    print(f"{'memory_search k=10, ms':<44}{'p50':>8}{'p95':>8}{'p99':>8}")
    for name, row in st.get("search", {}).items():
        print(f"{'  first-tenth subjects, ' + name + ' embedding':<44}{row[50]:8.1f}{row[95]:8.1f}{row[99]:8.1f}")
    for name, row in st.get("search_all", {}).items():
        print(f"{'  all subjects, ' + name + ' embedding':<44}{row[50]:8.1f}{row[95]:8.1f}{row[99]:8.1f}")
    if "listing" in st:
        li = st["listing"]
        print(f"listing (memory_page): first page of 50 p50 {pct(li['first'], 50):.1f} / "
              f"p95 {pct(li['first'], 95):.1f} ms; "
              f"{li['listed']:,} memories in {len(li['pages'])} pages of 100: {li['walk_seconds']:.1f} s "
              f"(page p95 {pct(li['pages'], 95):.1f} ms)")
    if "export_erasure" in st:
        ee = st["export_erasure"]
        ex = ee["export"]
        print(f"export of the {st['heavy']['memories']:,}-memory subject ({st['heavy']['events']:,} events): "
              f"{ee['export_seconds']:.1f} s requested -> done (job {ee['export_job_seconds']:.1f} s), "
              f"{ex['size'] / 1e6:.1f} MB, counts {ex['counts']}")
        r = ee["receipt"]
        print(f"erasure of that subject: {ee['erase_seconds']:.1f} s requested -> receipt (job "
              f"{ee['erase_job_seconds']:.1f} s; goal <= 5 s); receipt verification passed: {r['passed']}, "
              f"residue {r['residue']}, {r['texts_searched']} texts searched; audit chain verifies: "
              f"{ee['audit_chain_ok']} ({ee['audit_chain']['checked']} entries"
              f"{', ' + str(ee['audit_chain']['problems']) if ee['audit_chain']['problems'] else ''})")
        print(f"  removed: {r['removed']}")
    if "ingest" in st:
        ing = st["ingest"]
        print(f"ingestion: {ing['events']} events (4 new subjects, batches of 50) accepted in "
              f"{ing['accepted_seconds']:.1f} s, extracted in {ing['seconds']:.1f} s: {ing['per_second']:.1f} events/s "
              f"end to end; the worker's own split, seconds: "
              + ", ".join(f"{k} {v:.1f}" for k, v in ing.get("worker_split", {}).items()))
    size = st.get("size")
    if size:
        print_size(size)
    for name, error in st.get("errors", {}).items():
        print(f"  FAILED {name}: {error}")
    if "plan" in st:
        print(f"-- plan at {st['label']}, the p95 search without embedding: {st['plan']}")
    print(flush=True)


def print_size(size: dict) -> None:
    print(f"size: {size['total'] / GiB:.2f} GiB for {size['memories']:,} memories = "
          f"{size['total'] / max(1, size['memories']):,.0f} bytes per memory (memory table with its indexes: "
          f"{size['tables'].get('memoryapp_memory', 0) / max(1, size['memories']):,.0f})")
    print("  tables: " + ", ".join(f"{k.removeprefix('memoryapp_')} {v / 1e6:,.0f} MB"
                                   for k, v in size["tables"].items() if v > 5e6))
    print("  memory indexes: " + ", ".join(f"{k} {v / 1e6:,.0f} MB" for k, v in size["indexes"].items()))


def report(stages: list[dict], build: dict, rss: dict | None, args) -> None:
    print()
    print(f"bench/scale.py --size {args.size:,}: {build['tenants']} tenants, {build['subjects']:,} subjects, "
          f"{args.queries} searches per line")
    print("build: " + "; ".join(f"{k} {v:.0f} s" for k, v in build["times"].items()))
    for st in stages:
        print(f"{st['label']}: " + ", ".join(f"{k} {v[95]:.1f}" for k, v in st.get("search", {}).items())
              + " ms p95 (first-tenth subjects, without / with embedding)")
    if len(stages) == 2 and all("search" in st for st in stages):
        a, b = stages
        for name in ("without", "with"):
            ratio = b["search"][name][95] / a["search"][name][95]
            print(f"search p95 {b['label']} / {a['label']} ({name} embedding): {ratio:.2f} (target <= 1.5): "
                  f"{'met' if ratio <= 1.5 else 'NOT met'}")
    if rss:
        for p in rss.get("web", []):
            print(f"gunicorn {p['role']} pid {p['pid']}: RSS {p['rss'] / 2**20:.0f} MiB, "
                  f"USS {p['uss'] / 2**20:.0f} MiB, "
                  f"PSS {p['pss'] / 2**20:.0f} MiB")
        w = rss.get("worker")
        if w:
            print(f"celery worker (solo pool, after its jobs): RSS {w['rss'] / 2**20:.0f} MiB, "
                  f"USS {w['uss'] / 2**20:.0f} MiB, PSS {w['pss'] / 2**20:.0f} MiB")
        webs = [p["rss"] for p in rss.get("web", []) if p["role"] == "worker"]
        if webs and w:
            web = max(webs)
            print(f"in 24 GiB: {int(24 * GiB // web)} web workers or {int(24 * GiB // w['rss'])} Celery workers by RSS "
                  f"(each counted whole); {int(24 * GiB // (web + w['rss']))} web + worker pairs")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="memories at the end (a tenth is measured first)")
    ap.add_argument("--queries", type=int, default=400, help="searches per measurement")
    ap.add_argument("--list-calls", type=int, default=200)
    ap.add_argument("--ingest-events", type=int, default=400)
    ap.add_argument("--explain", type=int, default=0, metavar="N",
                    help="with --reuse: print EXPLAIN ANALYZE of N searches' ranking statement, measure nothing")
    ap.add_argument("--erasure-only", action="store_true",
                    help="with --reuse: export and erase a new 10,000-memory subject through the worker, only that")
    ap.add_argument("--profile-erasure", action="store_true",
                    help="with --reuse: erase a new 10,000-memory subject in this process under cProfile, only that")
    ap.add_argument("--search-only", action="store_true",
                    help="with --reuse: only the search figures (first-tenth subjects), one line")
    ap.add_argument("--database", default=DB_NAME, help=f"the benchmark database's name (default {DB_NAME})")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark database")
    ap.add_argument("--reuse", action="store_true", help="measure a kept database (implies --keep)")
    args = ap.parse_args(argv)
    args.keep = args.keep or args.reuse

    benchdb.django_setup()
    import torch
    from django.db import transaction

    from bench.ingest import start_redis, start_worker
    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.models import Subject, Tenant
    from memoryapp.services.tenants import api_key_create, tenant_create
    from memoryapp.tenancy import tenant_activate
    from workers.celery import app

    # As the web process: one torch thread for a query (memoryapp/gunicorn_config.py); the pool
    # is embedded with every core first.
    subjects_total = max(1, args.size // MEMORIES_PER_SUBJECT)
    tenants_n = min(TENANTS, max(1, subjects_total // 10))
    per_tenant = subjects_total // tenants_n
    first_tenth = max(1, per_tenant // 10)
    existed = benchdb.use(args.database, create=not args.reuse)
    if existed and not args.reuse:
        raise SystemExit(f"database {args.database} already exists (a kept run?): --reuse it or drop it first")
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    redis, redis_url = start_redis(workdir)
    app.conf.broker_url = redis_url
    worker = None
    build = {"times": {}, "tenants": tenants_n, "subjects": tenants_n * per_tenant}
    stages = []
    rss = None
    try:
        embeddings.warm_up()
        messages, facts, queries = pool_texts()
        ctx = {"queries": queries, "ingest_texts": random.Random(3).sample(messages, min(len(messages), 2000))}
        rng = random.Random(42)
        refs = [f"user_{s:04d}" for s in range(per_tenant)]
        if args.reuse:
            tenants = list(Tenant.objects.filter(slug__startswith="scale-").order_by("pk"))
        else:
            start = time.perf_counter()
            build["pool"] = build_pool()
            build["times"]["pool embedding (when first made; cached in var/)"] = build["pool"]["embed_seconds"]
            build["times"]["pool tables"] = time.perf_counter() - start
            start = time.perf_counter()
            tenants = [tenant_create(slug=f"scale-{t:03d}") for t in range(tenants_n)]
            ids = subjects_create(tenants, refs[:first_tenth])
            build["times"]["tenants, subjects (services)"] = time.perf_counter() - start
            start = time.perf_counter()
            done = generate({i: rng.randint(*EVENTS_PER_SUBJECT) for i in ids})
            build["times"][f"{done['memories']:,} memories"] = time.perf_counter() - start
            log(f"built the first tenth: {done['memories']:,} memories, {done['events']:,} events: "
                + ", ".join(f"{k} {v:.0f} s" for k, v in done["times"].items()))
        torch.set_num_threads(int(os.environ.get("TORCH_NUM_THREADS", "1")))
        ctx["tenants"] = tenants
        ctx["search_refs"] = refs[:first_tenth]
        ctx["refs_by_tenant"] = {t.pk: refs[:first_tenth] for t in tenants}
        ctx["keys"] = {}
        for t in tenants:
            key, _ = api_key_create(tenant=t, name="bench-scale", actor=Actor("system", "bench-scale"))
            ctx["keys"][t] = key
        if args.profile_erasure:
            profile_erasure(tenants[0], f"heavy-profile-{int(time.time())}")
            return
        if args.search_only:  # one line of figures: for alternating two kept databases side by side
            plan = search_plan(tenants, ctx["search_refs"], queries, args.queries, seed=4242)
            vectors = embeddings.embed_texts([q for _, _, q in plan], batch_size=64)
            load = os.getloadavg()[0]
            found = measure_search(plan, vectors)
            print(f"{args.database}: memory_search p50/p95/p99 ms without embedding "
                  + " / ".join(f"{pct(found['without'], p):.1f}" for p in (50, 95, 99)) + "; with "
                  + " / ".join(f"{pct(found['with'], p):.1f}" for p in (50, 95, 99))
                  + f" (load {load:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
            return
        if args.explain:  # only the plans of a few searches (a kept database): a diagnosis
            plan = search_plan(tenants, ctx["search_refs"], queries, args.explain, seed=4242)
            vectors = embeddings.embed_texts([q for _, _, q in plan], batch_size=64)
            for (tenant, ref, query), vector in zip(plan, vectors):
                print(f"-- {tenant.slug}/{ref}: {query!r}, {explain_search(tenant, ref, query, vector)}\n")
            return
        ctx["worker_log"] = workdir / "worker.log"
        worker = start_worker(redis_url, ctx["worker_log"], None, database=args.database)
        if args.erasure_only:  # a kept store: export and erase one more heavy subject, only that
            ref = f"heavy-again-{int(time.time())}"
            st = {"label": "erasure only", "heavy": heavy_subject(tenants[0], ref), "load_before": os.getloadavg()}
            st["export_erasure"] = measure_export_erasure(tenants[0], ref)
            st["load_after"], st["counts"] = os.getloadavg(), store_counts()
            print_stage(st)
            return
        # Warm the worker's model before anything is timed.
        measure_ingest(tenants[-1], "warmup", ctx["ingest_texts"][:4], subjects=1)

        if args.reuse:
            with transaction.atomic():
                tenant_activate(tenant=tenants[0])
                have = Subject.objects.filter(tenant=tenants[0], external_id__startswith="user_").count()
            ctx["refs_by_tenant"] = {t.pk: refs[:have] for t in tenants}
            ctx["all_refs"] = refs[:have]
            stages.append(stage("kept", ctx, args))
        else:
            stages.append(stage(f"{args.size // 10 // 1000}k", ctx, args))
            start = time.perf_counter()
            ids = subjects_create(tenants, refs[first_tenth:])
            t_subjects = time.perf_counter() - start
            start = time.perf_counter()
            done = generate({i: rng.randint(*EVENTS_PER_SUBJECT) for i in ids})
            build["times"]["tenants, subjects (services)"] += t_subjects
            build["times"][f"+{done['memories']:,} memories"] = time.perf_counter() - start
            log(f"grew by {done['memories']:,} memories, {done['events']:,} events: "
                + ", ".join(f"{k} {v:.0f} s" for k, v in done["times"].items()))
            ctx["refs_by_tenant"] = {t.pk: refs for t in tenants}
            ctx["all_refs"] = refs
            label = f"{args.size / 1e6:g}M" if args.size >= 1_000_000 else f"{args.size // 1000}k"
            stages.append(stage(label, ctx, args))

        log("memory footprint: gunicorn (2 workers) after 100 requests, and the Celery worker")
        rss = {"worker": process_memory(worker.pid)}
        rss["web"] = attempt(rss, "web rss", lambda: measure_web_rss(args.database, tenants[0], ctx["search_refs"],
                                                                     queries)) or []
        report(stages, build, rss, args)
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(60)
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
        if not args.keep:
            benchdb.drop(args.database)


if __name__ == "__main__":
    main()
