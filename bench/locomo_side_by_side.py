"""LoCoMo evidence recall of this checkout's memory_search beside another revision's, on one kept
LoCoMo database (made by `bench/locomo.py --split test --keep`): every test question is ranked by
both, with the same query vector, alternating, and R@k is computed as bench/locomo.py computes it.

    python -m memoryapp.embedded exec -- .venv/bin/python bench/locomo_side_by_side.py [--before HEAD]

Besides R@1/5/10/50 for each, it prints how many of one's top 10 the other returns (1.000: the
same memories). For a change to how candidates are chosen, not to how they are ranked.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import benchdb  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD", help="git revision to compare with")
    args = ap.parse_args(argv)
    benchdb.django_setup()
    from django.db import transaction

    from bench.locomo import DB_NAME, SEARCH_K, TENANT_SLUG, evidence_map, hits_to_turns, search_texts
    from bench.locomo_baselines import evaluate
    from bench.locomo_data import TEST_SPLIT, load_conversations
    from bench.search_at_cap import before_module
    from memoryapp import embeddings, retrieval
    from memoryapp.models import Tenant
    from memoryapp.tenancy import tenant_activate

    before = before_module(args.before)
    benchdb.use(DB_NAME, create=False)
    tenant = Tenant.objects.get(slug=TENANT_SLUG)
    convs = [c for c in load_conversations() if c.sample_id in TEST_SPLIT]
    evmap = evidence_map(tenant)
    runs = {"before": [], "after": []}
    agree = []
    for conv in convs:
        qvecs = embeddings.embed_texts(search_texts(conv, tenant), 64)
        ranks = {"before": {}, "after": {}}
        for qi, q in enumerate(conv.questions):
            ids = {}
            for name, module in (("after", retrieval), ("before", before)):
                with transaction.atomic():
                    tenant_activate(tenant=tenant)
                    hits = module.memory_search(tenant=tenant, subject_ref=conv.sample_id, query=q.question,
                                                k=SEARCH_K, query_embedding=qvecs[qi])
                ids[name] = [h.memory.pk for h in hits]
                ranks[name][qi] = hits_to_turns(ids[name], evmap)
            top = set(ids["before"][:10])
            agree.append(len(top & set(ids["after"][:10])) / max(len(top), 1))
        for name in runs:
            runs[name].append(ranks[name])
    print(f"LoCoMo test split, {sum(len(c.questions) for c in convs)} questions, k={SEARCH_K}:")
    for name, rankings in runs.items():
        overall = evaluate(convs, rankings)[0]
        label = args.before if name == "before" else "this checkout"
        print(f"  {name:<7} ({label}): " + "  ".join(f"R@{k} {v:.1f}" for k, v in overall.items()))
    print(f"  top 10 in common: {np.mean(agree):.3f}")


if __name__ == "__main__":
    main()
