"""What MCP over HTTP costs on top of v1: the same search through `POST /api/v1/subjects/{s}/search`
and through the `recall` tool at `/mcp/`, side by side against one real gunicorn.

    .venv/bin/python bench/mcp_overhead.py [--pairs 400] [--workers 1] [--threads 4]

Like bench/api_load.py it uses its own database (`bench_mcp`) and a private Redis, starts gunicorn
with the project's config on a free port, mints a key and seeds memories. Then one client sends
pairs of requests, each pair the same query for the same subject through both doors, in random
order within the pair (so drift in the machine's load hits both alike), over keep-alive
connections with the same HTTP client (http.client) for both: the figures are the server's cost
plus the wire, not a client library's. The MCP request is a `tools/call` JSON-RPC message in a
stateless exchange (protocol 2025-11-25, JSON response). Prints p50/p95 for each door and the
p95 difference (the target: at most 10 ms more through MCP).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.api_load import (
    FACTS,
    QUERIES,
    SUBJECTS,
    Api,
    bench_service,
    percentile,
)

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}


class Door:
    """One keep-alive connection; `timed(...)` answers (seconds, parsed body)."""

    def __init__(self, port: int, key: str):
        self.port, self.key = port, key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(self, path: str, body: dict, headers: dict) -> tuple[float, int, dict]:
        data = json.dumps(body)
        started = time.perf_counter()
        self.conn.request("POST", path, body=data, headers={"Authorization": f"Bearer {self.key}", **headers})
        response = self.conn.getresponse()
        raw = response.read()
        return time.perf_counter() - started, response.status, json.loads(raw)


def v1_search(door: Door, subject: str, query: str) -> tuple[float, list[str]]:
    elapsed, status, body = door.post(f"/api/v1/subjects/{subject}/search", {"query": query, "k": 5},
                                      {"Content-Type": "application/json"})
    if status != 200:
        raise SystemExit(f"v1 search failed: {status} {body}")
    return elapsed, [m["id"] for m in body["results"]]


def mcp_recall(door: Door, subject: str, query: str, request_id: int) -> tuple[float, list[str]]:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": "recall", "arguments": {"subject": subject, "query": query, "k": 5}}}
    elapsed, status, body = door.post("/mcp/", message, MCP_HEADERS)
    result = body.get("result") or {}
    if status != 200 or result.get("isError"):
        raise SystemExit(f"MCP recall failed: {status} {body}")
    return elapsed, [m["id"] for m in result["structuredContent"]["results"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--database", default="bench_mcp")
    args = parser.parse_args()

    with bench_service(database=args.database, tenant="bench-mcp", key_name="mcp_overhead", prefix="mcp-overhead-",
                       workers=args.workers, threads=args.threads,
                       extra_env={"TORCH_NUM_THREADS": "1"}) as (port, key):
        api = Api(port, key, timeout=180)
        print(f"gunicorn on 127.0.0.1:{port} ({args.workers} worker(s) x {args.threads} threads); seeding...",
              flush=True)
        status, body = api.call("GET", f"subjects/{SUBJECTS[0]}/memories?limit=1")
        if status == 200 and not body["results"]:
            for i in range(args.memories):
                status, body = api.call("POST", f"subjects/{SUBJECTS[i % len(SUBJECTS)]}/memories",
                                        {"statement": f"{FACTS[i % len(FACTS)]} (note {i})"})
                if status != 201:
                    raise SystemExit(f"seeding failed: {status} {body}")
        v1, mcp = Door(port, key), Door(port, key)
        rng = random.Random(14)
        timings: dict[str, list[float]] = {"v1": [], "mcp": []}
        mismatches = 0
        for i in range(args.warmup + args.pairs):
            subject, query = rng.choice(SUBJECTS), rng.choice(QUERIES)
            order = ["v1", "mcp"] if rng.random() < 0.5 else ["mcp", "v1"]
            ids = {}
            for door in order:
                if door == "v1":
                    elapsed, ids[door] = v1_search(v1, subject, query)
                else:
                    elapsed, ids[door] = mcp_recall(mcp, subject, query, i)
                if i >= args.warmup:
                    timings[door].append(elapsed)
            mismatches += ids["v1"] != ids["mcp"]

    print(f"\n{args.pairs} pairs (after {args.warmup} warm-up pairs), k=5, {args.memories} memories over "
          f"{len(SUBJECTS)} subjects; answers differing between the doors: {mismatches}")
    for door, label in (("v1", "v1 POST .../search"), ("mcp", "MCP tools/call recall")):
        values = timings[door]
        print(f"  {label:24s} p50={percentile(values, 50) * 1000:6.1f} ms  p95={percentile(values, 95) * 1000:6.1f} ms"
              f"  p99={percentile(values, 99) * 1000:6.1f} ms")
    p50 = (percentile(timings["mcp"], 50) - percentile(timings["v1"], 50)) * 1000
    p95 = (percentile(timings["mcp"], 95) - percentile(timings["v1"], 95)) * 1000
    print(f"  MCP - v1: p50 {p50:+.1f} ms, p95 {p95:+.1f} ms (target: p95 at most +10 ms) -> "
          f"{'OK' if p95 <= 10 else 'OVER'}")
    return 0 if p95 <= 10 and mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
