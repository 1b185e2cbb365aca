"""What one API request costs the web process, without HTTP or a load generator: N requests of
each kind through Django's test client, in this process, on their own database.

    python -m memoryapp.embedded exec -- .venv/bin/python bench/request_cost.py \
        [--requests 300] [--kinds search,context,events,write] [--code DIR] [--profile KIND]

bench/api_load.py measures the service under load, where a request's latency is mostly its wait
for a core; this measures the CPU and database time one request adds, which is what has to fall
for more requests per second. Each kind is run twice (the first warms caches and prepared
statements) and the second is reported, in ms per request. The subjects are api_load's (ten, 200
memories written first); the queries repeat, as an agent's do, so the query embedding is mostly
cached. `--code DIR` imports another checkout of the project (the code before a change) with this
one's virtualenv, so two versions are compared on one machine in one hour; `--profile KIND` prints
cProfile's top functions for a third run of that kind.
"""
from __future__ import annotations

import argparse
import os
import sys

QUEUE = "bench_request_cost"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--kinds", default="search,context,events,write")
    parser.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--profile", default="", help="a kind to profile after timing it")
    parser.add_argument("--database", default="bench_request_cost")
    args = parser.parse_args()
    # The checkout measured comes first: its memoryapp, and its bench helpers (benchdb, api_load).
    sys.path.insert(0, os.path.abspath(args.code))
    os.environ["API_THROTTLE_RATE"] = "100000000/min"  # the service, not the limit

    import json
    import random
    import time

    from bench import benchdb
    benchdb.django_setup()
    from django.conf import settings
    from django.db import transaction
    from django.test import Client

    from bench.api_load import FACTS, QUERIES, SUBJECTS
    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.services.tenants import api_key_create, tenant_create

    settings.ALLOWED_HOSTS = ["*"]
    benchdb.publish_jobs_to(QUEUE)
    benchdb.use(args.database, create=True)
    try:
        embeddings.warm_up()
        with transaction.atomic():
            tenant = tenant_create(slug=f"request-cost-{time.time_ns()}")
            _, key = api_key_create(tenant=tenant, actor=Actor("system", "bench"))
        client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
        rng = random.Random(0)
        count = iter(range(10**9))

        def post(path: str, body: dict, expected: int) -> None:
            response = client.post("/api/v1/" + path, data=json.dumps(body), content_type="application/json")
            if response.status_code != expected:
                raise SystemExit(f"{path}: {response.status_code} {response.content[:200]!r}")

        for i in range(200):
            post(f"subjects/{SUBJECTS[i % len(SUBJECTS)]}/memories", {"statement": f"{rng.choice(FACTS)} ({i})"}, 201)

        def one(kind: str) -> None:
            subject = rng.choice(SUBJECTS)
            if kind == "search":
                post(f"subjects/{subject}/search", {"query": rng.choice(QUERIES), "k": 5}, 200)
            elif kind == "context":
                post(f"subjects/{subject}/context", {"query": rng.choice(QUERIES), "token_budget": 400}, 200)
            elif kind == "events":
                post(f"subjects/{subject}/events",
                     {"event_id": f"cost-{next(count)}", "role": "user", "content": rng.choice(FACTS)}, 202)
            elif kind == "write":
                post(f"subjects/{subject}/memories", {"statement": f"{rng.choice(FACTS)} (note {next(count)})"}, 201)
            else:
                raise SystemExit(f"unknown kind {kind!r}")

        def timed(kind: str) -> float:
            started = time.perf_counter()
            for _ in range(args.requests):
                one(kind)
            return 1000 * (time.perf_counter() - started) / args.requests

        print(f"code: {os.path.abspath(args.code)}; {args.requests} requests per kind, ms per request")
        for kind in args.kinds.split(","):
            timed(kind)
            print(f"  {kind:8} {timed(kind):6.1f}", flush=True)
        if args.profile:
            import cProfile
            import pstats
            profile = cProfile.Profile()
            profile.enable()
            timed(args.profile)
            profile.disable()
            pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    finally:
        benchdb.drop(args.database)
        benchdb.delete_queue(QUEUE)


if __name__ == "__main__":
    main()
