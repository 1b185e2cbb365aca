"""LoCoMo evidence recall through the memory service itself, beside the BM25 / dense baselines.

Each conversation becomes one subject of one tenant in a dedicated database (`bench_locomo`):
every turn is appended as an event (event_id = dia_id, speaker, occurred_at from the session
date, image turns with their caption) and the extraction job turns it into an episodic memory
(evidence: that event) plus any facts the extractor finds. Each question is then searched on its subject with `memory_search` (k=50), and every hit
is mapped back to the turns in its `evidence` list, so a memory derived from several turns
counts for all of them. Score: LoCoMo's recall@k over evidence turns.

    python bench/locomo.py --split test            # headline figures
    python bench/locomo.py --split tune --tune     # weight search, tune split only
    python bench/locomo.py --split all --keep      # keep the database for another run (--reuse)
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402
from bench.locomo_baselines import KS, _rank, bm25_rankings, evaluate  # noqa: E402
from bench.locomo_data import (  # noqa: E402
    CATEGORY_NAMES, TEST_SPLIT, TUNE_SPLIT, Conversation, load_conversations, recall_at_k, turn_text,
)

DB_NAME = "bench_locomo"
TENANT_SLUG = "locomo-bench"
DRAGON = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}  # LoCoMo paper, Table 3 (all ten conversations)
RESULTS_DIR = Path(benchdb.PROJECT_ROOT) / "var" / "bench"
SEARCH_K = 50


def percentile(values: list[float], p: float) -> float:
    return float(np.percentile(np.array(values), p)) if values else float("nan")


# --- ingestion ----------------------------------------------------------------------------------

def event_content(turn) -> str:
    return turn.text + (f" [image: {turn.blip_caption}]" if turn.blip_caption else "")


def ingest(conv: Conversation, tenant, actor) -> dict:
    """Append the conversation's turns as events and run their extraction job, as the service
    does for any client: every event becomes an episodic memory (the finest grain) plus whatever
    the extractor finds in it. The job runs in this process through jobs.job_run with the real
    extraction runner rather than a Celery worker (the code after the broker is identical), so
    the cost measured is the pipeline's, not the broker's. Returns the ingestion cost."""
    from memoryapp.services.events import EventInput, event_append
    from memoryapp.services.jobs import job_run
    from workers.tasks import JOB_RUNNERS, resolve

    start = time.perf_counter()
    events = [
        EventInput(event_id=t.dia_id, role="user", content=event_content(t), occurred_at=t.occurred_at,
                   session_id=f"session_{t.session}", speaker=t.speaker,
                   metadata={"blip_caption": t.blip_caption} if t.blip_caption else None)
        for t in conv.turns
    ]
    jobs = []
    for i in range(0, len(events), 1000):  # the API's batch limit
        _batch, job = event_append(tenant=tenant, subject_ref=conv.sample_id, events=events[i:i + 1000],
                                   actor=actor)
        jobs.append(job)
    accepted = time.perf_counter() - start
    runners = {"extraction": resolve(JOB_RUNNERS["extraction"])}
    for job in jobs:
        job_run(tenant_id=tenant.pk, job_id=str(job.id), runners=runners)
    seconds = time.perf_counter() - start
    from django.db.models import Count

    from memoryapp.models import Memory
    from tests.conftest import as_tenant

    with as_tenant(tenant):
        made = {f"{t}/{st}": n for t, st, n in Memory.objects.filter(tenant=tenant, subject__external_id=conv.sample_id)
                .values_list("memory_type", "status").annotate(n=Count("id")).order_by("memory_type", "status")}
    return {"conversation": conv.sample_id, "events": len(conv.turns), "seconds": round(seconds, 2),
            "append_seconds": round(accepted, 2), "events_per_second": round(len(conv.turns) / seconds, 1),
            "memories": made}


def evidence_map(tenant) -> dict:
    """memory id -> the dia_ids of its evidence events, in conversation order."""
    from memoryapp.models import MemoryEvidence
    from tests.conftest import as_tenant

    out: dict = {}
    with as_tenant(tenant):
        rows = MemoryEvidence.objects.filter(tenant=tenant).order_by("event__seq").values_list(
            "memory_id", "event__event_id")
        for memory_id, dia_id in rows:
            out.setdefault(memory_id, []).append(dia_id)
    return out


def hits_to_turns(memory_ids, evmap) -> list[str]:
    return [d for m in memory_ids for d in evmap.get(m, [])]


# --- evaluation ---------------------------------------------------------------------------------

def run_service(conv: Conversation, tenant, evmap, qvecs) -> tuple[dict, list, list]:
    """Rankings from memory_search, plus latencies with and without embedding the query."""
    from django.db import transaction

    from memoryapp.retrieval import memory_search
    from memoryapp.tenancy import tenant_activate

    rankings, lat_plain, lat_embed = {}, [], []
    for qi, q in enumerate(conv.questions):
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            t0 = time.perf_counter()
            hits = memory_search(tenant=tenant, subject_ref=conv.sample_id, query=q.question, k=SEARCH_K,
                                 query_embedding=qvecs[qi])
            lat_plain.append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            again = memory_search(tenant=tenant, subject_ref=conv.sample_id, query=q.question, k=SEARCH_K)
            lat_embed.append(1000 * (time.perf_counter() - t0))
        rankings[qi] = hits_to_turns([h.memory.pk for h in hits], evmap)
    return rankings, lat_plain, lat_embed


def search_terms(conv: Conversation, tenant) -> list[tuple[str, frozenset]]:
    """What memory_search matches each question with, and the names it leaves out
    (retrieval.search_terms)."""
    from django.db import transaction

    from memoryapp import retrieval

    with transaction.atomic():
        return [retrieval.search_terms(tenant=tenant, subject_ref=conv.sample_id, query=q.question)
                for q in conv.questions]


def search_texts(conv: Conversation, tenant) -> list[str]:
    """The texts of search_terms: the bench embeds these itself so the search latency can be
    measured without the embedding."""
    return [text for text, _named in search_terms(conv, tenant)]


def collect_signals(conv: Conversation, tenant, qvecs, texts: list[str] | None = None) -> list:
    """Raw per-memory signals for every question (for the weight search)."""
    from django.db import transaction
    from django.utils import timezone

    from memoryapp.models import MemoryEvidence
    from memoryapp.query import query_understand
    from memoryapp.models import Memory
    from memoryapp.keyroute import keys_for_query
    from memoryapp.retrieval import search_signals
    from memoryapp.selectors.memories import subject_find
    from memoryapp.tenancy import tenant_activate

    out = []
    terms = [(t, frozenset()) for t in texts] if texts else search_terms(conv, tenant)
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = subject_find(tenant=tenant, external_id=conv.sample_id)
        now = timezone.now()
        for qi, q in enumerate(conv.questions):
            # The candidates memory_search scores: those under the attributes the question is
            # routed to and in the periods it names among them (retrieval.CANDIDATES).
            info = query_understand(q.question)
            sig = search_signals(tenant=tenant, subject_id=subject.pk, query=terms[qi][0], query_embedding=qvecs[qi],
                                 as_of=now, now=now, statuses=[Memory.Status.ACTIVE], include_superseded=False,
                                 named=terms[qi][1], keys=keys_for_query(qvecs[qi]), periods=info.periods)
            out.append((sig, info))
    return out


def recall_with(convs, signals, evmap, weights) -> dict:
    """Recall at every k for a relevance configuration, on collected signals."""
    from memoryapp.retrieval import relevance_scores

    out = {k: [] for k in KS}
    for conv, sigs in zip(convs, signals):
        for q, (sig, info) in zip(conv.questions, sigs):
            rel, _ = relevance_scores(sig, info, weights)
            ranking = hits_to_turns([sig.ids[i] for i in np.argsort(-rel, kind="stable")[:SEARCH_K]], evmap)
            for k in KS:
                out[k].append(recall_at_k(ranking, q.evidence, k))
    return {k: round(100 * float(np.mean(v)), 1) for k, v in out.items()}


def ablation(convs, signals, evmap, word_signals=None) -> list[tuple[str, dict]]:
    """What each step of the ranking adds, cumulatively, from dense similarity alone;
    `word_signals` (collected with the questions as asked) shows the final ranking with the
    speakers' names matched as words."""
    from memoryapp.retrieval import RELEVANCE

    off = {"passage": 0, "text": 0, "neighbour": 0, "speaker": 0, "time": 0, "period": 0, "answer": 0}
    steps = [
        ("dense only (memory vector)", {**RELEVANCE, **off}),
        ("+ BM25 text (weighted sum)", {**RELEVANCE, **off, "text": RELEVANCE["text"]}),
        ("+ neighbour smoothing", {**RELEVANCE, **off, "text": RELEVANCE["text"],
                                   "neighbour": RELEVANCE["neighbour"]}),
        ("+ passage vector", {**RELEVANCE, "speaker": 0, "time": 0, "period": 0, "answer": 0}),
        ("+ names in the query", {**RELEVANCE, "time": 0, "period": 0, "answer": 0}),
        ("+ 'when' -> time references", {**RELEVANCE, "period": 0, "answer": 0}),
        ("+ dates -> their period", {**RELEVANCE, "answer": 0}),
        ("+ answers after questions", dict(RELEVANCE)),
        ("  (BM25 text only)", {**RELEVANCE, **off, "dense": 0, "text": 1.0}),
    ]
    rows = [(name, recall_with(convs, signals, evmap, w)) for name, w in steps]
    if word_signals is not None:
        rows.insert(len(steps) - 1, ("  (speaker names as words)", recall_with(convs, word_signals, evmap, RELEVANCE)))
    return rows


def tune(convs, signals, evmap) -> None:
    """Grid search over the relevance weights on the tune split; prints the best settings."""
    from memoryapp.retrieval import RELEVANCE, relevance_scores

    def score(weights) -> tuple[float, float, float]:
        r5, r10, r25 = [], [], []
        for conv, sigs in zip(convs, signals):
            for q, (sig, info) in zip(conv.questions, sigs):
                rel, _ = relevance_scores(sig, info, weights)
                order = np.argsort(-rel, kind="stable")[:SEARCH_K]
                ranking = hits_to_turns([sig.ids[i] for i in order], evmap)
                r5.append(recall_at_k(ranking, q.evidence, 5))
                r10.append(recall_at_k(ranking, q.evidence, 10))
                r25.append(recall_at_k(ranking, q.evidence, 25))
        return 100 * np.mean(r5), 100 * np.mean(r10), 100 * np.mean(r25)

    print("current weights:", RELEVANCE, "-> R@5 %.1f R@10 %.1f R@25 %.1f" % score(RELEVANCE))
    grid = {
        "dense": [1.0],
        "passage": [0.0, 0.5, 1.0, 2.0],
        "text": [0.8, 1.0],
        "neighbour": [0.5, 0.7, 0.9],
        "window": [2],
        "decay": [0.5, 0.8],
        "dense_scale": ["raw"],
        "speaker": [0.2, 0.3],
        "time": [0.2, 0.3],
        "period": [0.7],
        "answer": [0.35],
    }
    results = []
    for values in itertools.product(*grid.values()):
        weights = dict(zip(grid, values))
        results.append((score(weights), weights))
    results.sort(key=lambda r: r[0][0] + r[0][1], reverse=True)
    for (r5, r10, r25), weights in results[:10]:
        print(f"R@5 {r5:5.1f} R@10 {r10:5.1f} R@25 {r25:5.1f}  {weights}")


def dense_baseline(conv: Conversation, turn_vectors: np.ndarray, qvecs: np.ndarray) -> dict:
    # The same model and text as bench/locomo_baselines.dense_rankings, reusing our vectors.
    sims = qvecs @ turn_vectors.T
    return {qi: _rank(sims[qi], conv) for qi in range(len(conv.questions))}


def context_tokens(tenant, convs, per_conversation: int = 40) -> str:
    """Mean and max tokens the context endpoint returns at its default budget (1000), over the
    first questions of each conversation."""
    try:
        from memoryapp.context import context_build
    except ImportError:
        return "n/a (memoryapp/context.py does not exist)"
    from django.db import transaction

    from memoryapp.tenancy import tenant_activate

    tokens, memories = [], []
    for conv in convs:
        for q in conv.questions[:per_conversation]:
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                out = context_build(tenant=tenant, subject_ref=conv.sample_id, query=q.question, token_budget=1000)
            tokens.append(out["tokens"])
            memories.append(len(out["memories"]))
    return (f"mean {np.mean(tokens):.0f}, max {max(tokens)} tokens, mean {np.mean(memories):.1f} memories "
            f"({len(tokens)} questions, budget 1000)")


def report(split: str, convs, results: dict, cats_by_system: dict, counts: dict, n: int, latency: dict,
           ingestion: list, context: str, steps: list) -> dict:
    lines = [f"LoCoMo evidence recall, split={split}: {len(convs)} conversations "
             f"({', '.join(c.sample_id for c in convs)}), {sum(len(c.turns) for c in convs)} turns, {n} questions", ""]
    lines.append(f"{'system':<22}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for name, rk in results.items():
        lines.append(f"{name:<22}" + "".join(f"{rk[k]:8.1f}" if k in rk else f"{'-':>8}" for k in KS))
    lines.append("")
    cats = sorted(counts)
    lines.append("R@10 by category")
    lines.append(f"{'system':<22}" + "".join(f"{CATEGORY_NAMES[c]:>13}" for c in cats) + f"{'all':>8}")
    lines.append(f"{'(questions)':<22}" + "".join(f"{counts[c]:>13}" for c in cats) + f"{n:>8}")
    for name, cat in cats_by_system.items():
        lines.append(f"{name:<22}" + "".join(f"{cat[c]:13.1f}" for c in cats) + f"{results[name][10]:8.1f}")
    lines.append("")
    lines.append(f"memory_search k={SEARCH_K} latency (ms), {len(latency['plain'])} queries: "
                 f"without embedding p50 {percentile(latency['plain'], 50):.1f} p95 {percentile(latency['plain'], 95):.1f}; "
                 f"with embedding p50 {percentile(latency['embed'], 50):.1f} p95 {percentile(latency['embed'], 95):.1f}")
    if ingestion:
        lines.append("ingestion (event_append, then the extraction job: episodes, candidates, embeddings):")
        for row in ingestion:
            made = ", ".join(f"{k} {v}" for k, v in row["memories"].items())
            lines.append(f"  {row['conversation']}: {row['events']} events in {row['seconds']:.1f}s "
                         f"({row['events_per_second']:.1f} events/s; append {row['append_seconds']:.1f}s); {made}")
    lines.append(f"context tokens at default budget: {context}")
    lines.append("")
    lines.append("ablation (relevance only, cumulative)")
    lines.append(f"{'step':<32}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for name, rk in steps:
        lines.append(f"{name:<32}" + "".join(f"{rk[k]:8.1f}" for k in KS))
    print("\n".join(lines))
    return {"split": split, "recall": results, "r10_by_category": cats_by_system, "counts": counts, "questions": n,
            "latency_ms": {"plain_p50": percentile(latency["plain"], 50), "plain_p95": percentile(latency["plain"], 95),
                           "embed_p50": percentile(latency["embed"], 50), "embed_p95": percentile(latency["embed"], 95)},
            "ingestion": ingestion, "ablation": steps, "text": "\n".join(lines)}


def plot(out_png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, split in zip(axes, ["test", "tune"]):
        path = RESULTS_DIR / f"locomo_{split}.json"
        if not path.exists():
            ax.set_title(f"{split} split (not run)")
            continue
        data = json.loads(path.read_text())
        for name, rk in data["recall"].items():
            ks = [int(k) for k in rk]
            ax.plot(ks, list(rk.values()), marker="o", label=name, linestyle="--" if "paper" in name else "-")
        ax.set_xscale("log")
        ax.set_xticks(KS)
        ax.set_xticklabels([str(k) for k in KS])
        ax.set_xlabel("k (turns)")
        ax.set_title(f"LoCoMo {split} split ({data['questions']} questions)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("evidence recall@k (%)")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["tune", "test"], default="test")
    ap.add_argument("--tune", action="store_true", help="grid-search relevance weights (tune split only)")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark database")
    ap.add_argument("--reuse", action="store_true", help="reuse a kept database instead of ingesting again")
    ap.add_argument("--plot", default="docs/locomo_recall.png")
    ap.add_argument("--relevance", nargs="*", metavar="NAME=VALUE",
                    help="override a weight of retrieval.RELEVANCE for this run (to check a change tuned elsewhere)")
    args = ap.parse_args(argv)
    if args.tune and args.split != "tune":
        raise SystemExit("tune on the tune split only")

    benchdb.django_setup()
    from memoryapp import retrieval
    for override in args.relevance or []:
        name, _, value = override.partition("=")
        if name not in retrieval.RELEVANCE:
            raise SystemExit(f"--relevance {name}: retrieval.RELEVANCE has no such weight")
        retrieval.RELEVANCE[name] = type(retrieval.RELEVANCE[name])(value)
    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.models import Subject
    from memoryapp.services.tenants import tenant_create
    from tests.conftest import as_tenant

    wanted = TUNE_SPLIT if args.split == "tune" else TEST_SPLIT
    convs = [c for c in load_conversations() if c.sample_id in wanted]
    existed = benchdb.use(DB_NAME, create=True)
    try:
        tenant = tenant_create(slug=TENANT_SLUG)
        actor = Actor("system", "bench-locomo")
        with as_tenant(tenant):
            have = set(Subject.objects.filter(tenant=tenant).values_list("external_id", flat=True))
        ingestion = []
        embeddings.warm_up()
        turn_vectors = {}
        for conv in convs:
            if conv.sample_id in have and args.reuse:
                turn_vectors[conv.sample_id] = embeddings.embed_texts([turn_text(t) for t in conv.turns], 64)
                continue
            if conv.sample_id in have:
                raise SystemExit(f"{conv.sample_id} is already ingested in {DB_NAME}: pass --reuse, or drop it")
            ingestion.append(ingest(conv, tenant, actor))
            print(f"ingested {ingestion[-1]}", flush=True)
        evmap = evidence_map(tenant)
        # The service's query vectors (of what it matches with), and the baseline's (the questions).
        qvecs = {c.sample_id: embeddings.embed_texts(search_texts(c, tenant), 64) for c in convs}
        question_vecs = {c.sample_id: embeddings.embed_texts([q.question for q in c.questions], 64) for c in convs}

        if args.tune:
            signals = [collect_signals(c, tenant, qvecs[c.sample_id]) for c in convs]
            tune(convs, signals, evmap)
            return

        from memoryapp.models import MemoryEvidence
        with as_tenant(tenant):
            # Baseline vectors: the stored memory embeddings are exactly the turn texts' vectors.
            for conv in convs:
                if conv.sample_id not in turn_vectors:
                    # Through evidence: a repeated turn reinforced an identical memory instead of adding one.
                    rows = dict(MemoryEvidence.objects.filter(
                        tenant=tenant, memory__subject__external_id=conv.sample_id, memory__memory_type="episodic",
                    ).values_list("event__event_id", "memory__embedding"))
                    turn_vectors[conv.sample_id] = np.array([rows[t.dia_id] for t in conv.turns], dtype=np.float32)
        service, lat_plain, lat_embed = [], [], []
        for conv in convs:
            ranks, plain, embed = run_service(conv, tenant, evmap, qvecs[conv.sample_id])
            service.append(ranks)
            lat_plain += plain
            lat_embed += embed
        systems = {
            "bm25 (raw turns)": [bm25_rankings(c) for c in convs],
            "dense-minilm (turns)": [dense_baseline(c, turn_vectors[c.sample_id], question_vecs[c.sample_id])
                                     for c in convs],
            "memory service": service,
        }
        evaluated = {name: evaluate(convs, r) for name, r in systems.items()}
        results = {name: {k: round(v, 1) for k, v in e[0].items()} for name, e in evaluated.items()}
        results["DRAGON (paper, all 10)"] = dict(DRAGON)
        cats = {name: {c: round(v, 1) for c, v in e[1].items()} for name, e in evaluated.items()}
        counts = evaluated["memory service"][2]
        n = evaluated["memory service"][3]
        out = report(args.split, convs, results, cats, counts, n, {"plain": lat_plain, "embed": lat_embed},
                     ingestion, context_tokens(tenant, convs),
                     ablation(convs, [collect_signals(c, tenant, qvecs[c.sample_id]) for c in convs], evmap,
                              [collect_signals(c, tenant, question_vecs[c.sample_id], [q.question for q in c.questions])
                               for c in convs]))
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / f"locomo_{args.split}.json").write_text(json.dumps(out, indent=1, default=str))
        if args.plot:
            try:
                plot(Path(benchdb.PROJECT_ROOT) / args.plot)
            except ImportError:
                print("matplotlib is not installed: no plot")
    finally:
        if not args.keep:
            benchdb.drop(DB_NAME)
        elif not existed:
            print(f"kept database {DB_NAME}")


if __name__ == "__main__":
    main()
