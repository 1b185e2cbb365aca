"""What the mem0 door costs over the v1 API: the same search, side by side, through a real gunicorn.

    .venv/bin/python bench/mem0_overhead.py [--rounds 400] [--memories 300] [--k 5]

Uses its own database (`bench_mem0`, migrated on the embedded PostgreSQL or DATABASE_URL's server)
and its own Redis; starts gunicorn (1 worker) on a free port, mints a key, seeds one subject with
explicit memories through v1, then runs each query through `POST /api/v1/subjects/{s}/search`
and `POST /v3/memories/search/` (filters={"user_id": s}) in turn, alternating which goes first,
on keep-alive connections, one request at a time. Prints p50/p95 for each and the p95 difference
(the issue's target: the mem0 route at most 10 ms more at p95). The machine is shared: the load
average is printed beside the figures.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.api_load import (
    FACTS,
    QUERIES,
    bench_service,
    percentile,
)

SUBJECT = "bench-mem0-user"


class Http:
    def __init__(self, port: int, auth: str):
        self.port, self.auth = port, auth
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=180)

    def post(self, path: str, body: dict) -> tuple[int, dict, float]:
        data = json.dumps(body)
        started = time.perf_counter()
        self.conn.request("POST", path, body=data,
                          headers={"Authorization": self.auth, "Content-Type": "application/json"})
        response = self.conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else {}, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=400, help="searches per route")
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--database", default="bench_mem0")
    args = parser.parse_args()

    v1_times: list[float] = []
    mem0_times: list[float] = []
    with bench_service(database=args.database, tenant="bench-mem0", key_name="mem0_overhead",
                       prefix="mem0-overhead-", workers=1, threads=args.threads) as (port, key):
        v1 = Http(port, f"Bearer {key}")
        mem0 = Http(port, f"Token {key}")
        # A kept database from an earlier run already holds its memories: seed only what is missing.
        v1.conn.request("GET", f"/api/v1/subjects/{SUBJECT}/memories?limit=500",
                        headers={"Authorization": f"Bearer {key}"})
        have = len(json.loads(v1.conn.getresponse().read())["results"])
        print(f"gunicorn on 127.0.0.1:{port}; seeding {max(0, args.memories - have)} memories...", flush=True)
        for i in range(have, args.memories):
            status, body, _ = v1.post(f"/api/v1/subjects/{SUBJECT}/memories",
                                      {"statement": f"{FACTS[i % len(FACTS)]} (note {i})"})
            if status != 201:
                raise SystemExit(f"seeding failed: {status} {body}")

        def v1_search(query):
            status, body, elapsed = v1.post(f"/api/v1/subjects/{SUBJECT}/search", {"query": query, "k": args.k})
            assert status == 200 and body["results"], (status, body)
            return elapsed

        def mem0_search(query):
            status, body, elapsed = mem0.post("/v3/memories/search/", {
                "query": query, "filters": {"user_id": SUBJECT}, "top_k": args.k})
            assert status == 200 and body["results"], (status, body)
            return elapsed

        for query in QUERIES:  # warm-up: model, connections, caches
            v1_search(query)
            mem0_search(query)
        print(f"{args.rounds} searches per route, interleaved...", flush=True)
        for i in range(args.rounds):
            query = QUERIES[i % len(QUERIES)]
            if i % 2:
                v1_times.append(v1_search(query))
                mem0_times.append(mem0_search(query))
            else:
                mem0_times.append(mem0_search(query))
                v1_times.append(v1_search(query))

    load = os.getloadavg()
    print(f"\nsearch, k={args.k}, {args.memories} memories, {args.rounds} rounds "
          f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    rows = {"v1   POST /api/v1/subjects/{s}/search": v1_times, "mem0 POST /v3/memories/search/": mem0_times}
    for name, values in rows.items():
        print(f"  {name:40s} p50={percentile(values, 50) * 1000:7.2f} ms  p95={percentile(values, 95) * 1000:7.2f} ms")
    diff = (percentile(mem0_times, 95) - percentile(v1_times, 95)) * 1000
    p50diff = (percentile(mem0_times, 50) - percentile(v1_times, 50)) * 1000
    verdict = "within" if diff <= 10 else "OVER"
    print(f"  mem0 - v1: p50 {p50diff:+.2f} ms, p95 {diff:+.2f} ms ({verdict} the 10 ms target)")
    return 0 if diff <= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
