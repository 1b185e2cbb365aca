"""Read-time policies replayed offline on a changing-facts dump: what reordering can still buy.

    .venv/bin/python bench/changing_facts_blind.py --split dev --conversations 40 --phases facts --dump /tmp/dev.jsonl
    .venv/bin/python bench/read_policy_sim.py /tmp/dev.jsonl

The dump holds, per question, the service's ranking just before its read-time supersession
(retrieval.answered_later): the best 30 memories with their score, cosine, BM25, valid time,
voice, statement, vector and the turns each was drawn from. Replaying policies on it takes
seconds instead of a 15-minute pipeline run, so a family of policies can be weighed on the dev
split before one is built. Dev dumps only: a held-out split is run once, through the pipeline.

Printed, at k = 1 and 5 (current only / both / outdated only / neither):
- the ranking as it came, and retrieval.answered_later replayed with and without its "near"
  rule (its frame check included). The replay copies answered_later's decisions: change one and
  change the other, or the figures describe code that no longer runs;
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

from memoryapp.frames import same_frame  # noqa: E402  (plain Python, no Django needed)

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


def _spoken(statement: str) -> str:
    head, sep, rest = statement.partition(": ")
    return rest if sep and len(head) <= 60 and "\n" not in head else statement


def as_ranked(record: dict) -> list:
    return list(range(len(record["hits"])))


def shipped(record: dict, similar=0.3, frame_pool=10, frame_gap=0.15, near=2) -> list:
    """retrieval.answered_later, replayed (SUPERSESSION's values; near=0 is the policy before
    2026-12-03's "near" rule: two messages of one person right behind the best hit)."""
    hits, order = record["hits"], as_ranked(record)
    if len(order) < 2:
        return order
    later = [b for b in order[1:] if hits[b]["valid"] > hits[0]["valid"] and _voice(hits[b]) == _voice(hits[0])]
    close = [b for b in later if b <= near and hits[0]["episode"] and hits[b]["episode"] and hits[b]["role"]]
    cued = [b for b in later if hits[b]["cue"] or b in close]
    framed = [b for b in later if b < frame_pool and hits[0]["episode"] == hits[b]["episode"]
              and hits[0]["key"] == hits[b]["key"] and hits[0]["score"] - hits[b]["score"] <= frame_gap]
    if not cued and not framed:
        return order
    vectors = _centred(hits, order)
    restating = [b for b in cued if float(vectors[0] @ vectors[b]) >= similar]
    restating += [b for b in framed if b not in restating
                  and same_frame(_spoken(hits[0]["statement"]), _spoken(hits[b]["statement"]))]
    if not restating:
        return order
    newest = max(restating, key=lambda b: hits[b]["valid"])
    return [newest, 0] + [i for i in order if i not in (newest, 0)]


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
    show("answered_later before 'near'", evaluate(records, lambda r: shipped(r, near=0)))
    show("answered_later as shipped", evaluate(records, shipped))
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
