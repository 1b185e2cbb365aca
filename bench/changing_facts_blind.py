"""Changing facts, unanswerable questions and secrets, on phrasings written blind to the rules.

    .venv/bin/python bench/changing_facts_blind.py --split dev       # tune on this
    .venv/bin/python bench/changing_facts_blind.py --split heldout   # report this, never tune on it

The data (bench/data/blind_v1 by default, `--data` for the others; see each README) was written
by helpers that never read the extractor, the safety rules or bench/changing_facts.py. blind_v1,
blind_v4, blind_v5 and blind_v6 have a dev and a held-out split; blind_v2 and blind_v3 are held
out whole; blind_v7 holds only credentials and look-alikes, in both splits, blind_v8 only
credentials and look-alikes, held out whole, blind_v9 600 credentials and 600 look-alikes
(English chat and 26 languages in structured forms), half dev, half held out, and blind_v10 229
and 229 (references to secrets kept elsewhere against real values in configs and code,
credentials split over two messages against ordinary pairs), half dev, half held out, and
blind_v11 320 and 320 from two more authors (evasions and technical forms; everyday talk in 19
languages), half dev, half held out, and blind_v12 300 and 300 from two more authors (everyday
talk in 21 languages; developers' configs, commands and logs), held out whole. Conversations are
built like seed 000's experiment: 50 user turns (the user's name as the speaker), 8 facts about
the user among small talk, 3 of them changed later, one question per fact at the end. Every
turn goes through the service as an event (event_append, then the extraction job in this
process, as a worker runs it), questions through memory_search and context_build. In the same run, over the same raw turns: plain MiniLM top-k (no memory design
at all), the baseline the service must beat.

Splits. dev: dev attributes with dev phrasings. heldout: the held-out attributes (any phrasing)
and, reported separately, the dev attributes with held-out phrasings only. Measured:
- changing facts at k = 1, 3, 5: current only / both / outdated only / neither, by evidence (a
  shown memory counts for the turns it was drawn from, found by position, never by the value);
- as_of halfway between the old and the new statement: the old version at k = 1;
- abstention: the context says nothing stored answers an unanswerable question, and keeps
  answering the answerable ones;
- secrets: of the split's credential turns (some split over two turns), how many leave the
  secret anywhere in memories or events (compared after NFKC and zero-width stripping; parts
  shorter than 3 characters are not looked for, they would match anything); of its harmless
  look-alikes (some two messages), how many are redacted or refused.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
import unicodedata
from collections import Counter
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402

DATA_ROOT = Path(__file__).resolve().parent / "data"
DATA = DATA_ROOT / "blind_v1"
TURNS = 50
N_FACTS = 8
N_CHANGED = 3
KS = (1, 3, 5)
DB_NAME = "bench_changing_facts_blind"
NAMES = ["Maya", "Tom", "Ines", "Kofi", "Lena", "Ravi", "Sara", "Jonas", "Amara", "Diego", "Hana", "Ollie"]
# blind_v3's author could not see which attributes blind_v1 holds: these five are blind_v1 dev
# attributes under other ids, so they are reported with the held-out phrasings, not as new attributes.
SEEN_IN_V1_DEV = {"blind_v3": {"favourite_cuisine", "commute_mode", "phone_model", "mobile_carrier", "gym"}}
VERDICTS = ("current only", "both", "outdated only", "neither")


def _read(name: str, default):
    """A data file of the set, or `default` for a set without it (secrets_dev has only secrets)."""
    path = DATA / name
    return json.loads(path.read_text()) if path.exists() else default


def load(split: str) -> dict:
    attributes = _read("attributes.json", [])
    pool = []
    for attr in attributes:
        if split == "dev":
            if attr["split"] != "dev":
                continue
            group, keep = "dev", "dev"
        elif attr["id"] in SEEN_IN_V1_DEV.get(DATA.name, ()):
            group, keep = "heldout phrasing", None  # the attribute was tuned on, these phrasings were not
        elif attr["split"] == "heldout":
            group, keep = "heldout attribute", None  # every phrasing
        else:
            group, keep = "heldout phrasing", "heldout"

        def chosen(name):
            return [t for t, s in zip(attr[name], attr[f"{name}_split"]) if keep is None or s == keep]

        pool.append({"id": attr["id"], "group": group, "values": attr["values"], "names": attr.get("names", []),
                     "first": chosen("first"), "change": chosen("change"), "questions": chosen("questions")})
    wanted = "dev" if split == "dev" else "heldout"
    secrets = _read("secrets.json", {"secrets": [], "harmless": []})
    return {
        "attributes": pool,
        "small_talk": [t["text"] for t in _read("small_talk.json", []) if t["split"] == wanted],
        "unanswerable": [u["question"] for u in _read("unanswerable.json", []) if u["split"] == wanted],
        "secrets": [s for s in secrets["secrets"] if s["split"] == wanted],
        "harmless": [s for s in secrets["harmless"] if s["split"] == wanted],
    }


def make_conversation(rng: random.Random, data: dict):
    """50 turns [(text, attribute id or None, version)], the facts' questions, the user's name."""
    attrs = rng.sample(data["attributes"], N_FACTS)
    changed = {a["id"] for a in rng.sample(attrs, N_CHANGED)}
    first_turns = rng.sample(range(0, 30), N_FACTS)
    turns: list = [None] * TURNS
    plan: dict = {}
    for attr, turn in zip(attrs, first_turns):
        plan[attr["id"]] = [turn]
    taken = set(first_turns)
    for attr in attrs:
        if attr["id"] in changed:
            later = rng.choice([s for s in range(max(plan[attr["id"]][0] + 5, 30), TURNS) if s not in taken])
            plan[attr["id"]].append(later)
            taken.add(later)
    for attr in attrs:
        values = rng.sample(attr["values"], len(plan[attr["id"]]))
        for version, (pos, value) in enumerate(zip(plan[attr["id"]], values)):
            template = rng.choice(attr["first"] if version == 0 else attr["change"])
            text = template.format(v=value, n=rng.choice(attr["names"]) if attr["names"] else "")
            turns[pos] = (text, attr["id"], version)
    talk = rng.sample(data["small_talk"], TURNS)
    for i in range(TURNS):
        if turns[i] is None:
            turns[i] = (talk[i], None, None)
    name = rng.choice(NAMES)
    questions = [(a, rng.choice(a["questions"]).format(name=name)) for a in attrs]
    return turns, questions, changed, name


def classify(shown: set[int], current: int, outdated: set[int]) -> str:
    return {(True, False): "current only", (True, True): "both", (False, True): "outdated only",
            (False, False): "neither"}[(current in shown, bool(shown & outdated))]


INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")


def normalised(text: str) -> str:
    return INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).lower()


def table(title: str, results: dict, rows: list[str]) -> None:
    print(f"\n{title}")
    print(f"{'policy':<42}{'k':>3}  {'current only':>12} {'both':>6} {'outdated only':>14} {'neither':>8}   n")
    for name in rows:
        for k in KS:
            counts = results.get((name, k))
            if not counts:
                continue
            total = sum(counts.values())
            pct = {v: 100 * counts[v] / total for v in VERDICTS}
            print(f"{name:<42}{k:>3}  {pct['current only']:>11.1f}% {pct['both']:>5.1f}% "
                  f"{pct['outdated only']:>13.1f}% {pct['neither']:>7.1f}%  {total}")


def dump_record(trace, evidence, turns, question, attr, changed, when) -> dict:
    """One question's ranking before answered_later, with what each memory was drawn from."""
    sig, order, scores = trace["sig"], trace["order"], trace["scores"]
    top = [int(i) for i in order[:30]]
    from memoryapp import retrieval
    from memoryapp.models import Memory

    rows = {m: (st, [round(float(x), 5) for x in e]) for m, st, e in Memory.objects.filter(
        id__in=[sig.ids[i] for i in top]).values_list("id", "statement", "embedding")}
    positions = [i for i, (_, a, _) in enumerate(turns) if a == attr["id"]]
    return {
        "question": question, "attribute": attr["id"], "group": attr["group"], "changed": attr["id"] in changed,
        "current": positions[-1], "outdated": positions[:-1], "turns": [t[0] for t in turns],
        "fact_turns": positions,
        "hits": [{"id": str(sig.ids[i]), "from": sorted(evidence.get(sig.ids[i], ())), "score": float(scores[i]),
                  "sim": float(sig.sim[i]), "bm25": float(sig.bm25[i]), "valid": float(sig.valid_from_days[i]),
                  "episode": bool(sig.is_episode[i]), "key": sig.key[i], "cue": retrieval.tells_change(sig, i),
                  "role": sig.role[i], "speaker": sig.speaker[i], "statement": rows[sig.ids[i]][0],
                  "asks": bool(sig.asks[i]), "impersonal": bool(sig.impersonal[i]),
                  "untrusted": bool(sig.untrusted[i]),
                  "vector": rows[sig.ids[i]][1]} for i in top],
    }


def run(args) -> dict:
    benchdb.django_setup()
    from django.db import transaction

    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.context import context_build
    from memoryapp.models import Event, Memory, MemoryEvidence
    from memoryapp.retrieval import memory_search
    from memoryapp.services.events import EventInput, event_append
    from memoryapp.services.jobs import job_run
    from memoryapp.services.tenants import tenant_create
    from memoryapp.tenancy import tenant_activate
    from workers.tasks import JOB_RUNNERS, resolve

    import logging

    from memoryapp import retrieval

    trace: dict = {}
    if args.dump:
        # Dev exploration: keep the ranking answered_later saw, to study read-time policies offline.
        real_answered_later = retrieval.answered_later

        def tracing(*, tenant, sig, order, weights=None, scores=None):
            trace.update(sig=sig, order=order, scores=scores)
            return real_answered_later(tenant=tenant, sig=sig, order=order, weights=weights, scores=scores)

        retrieval.answered_later = tracing
        dump = open(args.dump, "w")
    for override in args.relevance or []:  # exploring on dev: --relevance neighbour=0 passage=0
        name, _, value = override.partition("=")
        if name not in retrieval.RELEVANCE:
            print(f"note: --relevance {name} is a weight relevance_scores does not read unless code asks "
                  "for it (a typo?)", file=sys.stderr)
        retrieval.RELEVANCE[name] = type(retrieval.RELEVANCE.get(name, 0.0))(value)
    for override in args.supersession or []:  # exploring on dev: --supersession next_reach=0
        name, _, value = override.partition("=")
        if name not in retrieval.SUPERSESSION:
            print(f"note: --supersession {name} is no key of retrieval.SUPERSESSION (a typo?)", file=sys.stderr)
        retrieval.SUPERSESSION[name] = type(retrieval.SUPERSESSION.get(name, 0.0))(value)
    logging.getLogger("memoryapp").setLevel(logging.ERROR)
    benchdb.use(args.database, create=True)
    embeddings.warm_up()
    data = load(args.split)
    tenant = tenant_create(slug=f"blind-{args.split}-{int(time.time())}")
    actor = Actor("system", "bench")
    runners = {"extraction": resolve(JOB_RUNNERS["extraction"])}

    def ingest(subject, events):
        _, job = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
        if job is not None:
            job_run(tenant_id=tenant.pk, job_id=str(job.id), runners=runners)

    results: dict = {}
    as_of: Counter = Counter()
    abstain: Counter = Counter()
    misses: list = []
    as_of_misses: list = []
    base = datetime(2026, 3, 1, 8, 0, tzinfo=dt_timezone.utc)
    rng = random.Random(args.seed)
    started = time.perf_counter()
    for c in range(args.conversations if "facts" in args.phases else 0):
        turns, questions, changed, name = make_conversation(rng, data)
        subject = f"c{c}"
        when = [base + timedelta(hours=i) for i in range(TURNS)]
        ingest(subject, [EventInput(f"t{i}", "user", text, occurred_at=when[i], speaker=name)
                         for i, (text, *_rest) in enumerate(turns)])
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            evidence: dict = {}
            for memory_id, event_id in MemoryEvidence.objects.filter(
                tenant=tenant, memory__subject__external_id=subject
            ).values_list("memory_id", "event__event_id"):
                evidence.setdefault(memory_id, set()).add(int(event_id[1:]))
        raw = embeddings.embed_texts([text for text, *_ in turns])  # plain top-k: the turns as said
        unanswerable = rng.sample(data["unanswerable"], 2)
        for attr, question in questions:
            positions = [i for i, (_, a, _) in enumerate(turns) if a == attr["id"]]
            current, outdated = positions[-1], set(positions[:-1])
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                trace.clear()
                hits = memory_search(tenant=tenant, subject_ref=subject, query=question, k=max(KS))
                if args.dump and trace.get("sig") is not None:
                    dump.write(json.dumps(dump_record(trace, evidence, turns, question, attr, changed, when)) + "\n")
                built = context_build(tenant=tenant, subject_ref=subject, query=question, token_budget=1000)
            qvec = embeddings.embed_text(question, partition=None)
            plain = list(np.argsort(-(raw @ qvec)))
            for k in KS:
                shown = set().union(*[evidence.get(h.memory.pk, set()) for h in hits[:k]]) if hits else set()
                verdict = classify(shown, current, outdated)
                kind = "changed" if attr["id"] in changed else "unchanged"
                for row in ("memory service", f"memory service ({attr['group']})", f"memory service ({kind} facts)"):
                    results.setdefault((row, k), Counter())[verdict] += 1
                plain_verdict = classify({int(i) for i in plain[:k]}, current, outdated)
                for row in ("plain MiniLM top-k over raw turns", f"plain top-k ({attr['group']})",
                            f"plain top-k ({kind} facts)"):
                    results.setdefault((row, k), Counter())[plain_verdict] += 1
                if k == 1 and verdict != "current only":
                    misses.append((question, verdict, plain_verdict, [turns[p][0] for p in positions],
                                   [h.memory.statement[:90] for h in hits[:1]]))
            abstain["answerable"] += 1
            abstain["answerable wrongly abstained"] += int(bool(built.get("nothing_relevant")))
            if attr["id"] in changed:
                old, new = positions[0], positions[-1]
                middle = when[old] + (when[new] - when[old]) / 2
                with transaction.atomic():
                    tenant_activate(tenant=tenant)
                    then = memory_search(tenant=tenant, subject_ref=subject, query=question, k=1, as_of=middle)
                shown = evidence.get(then[0].memory.pk, set()) if then else set()
                as_of["asked"] += 1
                as_of["old version shown"] += int(old in shown)
                as_of["new version shown"] += int(new in shown)
                plain_then = [i for i in plain if when[int(i)] <= middle][:1]
                as_of["plain: old version shown"] += int(old in {int(i) for i in plain_then})
                if old not in shown:
                    as_of_misses.append((question, turns[old][0], then[0].memory.statement[:90] if then else None))
        for question in unanswerable:
            question = question.format(name=name)
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                built = context_build(tenant=tenant, subject_ref=subject, query=question, token_budget=1000)
            abstain["unanswerable"] += 1
            abstain["unanswerable abstained"] += int(bool(built.get("nothing_relevant")))
        if (c + 1) % 25 == 0:
            print(f"  {c + 1} conversations, {time.perf_counter() - started:.0f} s", file=sys.stderr)

    secrets: Counter = Counter()
    leaks, refusals = [], []
    if "secrets" in args.phases:
        for n, item in enumerate(data["secrets"]):
            texts = item["text"] if isinstance(item["text"], list) else [item["text"]]
            parts = item["secret"] if isinstance(item["secret"], list) else [item["secret"]]
            subject = f"secret-{n}"
            ingest(subject, [EventInput(f"s{i}", "user", text, occurred_at=base + timedelta(minutes=i))
                             for i, text in enumerate(texts)])
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                stored = [*Memory.objects.filter(subject__external_id=subject).values_list("statement", flat=True),
                          *Event.objects.filter(subject__external_id=subject).values_list("content", flat=True)]
            haystack = normalised(" \n ".join(stored))
            leaked = any(normalised(p) in haystack for p in parts if len(normalised(p)) >= 3)
            secrets["secret turns"] += 1
            secrets["secret stored"] += int(leaked)
            if leaked:
                leaks.append((item["kind"], item["form"], texts))
        for n, item in enumerate(data["harmless"]):
            # (a look-alike may be two messages too: refusing either counts)
            texts = item["text"] if isinstance(item["text"], list) else [item["text"]]
            subject = f"harmless-{n}"
            ingest(subject, [EventInput(f"h{i}", "user", text, occurred_at=base + timedelta(minutes=i))
                             for i, text in enumerate(texts)])
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                events = list(Event.objects.filter(subject__external_id=subject).order_by("occurred_at"))
            secrets["harmless turns"] += 1
            refused = [e.content for e, text in zip(events, texts) if e.redacted or e.content != text]
            secrets["harmless redacted"] += int(bool(refused))
            if refused:
                refusals.append((item["kind"], texts, refused))

    print(f"\nsplit {args.split}, seed {args.seed}: {args.conversations} conversations x {TURNS} turns, "
          f"{N_FACTS} facts ({N_CHANGED} changed); {time.perf_counter() - started:.0f} s")
    groups = sorted({a["group"] for a in data["attributes"]})
    table("changing facts", results, ["memory service", "plain MiniLM top-k over raw turns"]
          + [f"memory service ({g})" for g in groups] + [f"plain top-k ({g})" for g in groups]
          + [f"{who} ({kind} facts)" for kind in ("changed", "unchanged")
             for who in ("memory service", "plain top-k")])
    if as_of["asked"]:
        print(f"\nas_of between the two statements (k=1): old version {100 * as_of['old version shown'] / as_of['asked']:.1f}%"
              f", new version {100 * as_of['new version shown'] / as_of['asked']:.1f}%"
              f"; plain top-1 over turns said by then: old {100 * as_of['plain: old version shown'] / as_of['asked']:.1f}%"
              f" (n={as_of['asked']})")
        for miss in as_of_misses[:args.examples]:
            print("   as_of missed (question, old statement, shown):", miss)
    if abstain["unanswerable"]:
        print(f"abstention: unanswerable abstained {100 * abstain['unanswerable abstained'] / abstain['unanswerable']:.1f}%"
              f" (n={abstain['unanswerable']}); answerable wrongly abstained "
              f"{100 * abstain['answerable wrongly abstained'] / abstain['answerable']:.1f}% (n={abstain['answerable']})")
    if secrets["secret turns"]:
        print(f"secrets: stored {secrets['secret stored']} of {secrets['secret turns']}; harmless redacted "
              f"{secrets['harmless redacted']} of {secrets['harmless turns']}")
        for leak in leaks[:args.examples]:
            print("   leaked", leak)
        for refusal in refusals[:args.examples]:
            print("   refused", refusal)
    if misses:
        # Those plain top-1 got right first: where the service loses to no memory design at all.
        lost = [m for m in misses if m[2] == "current only"]
        print(f"\nmisses at k=1: {len(misses)}, of which plain top-1 got {len(lost)} right "
              "(question, verdict, plain's verdict, fact turns, shown):")
        for miss in (lost + [m for m in misses if m not in lost])[:args.examples]:
            print("  ", miss)
    if not args.keep:
        benchdb.drop(args.database)
    return {"results": results, "as_of": as_of, "abstain": abstain, "secrets": secrets}


def main() -> None:
    global DATA
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["dev", "heldout"], default="dev")
    parser.add_argument("--data", default="blind_v1",
                        choices=[f"blind_v{n}" for n in range(1, 13)] + ["secrets_dev"],
                        help="blind_v2 and blind_v3 are held out whole (written after blind_v1's held-out split "
                             "was seen): run them with --split heldout, never tune on them. blind_v4, blind_v5 "
                             "and blind_v6 have a dev and a held-out split, as blind_v1")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--phases", nargs="+", default=["facts", "secrets"], choices=["facts", "secrets"])
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--database", default=DB_NAME)
    parser.add_argument("--keep", action="store_true", help="keep the bench database afterwards")
    parser.add_argument("--dump", help="write each question's ranking before answered_later as JSON lines (dev)")
    parser.add_argument("--relevance", nargs="*", help="override retrieval.RELEVANCE weights (dev exploration)")
    parser.add_argument("--supersession", nargs="*", help="override retrieval.SUPERSESSION settings (dev exploration)")
    args = parser.parse_args()
    DATA = DATA_ROOT / args.data
    if args.data in ("blind_v2", "blind_v3") and args.split != "heldout":
        parser.error(f"{args.data} has only a held-out split")
    if args.data == "secrets_dev" and (args.split != "dev" or "facts" in args.phases):
        parser.error("secrets_dev holds only credentials and look-alikes, all dev: --split dev --phases secrets")
    if args.data in ("blind_v7", "blind_v8", "blind_v9", "blind_v10", "blind_v11") and "facts" in args.phases:
        parser.error(f"{args.data} holds only credentials and look-alikes: --phases secrets")
    run(args)


if __name__ == "__main__":
    main()
