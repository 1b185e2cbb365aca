"""Search latency at 100,000 memories: p50 / p95 / p99 of memory_search (k=10), with the query
embedding precomputed and with the query embedded per call, plus the embedder's throughput.

Loads 10 tenants x 100 subjects x ~100 memories into a dedicated database (`bench_search`) with
COPY through the owner connection. Statements are short, realistic sentences drawn from
templates; their embeddings are real MiniLM vectors of a pool of distinct statements plus a
little noise (renormalised), so the load takes seconds instead of the ~10 minutes that embedding
100,000 sentences on two cores would. Searches then run through the application role, under
row-level security, exactly as a request would.

    python bench/search_latency.py [--memories 100000] [--queries 1000] [--k 10] [--keep | --reuse]

`--keep` leaves the database for later runs and `--reuse` measures on a kept one (no reload), so
two versions of the code can be compared on the very same rows and queries. The load average is
printed beside the figures: the machine is shared and timings move with it.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402

DB_NAME = "bench_search"
TENANTS = 10
SUBJECTS_PER_TENANT = 100

NAMES = ["Anna", "Ben", "Chen", "Dara", "Eli", "Farah", "Goran", "Hana", "Ivan", "Jun", "Kofi", "Lena",
         "Mateo", "Noor", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tomas"]
CITIES = ["Lisbon", "Shanghai", "Hangzhou", "Berlin", "Nairobi", "Austin", "Osaka", "Lyon", "Porto", "Denver",
          "Seoul", "Oslo", "Lima", "Dublin", "Milan"]
FOODS = ["vegetarian food", "spicy ramen", "sushi", "black coffee", "green tea", "dark chocolate", "tapas",
         "oat milk lattes", "pho", "gluten-free bread"]
HOBBIES = ["hiking", "rock climbing", "painting", "chess", "running", "pottery", "birdwatching", "cycling",
           "baking", "salsa dancing", "photography", "gardening"]
TOPICS = ["the quarterly budget", "the product launch", "a job offer", "the new apartment", "a trip to Japan",
          "the marathon training plan", "a dentist appointment", "the team offsite", "a visa application",
          "the kitchen renovation"]
TEMPLATES = [
    "The user lives in {city}.",
    "The user works as a {job} in {city}.",
    "The user prefers {food}.",
    "The user is allergic to {allergen}.",
    "The user enjoys {hobby} on weekends.",
    "The user's sister {name} lives in {city}.",
    "Talked with {name} about {topic}.",
    "The user asked to be reminded about {topic} next week.",
    "The user wants answers with the conclusion first.",
    "The user is planning {topic} with {name}.",
    "The user started {hobby} last month.",
    "The user's manager is {name}.",
    "The user flew to {city} for {topic}.",
    "The user dislikes {food}.",
    "The user's favourite city is {city}.",
]
JOBS = ["nurse", "software engineer", "teacher", "architect", "chef", "data analyst", "lawyer", "designer"]
ALLERGENS = ["peanuts", "shellfish", "penicillin", "cats", "pollen", "lactose"]
QUERIES = [
    "Where does the user live?", "What food does the user like?", "What are the user's hobbies?",
    "Is the user allergic to anything?", "Who is the user's manager?", "What is the user planning?",
    "What did we talk about with {name}?", "Where did the user travel for work?", "What does the user do for a living?",
    "How does the user like answers formatted?", "Remind me what is coming up next week", "Tell me about {topic}",
]


def fill(template: str, rng: random.Random) -> str:
    return template.format(city=rng.choice(CITIES), job=rng.choice(JOBS), food=rng.choice(FOODS),
                           allergen=rng.choice(ALLERGENS), hobby=rng.choice(HOBBIES), name=rng.choice(NAMES),
                           topic=rng.choice(TOPICS))


def vector_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in v.tolist()) + "]"


def load(total: int, rng: random.Random) -> tuple[list, dict]:
    """Create tenants and subjects through the services, memories through COPY as the owner.
    Returns (tenants, {tenant pk: [subject external ids]})."""
    from django.db import connections

    from memoryapp import embeddings
    from memoryapp.models import Subject
    from memoryapp.services.memories import content_hash
    from memoryapp.services.tenants import subject_get_or_create, tenant_create

    tenants, subjects = [], {}
    subject_rows = []
    for t in range(TENANTS):
        tenant = tenant_create(slug=f"bench-{t}")
        tenants.append(tenant)
        subjects[tenant.pk] = []
        for s in range(SUBJECTS_PER_TENANT):
            external_id = f"user_{s:04d}"
            subject = subject_get_or_create(tenant=tenant, external_id=external_id)
            subjects[tenant.pk].append(external_id)
            subject_rows.append((tenant, subject))

    # A pool of distinct real statements and their real embeddings.
    pool_rng = random.Random(7)
    pool = sorted({fill(rng.choice(TEMPLATES), pool_rng) for _ in range(3000)})
    start = time.perf_counter()
    pool_vectors = embeddings.embed_texts(pool, batch_size=64)
    print(f"embedded a pool of {len(pool)} distinct statements in {time.perf_counter() - start:.1f}s", flush=True)

    per_subject = total // len(subject_rows)
    now = datetime.now(timezone.utc)
    owner = connections["owner"]
    owner.ensure_connection()
    with owner.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
        hnsw = cursor.fetchone()
        # Bulk load, then build the HNSW index once: far faster than maintaining it row by row.
        if hnsw:
            cursor.execute("DROP INDEX memory_embedding_hnsw")
    columns = ("id", "tenant_id", "subject_id", "memory_type", "namespace", "statement", "key", "source_kind",
               "evidence_count", "confidence", "importance", "sensitivity", "valid_from", "recorded_at", "status",
               "status_reason", "access_count", "metadata", "flags", "erasing", "content_hash", "embedding",
               "embedding_version", "extractor_version")
    start = time.perf_counter()
    written = 0
    raw = owner.connection
    with raw.cursor() as cur:
        with cur.copy(f"COPY memoryapp_memory ({', '.join(columns)}) FROM STDIN") as copy:
            for tenant, subject in subject_rows:
                count = per_subject + rng.randint(-10, 10)
                for i in range(count):
                    idx = rng.randrange(len(pool))
                    vector = pool_vectors[idx] + np.random.default_rng(written).normal(0, 0.02, 384)
                    vector = vector / np.linalg.norm(vector)
                    statement = pool[idx]
                    when = now - timedelta(days=rng.randint(0, 700), minutes=rng.randint(0, 1440))
                    copy.write_row((
                        uuid.uuid4(), tenant.pk, subject.pk, rng.choice(["semantic", "semantic", "episodic"]), "",
                        statement, "", "user", 1, round(rng.uniform(0.6, 1.0), 2), round(rng.uniform(0.2, 0.9), 2),
                        "personal", when, when, "active", "", 0, "{}", "[]", False,
                        hashlib.sha256(f"{statement}{i}".encode()).hexdigest(), vector_text(vector),
                        embeddings.EMBEDDING_VERSION, "bench",
                    ))
                    written += 1
    raw.commit()
    print(f"copied {written} memories in {time.perf_counter() - start:.1f}s", flush=True)
    start = time.perf_counter()
    with owner.cursor() as cursor:
        if hnsw:
            cursor.execute(hnsw[0])
        cursor.execute("ANALYZE memoryapp_memory")
        cursor.execute("ANALYZE memoryapp_subject")
    print(f"built indexes and analysed in {time.perf_counter() - start:.1f}s", flush=True)
    assert Subject  # imported for readers: subjects were created through the service
    return tenants, subjects


def reuse(memories: int) -> tuple[list, dict]:
    """Tenants and subjects of a kept database (what `load` returned when it was made)."""
    from django.db import transaction

    from memoryapp.models import Memory, Tenant
    from memoryapp.tenancy import tenant_activate

    tenants = list(Tenant.objects.filter(slug__startswith="bench-").order_by("pk"))
    with transaction.atomic():
        tenant_activate(tenant=tenants[0])
        loaded = Memory.objects.filter(tenant=tenants[0]).count() * len(tenants)
    print(f"reusing {DB_NAME}: about {loaded:,} memories (asked for {memories:,})", flush=True)
    return tenants, {t.pk: [f"user_{s:04d}" for s in range(SUBJECTS_PER_TENANT)] for t in tenants}


def measure(tenants, subjects, queries: int, rng: random.Random, k: int = 10) -> dict:
    from django.db import transaction

    from memoryapp import embeddings
    from memoryapp.retrieval import memory_search

    plan = []
    for _ in range(queries):
        tenant = rng.choice(tenants)
        plan.append((tenant, rng.choice(subjects[tenant.pk]), fill(rng.choice(QUERIES), rng)))
    vectors = embeddings.embed_texts([q for _, _, q in plan], batch_size=64)

    # The vectors are of the queries as written: these subjects have no speakers, so it is what
    # memory_search would embed (retrieval.search_text).
    def run(with_embedding: bool) -> list[float]:
        times, returned = [], 0
        for (tenant, subject_ref, query), vector in zip(plan, vectors):
            start = time.perf_counter()
            with transaction.atomic():  # what ATOMIC_REQUESTS gives a request
                hits = memory_search(tenant=tenant, subject_ref=subject_ref, query=query, k=k,
                                     query_embedding=None if with_embedding else vector)
            times.append(1000 * (time.perf_counter() - start))
            returned += len(hits)
        assert returned >= min(k, 80) * len(plan) * 0.99, "searches returned too few memories: the load is wrong"
        return times

    run(False)[:0]  # warm-up pass: connections, caches, the psycopg prepared statements
    plain = run(False)
    embedded = run(True)
    pct = lambda xs, p: float(np.percentile(np.array(xs), p))  # noqa: E731
    return {name: {p: round(pct(xs, p), 1) for p in (50, 95, 99)} for name, xs in
            (("without embedding", plain), ("with embedding", embedded))}


def embedder_rate(sentences: int = 1024) -> float:
    from memoryapp import embeddings

    rng = random.Random(3)
    texts = [fill(rng.choice(TEMPLATES), rng) for _ in range(sentences)]
    embeddings.embed_texts(texts[:64], batch_size=32)
    start = time.perf_counter()
    embeddings.embed_texts(texts, batch_size=32)
    return sentences / (time.perf_counter() - start)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10, help="memories asked for per search")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark database")
    ap.add_argument("--reuse", action="store_true", help="measure on a kept database (implies --keep)")
    args = ap.parse_args(argv)
    args.keep = args.keep or args.reuse

    benchdb.django_setup()
    import torch

    from memoryapp import embeddings

    # Embed as the service does (memoryapp/gunicorn_config.py): one torch thread per process
    # unless TORCH_NUM_THREADS says otherwise. With two threads on two shared cores, one query's
    # embedding measured 4-10x slower whenever anything else was running.
    torch.set_num_threads(int(os.environ.get("TORCH_NUM_THREADS", "1")))

    rng = random.Random(42)
    existed = benchdb.use(DB_NAME, create=not args.reuse)
    if existed and not args.reuse:
        raise SystemExit(f"database {DB_NAME} already exists (a kept run?): --reuse it or drop it first")
    try:
        embeddings.warm_up()
        tenants, subjects = reuse(args.memories) if args.reuse else load(args.memories, rng)
        # The queries come from their own seed, so a reused database gets the same plan as a fresh one.
        load_before = os.getloadavg()
        result = measure(tenants, subjects, args.queries, random.Random(4242), k=args.k)
        load_after = os.getloadavg()
        rate = embedder_rate()
        print()
        print(f"memory_search k={args.k} over {args.memories:,} memories ({TENANTS} tenants, "
              f"{TENANTS * SUBJECTS_PER_TENANT:,} subjects), {args.queries} queries, ms:")
        print(f"{'':<20}{'p50':>8}{'p95':>8}{'p99':>8}")
        for name, row in result.items():
            print(f"{name:<20}{row[50]:8.1f}{row[95]:8.1f}{row[99]:8.1f}")
        print(f"embedder: {rate:.0f} sentences/s (batch 32, {torch.get_num_threads()} torch thread(s))")
        print("load average before / after measuring: " + " / ".join(
            ", ".join(f"{x:.2f}" for x in avg) for avg in (load_before, load_after)))
    finally:
        if not args.keep:
            benchdb.drop(DB_NAME)


if __name__ == "__main__":
    main()
