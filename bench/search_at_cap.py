"""Search for one subject at its cap (issue 16): memory_search latency and agreement as one
subject grows from 1,000 to 100,000 memories.

One tenant, one subject, loaded in steps (`--sizes`) into a dedicated database (`bench_cap`) with
COPY through the owner connection, the way bench/search_latency.py loads its 100,000: a
conversation of events (sessions of 20 turns between two speakers, "Anna" and the assistant),
each with its episode ("Anna: ..."), and about a third of them with a fact drawn from it, filed
under a key the way extraction files it ("user:home_city"); a turn in eight asks something. The
vectors are real MiniLM vectors of a pool of distinct statements plus a little noise. Searches
run through the application role, under row-level security, as a request would.

At each size, for the same queries (the same precomputed vectors), it prints p50/p95 of
  - `before`: memoryapp/retrieval.py as it is at `--before` (a git revision, loaded from git into
    its own module, so both run in one process on the very same rows, alternating query by query);
  - `after`: this checkout's memory_search, with the query vector given and with the query
    embedded per call (what a request pays);
  - `exact`: this checkout with the approximate index switched off (only shown from the size
    where `after` reads it);
and recall@10: the share of `before`'s top 10 that `after` also returns (the ranking must not
change), and of `exact`'s top 10 that `after` returns (what the approximate index costs).

    python -m memoryapp.embedded exec -- .venv/bin/python bench/search_at_cap.py \
        [--sizes 1000,3000,10000,30000,100000] [--queries 200] [--before HEAD] [--clauses] [--keep | --reuse]
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import inspect
import os
import random
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402
from bench.search_latency import CITIES, FOODS, HOBBIES, JOBS, NAMES, TOPICS, ALLERGENS  # noqa: E402

DB_NAME = "bench_cap"
SUBJECT = "user_cap"
SPEAKER = "Anna"
SESSION_TURNS = 20

# (template, key its fact is filed under, "" for an episode-only remark)
FACTS = [
    ("I live in {city} now.", "The user lives in {city}.", "user:home_city"),
    ("I work as a {job}.", "The user works as a {job}.", "user:job"),
    ("I'm allergic to {allergen}.", "The user is allergic to {allergen}.", "user:allergy:{allergen}"),
    ("I really love {food}.", "The user prefers {food}.", "user:preference:food"),
    ("I started {hobby} last month.", "The user enjoys {hobby}.", "user:hobby"),
    ("My partner {name} says hi.", "The user's partner is {name}.", "user:partner"),
]
REMARKS = [
    "I talked with {name} about {topic} today.",
    "We went {hobby} near {city} at the weekend.",
    "The trip to {city} was great, we ate {food} every day.",
    "Can you remind me about {topic} next week?",
    "{name} and I are planning {topic}.",
    "I flew to {city} for {topic}.",
    "I had {food} for dinner with {name}.",
    "Work was busy, mostly {topic}.",
]
QUESTIONS = [
    "Did you ever try {hobby}?", "How was {topic} with {name}?", "What did you think of {city}?",
    "Have you had {food} lately?",
]
REPLIES = [
    "Noted, I will remember that.", "That sounds lovely.", "Good luck with {topic}!",
    "Tell me more about {name}.", "{city} is a beautiful place.",
]
QUERIES = [
    "Where does the user live?", "What food does the user like?", "What are the user's hobbies?",
    "Is the user allergic to anything?", "What does the user do for a living?", "Who is the user's partner?",
    "What did Anna talk about with {name}?", "When did Anna fly to {city}?", "What is Anna planning with {name}?",
    "Tell me about {topic}", "What did Anna eat in {city}?", "Did Anna go {hobby}?",
]


def fill(template: str, rng: random.Random) -> str:
    return template.format(city=rng.choice(CITIES), job=rng.choice(JOBS), food=rng.choice(FOODS),
                           allergen=rng.choice(ALLERGENS), hobby=rng.choice(HOBBIES), name=rng.choice(NAMES),
                           topic=rng.choice(TOPICS))


def vector_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in v.tolist()) + "]"


class Pool:
    """Distinct statements and their real embeddings; a memory takes one plus noise."""

    def __init__(self, texts: list[str]):
        from memoryapp import embeddings

        self.index = {t: n for n, t in enumerate(texts)}
        start = time.perf_counter()
        self.vectors = embeddings.embed_texts(texts, batch_size=64)
        print(f"embedded a pool of {len(texts)} distinct statements in {time.perf_counter() - start:.1f}s",
              flush=True)

    def vector(self, sentences: list[str], seed: int) -> str:
        v = sum(self.vectors[self.index[t]] for t in sentences) / len(sentences)
        v = v / np.linalg.norm(v) + np.random.default_rng(seed).normal(0, 0.02, 384)
        return vector_text(v / np.linalg.norm(v))


def conversation(count: int, rng: random.Random):
    """(seq, role, speaker, sentences said, fact or None, key) for `count` memories' worth of
    events. A user's turn is one or two sentences, so turns are nearly all distinct, as real ones
    are; an attribute's later fact supersedes its earlier one (load), as the write policy does."""
    seq, made = 0, 0
    while made < count:
        seq += 1
        user = seq % 2 == 1
        fact, key = None, ""
        if user and rng.random() < 0.3:
            said, fact, key = rng.choice(FACTS)
            values = {"city": rng.choice(CITIES), "job": rng.choice(JOBS), "allergen": rng.choice(ALLERGENS),
                      "food": rng.choice(FOODS), "hobby": rng.choice(HOBBIES), "name": rng.choice(NAMES)}
            said, fact, key = [said.format(**values)], fact.format(**values), key.format(**values)
            if rng.random() < 0.5:
                said.append(fill(rng.choice(REMARKS), rng))
        elif user:
            said = [fill(rng.choice(REMARKS), rng) for _ in range(rng.choice((1, 2)))]
        else:
            said = [fill(rng.choice(QUESTIONS if rng.random() < 0.25 else REPLIES), rng)]
        yield seq, ("user" if user else "assistant"), (SPEAKER if user else "Assistant"), said, fact, key
        made += 1 + (fact is not None)


def texts_of(count: int) -> list[str]:
    out = set()
    for _, _, _, said, fact, _ in conversation(count, random.Random(11)):
        out.update(said)
        if fact:
            out.add(fact)
    return sorted(out)


def load(*, tenant, subject, pool: Pool, start: int, stop: int, first_day: datetime, hours: float,
         clauses: bool = False) -> None:
    """Memories [start, stop) of the subject's conversation (the same whatever the steps).
    `clauses`: an episode of two sentences also gets a vector per clause, as extraction gives it
    (memoryapp/clauses.py); its row is then about 3 KB, and PostgreSQL keeps its vectors apart
    from the row (TOAST), as it does for real episodes."""
    from django.db import connections

    from memoryapp import embeddings
    from memoryapp.clauses import statement_clauses

    owner = connections["owner"]
    owner.ensure_connection()
    raw = owner.connection
    events, memories, made = [], [], 0
    for seq, role, speaker, said, fact, key in conversation(stop, random.Random(11)):
        size = 1 + (fact is not None)
        if made >= start:
            when = first_day + timedelta(hours=hours * seq)
            event_id = uuid.uuid4()
            text = " ".join(said)
            events.append((event_id, tenant.pk, subject.pk, f"ev-{seq}", seq, role, "user", text, when, when,
                           f"s{seq // SESSION_TURNS}", speaker, "{}", "processed", 1, False, False, False, "[]", ""))
            episode = f"{speaker}: {text}"
            # (a clause is one of the sentences said: the first carries the speaker's name)
            clause_vectors = None
            if clauses and len(said) > 1 and len(statement_clauses(episode)) == len(said):
                clause_vectors = "{" + ",".join(f'"{pool.vector([sentence], 7 * seq + n)}"'
                                                for n, sentence in enumerate(said)) + "}"
            memories.append((uuid.uuid4(), tenant.pk, subject.pk, "episodic", "", episode, "", "user", 1, 1.0, 0.5,
                             "personal", when, when, "active", "", 0, "{}", "[]", False,
                             hashlib.sha256(f"{episode}{seq}".encode()).hexdigest(), pool.vector(said, 2 * seq),
                             embeddings.EMBEDDING_VERSION, "bench", event_id, clause_vectors))
            if fact:
                memories.append((uuid.uuid4(), tenant.pk, subject.pk, "semantic", "", fact, key, "user", 1, 0.9,
                                 0.6, "personal", when, when, "active", "", 0, "{}", "[]", False,
                                 hashlib.sha256(f"{fact}{seq}".encode()).hexdigest(), pool.vector([fact], 2 * seq + 1),
                                 embeddings.EMBEDDING_VERSION, "bench", event_id, None))
        made += size
    event_columns = ("id", "tenant_id", "subject_id", "event_id", "seq", "role", "source_kind", "content",
                     "occurred_at", "recorded_at", "session_id", "speaker", "metadata", "status", "attempts",
                     "redacted", "quarantined", "erasing", "flags", "error")
    memory_columns = ("id", "tenant_id", "subject_id", "memory_type", "namespace", "statement", "key",
                      "source_kind", "evidence_count", "confidence", "importance", "sensitivity", "valid_from",
                      "recorded_at", "status", "status_reason", "access_count", "metadata", "flags", "erasing",
                      "content_hash", "embedding", "embedding_version", "extractor_version", "source_event_id",
                      "clause_embeddings")
    with raw.cursor() as cur:
        # hnsw_probe builds it again once loaded: faster than maintaining it row by row
        cur.execute("DROP INDEX IF EXISTS bench_cap_hnsw")
        with cur.copy(f"COPY memoryapp_event ({', '.join(event_columns)}) FROM STDIN") as copy:
            for row in events:
                copy.write_row(row)
        with cur.copy(f"COPY memoryapp_memory ({', '.join(memory_columns)}) FROM STDIN") as copy:
            for row in memories:
                copy.write_row(row)
        cur.execute("UPDATE memoryapp_subject SET speakers = %s WHERE id = %s", [[SPEAKER, "Assistant"], subject.pk])
        # A later fact under the same key supersedes the earlier one (what memory_write does).
        cur.execute("""
            UPDATE memoryapp_memory m SET status = 'superseded', valid_to = later.valid_from,
                   superseded_by_id = later.next_id
            FROM (SELECT id, lead(valid_from) OVER w AS valid_from, lead(id) OVER w AS next_id
                  FROM memoryapp_memory WHERE subject_id = %s AND key <> ''
                  WINDOW w AS (PARTITION BY key ORDER BY valid_from, id)) later
            WHERE m.id = later.id AND later.next_id IS NOT NULL AND m.status = 'active'""", [subject.pk])
    raw.commit()
    with owner.cursor() as cursor:
        cursor.execute("ANALYZE memoryapp_memory")
        cursor.execute("ANALYZE memoryapp_event")


def before_module(revision: str):
    """memoryapp/retrieval.py as it is at `revision`, as a module of its own."""
    root = benchdb.PROJECT_ROOT
    source = subprocess.run(["git", "-C", root, "show", f"{revision}:memoryapp/retrieval.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("memoryapp._retrieval_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = f"{revision}:memoryapp/retrieval.py"
    sys.modules[spec.name] = module  # dataclasses look their module up there
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    # Code from before e87fbad hands the hits' access time to memories_for_hits, which no longer
    # takes one (the worker counts accesses now); measured with record_access=False it is None.
    hits = module.memories_for_hits
    if "accessed_at" not in inspect.signature(hits).parameters:
        module.memories_for_hits = lambda *, accessed_at=None, **kw: hits(**kw)
    return module


def pct(xs, p):
    return float(np.percentile(np.array(xs), p)) if xs else float("nan")


def measure(*, tenant, plan, vectors, k: int, before, reference, exact_too: bool, with_before: bool,
            with_reference: int) -> dict:
    from django.db import transaction

    from memoryapp import retrieval

    def one(search, query, vector, **kw):
        # Code from before 2026-12-06 counted each search's accesses in the search itself unless
        # told not to; since then the worker folds them in from the read audit (never the search).
        if "record_access" in inspect.signature(search).parameters:
            kw["record_access"] = False
        start = time.perf_counter()
        with transaction.atomic():  # what ATOMIC_REQUESTS gives a request
            hits = search(tenant=tenant, subject_ref=SUBJECT, query=query, k=k, query_embedding=vector,
                          **kw)
        return 1000 * (time.perf_counter() - start), [h.memory.pk for h in hits]

    def agree(got, want):
        return len(set(got) & set(want)) / max(len(want), 1)

    times = {"before": [], "after": [], "after+embed": [], "exact": [], "every": []}
    agreement = {"before": [], "every": [], "every_before": [], "exact": []}
    # warm-up: connections, prepared statements, the key table
    for search in ([before.memory_search] if with_before else []) + [retrieval.memory_search]:
        one(search, plan[0], vectors[0])
    for n, (query, vector) in enumerate(zip(plan, vectors)):
        t, got = one(retrieval.memory_search, query, vector)
        times["after"].append(t)
        if with_before:
            t, shipped = one(before.memory_search, query, vector)
            times["before"].append(t)
            agreement["before"].append(agree(got, shipped))
        if n < with_reference:
            t, every = one(reference.memory_search, query, vector)
            times["every"].append(t)
            agreement["every"].append(agree(got, every))
            if with_before:
                agreement["every_before"].append(agree(shipped, every))
        if exact_too:
            saved = retrieval.APPROXIMATE_FROM
            retrieval.APPROXIMATE_FROM = None
            try:
                t, want = one(retrieval.memory_search, query, vector)
            finally:
                retrieval.APPROXIMATE_FROM = saved
            times["exact"].append(t)
            agreement["exact"].append(agree(got, want))
        times["after+embed"].append(one(retrieval.memory_search, query, None)[0])
    return {
        "times": {name: (pct(xs, 50), pct(xs, 95)) for name, xs in times.items() if xs},
        "recall": {name: float(np.mean(xs)) for name, xs in agreement.items() if xs},
    }


def hnsw_probe(*, tenant, vectors, candidates: int = 100) -> dict:
    """What an approximate index would give the candidate choice: the `candidates` nearest
    memories of the subject by HNSW (pgvector; iterative scans where the server has them, 0.8 and
    later) against the exact nearest, as recall@10 (of the exact top 10 by similarity, how many
    the index returns among its first 10) and recall of the whole candidate list, with the time of
    each. The subject is the whole table here: the best case for a filtered index scan."""
    from django.db import connections

    owner = connections["owner"]
    with owner.cursor() as cursor:
        cursor.execute("SELECT id FROM memoryapp_subject WHERE tenant_id = %s AND external_id = %s", [tenant.pk, SUBJECT])
        subject_pk = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        version = tuple(int(x) for x in cursor.fetchone()[0].split(".")[:2])
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'bench_cap_hnsw'")
        if not cursor.fetchone():
            start = time.perf_counter()
            cursor.execute("CREATE INDEX bench_cap_hnsw ON memoryapp_memory USING hnsw (embedding vector_cosine_ops)"
                           " WITH (m = 16, ef_construction = 64)")
            print(f"built an HNSW index in {time.perf_counter() - start:.1f}s", flush=True)
        sql = ("SELECT id FROM memoryapp_memory WHERE tenant_id = %s AND subject_id = %s AND status = 'active'"
               " AND NOT erasing ORDER BY embedding <=> %s::vector LIMIT %s")
        exact_t, approx_t, at10, atn = [], [], [], []
        for vector in vectors:
            literal = vector_text(vector)
            cursor.execute("BEGIN")
            cursor.execute("SET LOCAL enable_indexscan = off")
            start = time.perf_counter()
            cursor.execute(sql, [tenant.pk, subject_pk, literal, candidates])
            exact = [r[0] for r in cursor.fetchall()]
            exact_t.append(1000 * (time.perf_counter() - start))
            cursor.execute("COMMIT")
            cursor.execute("BEGIN")
            cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(candidates, 40)])
            if version >= (0, 8):
                cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            start = time.perf_counter()
            cursor.execute(sql, [tenant.pk, subject_pk, literal, candidates])
            approx = [r[0] for r in cursor.fetchall()]
            approx_t.append(1000 * (time.perf_counter() - start))
            cursor.execute("COMMIT")
            at10.append(len(set(approx[:10]) & set(exact[:10])) / 10)
            atn.append(len(set(approx) & set(exact)) / max(len(exact), 1))
    return {"pgvector": ".".join(map(str, version)), "exact": (pct(exact_t, 50), pct(exact_t, 95)),
            "hnsw": (pct(approx_t, 50), pct(approx_t, 95)), "recall@10": float(np.mean(at10)),
            f"recall@{candidates}": float(np.mean(atn))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--before", default="HEAD", help="git revision of the code to compare with")
    ap.add_argument("--before-up-to", type=int, default=100_000,
                    help="largest size at which `before` is measured too (it is slow)")
    ap.add_argument("--reference-queries", type=int, default=30,
                    help="queries also ranked over every memory above 10,000 memories (slow)")
    ap.add_argument("--hnsw", action="store_true",
                    help="also probe an HNSW index for the nearest candidates (built on the bench database)")
    ap.add_argument("--clauses", action="store_true",
                    help="give an episode of two sentences its clause vectors, as extraction does")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark database")
    ap.add_argument("--reuse", action="store_true", help="measure on a kept database at its size (implies --keep)")
    args = ap.parse_args(argv)
    args.keep = args.keep or args.reuse
    sizes = [int(s) for s in args.sizes.split(",")]

    benchdb.django_setup()
    import torch

    from django.db import transaction

    from memoryapp import embeddings, retrieval
    from memoryapp.models import Memory, Tenant
    from memoryapp.services.tenants import subject_get_or_create, tenant_create

    # One torch thread per process, as the service runs (memoryapp/gunicorn_config.py).
    torch.set_num_threads(int(os.environ.get("TORCH_NUM_THREADS", "1")))
    before = before_module(args.before)
    # The same code scoring every memory in scope (no pool limit): what the ranking means.
    reference = before_module(args.before)
    reference.POOL = 10 ** 9
    existed = benchdb.use(DB_NAME, create=not args.reuse)
    if existed and not args.reuse:
        raise SystemExit(f"database {DB_NAME} already exists (a kept run?): --reuse it or drop it first")
    try:
        embeddings.warm_up()
        if args.reuse:
            tenant = Tenant.objects.get(slug="bench-cap")
            from memoryapp.tenancy import tenant_activate
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                loaded = Memory.objects.filter(tenant=tenant).count()
            sizes = [loaded]
            pool = None
        else:
            tenant = tenant_create(slug="bench-cap")
            subject = subject_get_or_create(tenant=tenant, external_id=SUBJECT)
            pool = Pool(texts_of(max(sizes)))
            loaded = 0
        rng = random.Random(4242)
        plan = [fill(rng.choice(QUERIES), rng) for _ in range(args.queries)]
        vectors = None
        # Two years of conversation up to yesterday, whatever the largest size.
        first_day = datetime.now(timezone.utc) - timedelta(days=731)
        hours = 730 * 24 / (max(sizes) / 1.15)
        rows = []
        for size in sizes:
            if size > loaded:
                start = time.perf_counter()
                load(tenant=tenant, subject=subject, pool=pool, start=loaded, stop=size, first_day=first_day,
                     hours=hours, clauses=args.clauses)
                print(f"loaded up to {size:,} memories in {time.perf_counter() - start:.1f}s", flush=True)
                loaded = size
            if vectors is None:  # what memory_search embeds, once the subject's speakers are known
                with transaction.atomic():
                    texts = [retrieval.search_text(tenant=tenant, subject_ref=SUBJECT, query=q) for q in plan]
                vectors = embeddings.embed_texts(texts, batch_size=64)
            load_before = os.getloadavg()[0]
            approximate = getattr(retrieval, "APPROXIMATE_FROM", None) is not None and size >= retrieval.APPROXIMATE_FROM
            result = measure(tenant=tenant, plan=plan, vectors=vectors, k=args.k, before=before, reference=reference,
                             exact_too=approximate, with_before=size <= args.before_up_to,
                             with_reference=args.queries if size <= 10_000 else args.reference_queries)
            load_after = os.getloadavg()[0]
            if args.hnsw:
                probe = hnsw_probe(tenant=tenant, vectors=vectors)
                result["hnsw"] = probe
                print(f"{size:>8,}: HNSW probe {probe}", flush=True)
            rows.append((size, result, load_before, load_after))
            print(f"{size:>8,}: " + "  ".join(f"{n} {p50:.1f}/{p95:.1f}" for n, (p50, p95) in result["times"].items())
                  + "  recall@10: " + " ".join(f"{n} {v:.3f}" for n, v in result["recall"].items())
                  + f"  load {load_before:.2f}/{load_after:.2f}", flush=True)
        print()
        print(f"memory_search k={args.k}, one subject, {args.queries} queries, p50 / p95 ms "
              f"(before = {args.before} as shipped; every = {args.before} scoring every memory):")
        head = ["memories", "before", "after", "after+embed", "every", "exact", "R@10 after/every",
                "R@10 before/every", "R@10 after/before", "R@10 after/exact", "load"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for size, result, lb, la in rows:
            t, r = result["times"], result["recall"]
            cell = lambda name: f"{t[name][0]:.1f} / {t[name][1]:.1f}" if name in t else "–"  # noqa: E731
            rc = lambda name: f"{r[name]:.3f}" if name in r else "–"  # noqa: E731
            print(f"| {size:,} | {cell('before')} | {cell('after')} | {cell('after+embed')} | {cell('every')} | "
                  f"{cell('exact')} | {rc('every')} | {rc('every_before')} | {rc('before')} | {rc('exact')} | "
                  f"{lb:.2f}–{la:.2f} |")
        if args.hnsw:
            print()
            print("nearest 100 by similarity, exact scan against HNSW (m 16, ef_construction 64, ef_search 100), ms:")
            print("| memories | pgvector | exact p50 / p95 | HNSW p50 / p95 | recall@10 | recall@100 |")
            print("|---|---|---|---|---|---|")
            for size, result, _, _ in rows:
                h = result.get("hnsw")
                if h:
                    print(f"| {size:,} | {h['pgvector']} | {h['exact'][0]:.1f} / {h['exact'][1]:.1f} | "
                          f"{h['hnsw'][0]:.1f} / {h['hnsw'][1]:.1f} | {h['recall@10']:.3f} | {h['recall@100']:.3f} |")
    finally:
        if not args.keep:
            benchdb.drop(DB_NAME)


if __name__ == "__main__":
    main()
