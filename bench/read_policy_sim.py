"""Read-time policies replayed offline on a changing-facts dump: what reordering can still buy.

    .venv/bin/python bench/changing_facts_blind.py --split dev --conversations 40 --phases facts --dump /tmp/dev.jsonl
    .venv/bin/python bench/read_policy_sim.py /tmp/dev.jsonl

The dump holds, per question, the service's ranking just before its read-time supersession
(retrieval.answered_later): the best 30 memories with their score, cosine, BM25, valid time,
voice, statement, vector and the turns each was drawn from. Replaying policies on it takes
seconds instead of a 15-minute pipeline run, so a family of policies can be weighed on the dev
split before one is built. Dev dumps only: a held-out split is run once, through the pipeline.

Printed, at k = 1 and 5 (current only / both / outdated only / neither):
- the ranking as it came, and retrieval.answered_later itself run on it (the dump's vectors
  standing in for its pool lookup), as shipped and with each of its rules turned off; it
  reproduces the pipeline's k=1 figures to the decimal (blind_v6 dev, 2026-12-04);
- "recent": the newest same-voice statement among the top few that matches the query about as
  well as the best hit and says much the same thing (centred cosine), promoted to first; the
  best setting of its three thresholds on the dump;
- the oracle: the current statement promoted whenever it is anywhere in the 30 and an outdated
  one is first. No policy that only reorders can do better, so the gap between the oracle and
  the ranking says how much of the problem is change handling and how much is finding the fact.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import benchdb  # noqa: E402

benchdb.django_setup()  # answered_later's module imports the models (no database is read)
from memoryapp import retrieval  # noqa: E402

VERDICTS = ("current only", "both", "outdated only", "neither")


def load(path: str) -> list[dict]:
    records = []
    for line in open(path):
        record = json.loads(line)
        for hit in record["hits"]:
            hit["vec"] = np.array(hit["vector"], dtype=np.float32)
        records.append(record)
    return records


def verdict(shown: set, current: int, outdated: list) -> str:
    return {(True, False): VERDICTS[0], (True, True): VERDICTS[1], (False, True): VERDICTS[2],
            (False, False): VERDICTS[3]}[(current in shown, bool(shown & set(outdated)))]


def first_k(hits: list, order: list, k: int) -> list:
    """retrieval.one_per_event: a fact and its message's episode are one piece of evidence."""
    kept, seen = [], set()
    for i in order:
        drawn = tuple(hits[i]["from"])
        if drawn and drawn in seen:
            continue
        seen.add(drawn)
        kept.append(i)
        if len(kept) == k:
            break
    return kept


def evaluate(records: list, policy, ks=(1, 5)) -> dict:
    out = {k: Counter() for k in ks}
    for record in records:
        hits = record["hits"]
        order = policy(record)
        for k in ks:
            shown = set().union(*[set(hits[i]["from"]) for i in first_k(hits, order, k)]) if hits else set()
            out[k][verdict(shown, record["current"], record["outdated"])] += 1
    return out


def show(name: str, result: dict) -> None:
    for k, counts in result.items():
        n = sum(counts.values()) or 1
        print(f"{name:<44} k={k}  " + "  ".join(f"{v} {100 * counts[v] / n:5.1f}%" for v in VERDICTS) + f"  n={n}")


def _voice(hit: dict) -> tuple:
    return hit["role"] or "", hit["speaker"]


def _centred(hits: list, pool: list) -> np.ndarray:
    vectors = np.stack([hits[i]["vec"] for i in pool])
    vectors = vectors - vectors.mean(axis=0)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


def as_ranked(record: dict) -> list:
    return list(range(len(record["hits"])))


def _signals(hits: list):
    """The fields of retrieval.Signals that answered_later reads, from the dump."""
    from types import SimpleNamespace

    def column(name, kind=None):
        values = [h[name] for h in hits]
        return values if kind is None else np.array(values, dtype=kind)

    return SimpleNamespace(
        ids=column("id"), role=column("role"), speaker=column("speaker"), valid_from_days=column("valid", float),
        untrusted=column("untrusted", bool), impersonal=column("impersonal", bool), is_episode=column("episode", bool),
        tells_change=column("cue", bool), key=column("key"), sim=column("sim", float), asks=column("asks", bool))


def shipped(record: dict, **weights) -> list:
    """retrieval.answered_later run on the dumped ranking, with SUPERSESSION's values or the
    `weights` given instead (next_reach=0, cued_reach=0, near=0 turn its rules off)."""
    hits = record["hits"]
    if len(hits) < 2:
        return as_ranked(record)
    rows = {h["id"]: (h["vec"], h["statement"]) for h in hits}
    pool_rows, retrieval._pool_rows = retrieval._pool_rows, lambda *, tenant, ids: {i: rows[i] for i in ids}
    try:
        order, _ = retrieval.answered_later(tenant=None, sig=_signals(hits), order=np.arange(len(hits)),
                                            weights={**retrieval.SUPERSESSION, **weights},
                                            scores=np.array([h["score"] for h in hits]))
    finally:
        retrieval._pool_rows = pool_rows
    return [int(i) for i in order]


def recent(gap: float, similar: float, depth: int):
    def policy(record: dict) -> list:
        hits, order = record["hits"], as_ranked(record)
        if len(order) < 2:
            return order
        vectors = _centred(hits, order)
        later = [b for b in order[1:depth + 1] if _voice(hits[b]) == _voice(hits[0])
                 and hits[b]["valid"] > hits[0]["valid"] and hits[b]["score"] >= hits[0]["score"] - gap
                 and float(vectors[0] @ vectors[b]) >= similar]
        if not later:
            return order
        newest = max(later, key=lambda b: hits[b]["valid"])
        return [newest, 0] + [i for i in order if i not in (newest, 0)]
    return policy


def oracle(record: dict) -> list:
    hits, order = record["hits"], as_ranked(record)
    if not hits or not set(hits[0]["from"]) & set(record["outdated"]):
        return order
    current = [i for i in order if record["current"] in hits[i]["from"]]
    return current[:1] + [i for i in order if i not in current[:1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump", help="a --dump file of bench/changing_facts_blind.py (dev split)")
    args = parser.parse_args()
    records = load(args.dump)
    print(f"{len(records)} questions, {sum(r['changed'] for r in records)} about a changed fact")
    show("ranking as it came", evaluate(records, as_ranked))
    show("answered_later as shipped", evaluate(records, shipped))
    for rule in ("next_reach", "cued_reach", "near"):
        show(f"answered_later without {rule}", evaluate(records, lambda r, rule=rule: shipped(r, **{rule: 0})))
    grid = []
    for gap in (0.06, 0.1, 0.15, 0.2, 0.3):
        for similar in (0.0, 0.1, 0.2, 0.3, 0.4):
            for depth in (2, 3, 5):
                counts = evaluate(records, recent(gap, similar, depth), ks=(1,))[1]
                grid.append((counts["current only"], -counts["neither"], gap, similar, depth))
    _, _, gap, similar, depth = max(grid)
    show(f"recent (best: gap {gap}, similar {similar}, depth {depth})", evaluate(records, recent(gap, similar, depth)))
    show("oracle: the current statement first", evaluate(records, oracle))


if __name__ == "__main__":
    main()
