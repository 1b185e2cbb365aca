"""Train memoryapp/credential_classifier.json: does a message give away a credential?

A logistic regression over the MiniLM vector every message gets anyway (its episode's, with or
without the speaker's name before it). It is the second opinion
for what the rules in memoryapp/safety.py cannot see as a form: credentials described in words
("what i type after my email on the nursery site is …"), values in parts, answers to security
questions. See memoryapp/credential_classifier.py for how it is used.

Trained on the **dev splits only** of the blind sets under bench/data (credentials and their
look-alikes, the fact phrasings with a value filled in, small talk) and on the turns of LoCoMo's
tune conversations (bench/locomo_data.TUNE_SPLIT; its test conversations are never read here).
The held-out splits and bench/data/blind_v8 (held out whole) are what the classifier is judged
on, through the pipeline: bench/changing_facts_blind.py --phases secrets.

The threshold is chosen without the held-out data: each blind set's dev split is scored by a
model trained on the others (leave one set out), and the threshold lets through at most
LOOKALIKE_SHARE of the dev look-alikes, the sentences nearest to credentials that must be kept.

    .venv/bin/python -m memoryapp.embedded exec -- .venv/bin/python scripts/train_credential_classifier.py
"""
from __future__ import annotations

import json
import os
import random
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

DATA = ROOT / "bench" / "data"
OUT = ROOT / "memoryapp" / "credential_classifier.json"
C = 10.0  # inverse regularisation; chosen by the leave-one-set-out runs on dev (3, 10, 30 tried)
LOOKALIKE_SHARE = 0.01
# An episode is embedded as "speaker: text" when the event names its speaker, and the prefix
# moves the vector: every text is also learnt with one of these names before it.
SPEAKERS = ["user", "Maria Lopez", "Tom", "Priya", "Sam", "Anna", "Jon Baker", "Leila", "Chen Wei", "Olu",
            "Grace", "Mateo", "Aisha Khan", "Ben", "Sofia", "Kenji", "Eve", "Liam O'Brien", "Nadia", "Raj"]


def _normalised(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


def dev_rows() -> list[tuple[str, int, str, str]]:
    """(text, label, group, kind): every dev text, labelled 1 when it holds (part of) a credential;
    group is the set it comes from, kind "credential", "lookalike", "fact", "small_talk" or "locomo"."""
    rows = []
    for path in sorted(DATA.glob("*/secrets.json")):
        group = path.parent.name
        data = json.loads(path.read_text())
        for item in data["secrets"]:
            if item["split"] != "dev":
                continue
            texts = item["text"] if isinstance(item["text"], list) else [item["text"]]
            parts = item["secret"] if isinstance(item["secret"], list) else [item["secret"]]
            for text in texts:
                holds = any(_normalised(p) and _normalised(p) in _normalised(text) for p in parts)
                rows.append((text, int(holds), group, "credential"))
        # (a look-alike may be two messages too)
        rows += [(text, 0, group, "lookalike") for item in data["harmless"] if item["split"] == "dev"
                 for text in (item["text"] if isinstance(item["text"], list) else [item["text"]])]
    for path in sorted(DATA.glob("*/attributes.json")):
        rng = random.Random(path.parent.name)
        for attribute in json.loads(path.read_text()):
            if attribute["split"] != "dev":
                continue
            for key in ("first", "change"):
                for text, split in zip(attribute.get(key, []), attribute.get(f"{key}_split", [])):
                    if split == "dev":
                        rows.append((text.replace("{v}", rng.choice(attribute["values"])), 0, path.parent.name, "fact"))
    for path in sorted(DATA.glob("*/small_talk.json")):
        rows += [(item["text"], 0, path.parent.name, "small_talk") for item in json.loads(path.read_text())
                 if item["split"] == "dev"]
    from bench.locomo_data import TUNE_SPLIT, load_conversations

    rows += [(turn.text, 0, "locomo", "locomo") for conv in load_conversations() if conv.sample_id in TUNE_SPLIT
             for turn in conv.turns]
    return rows


def main() -> None:
    import django

    django.setup()
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from memoryapp import embeddings

    rows = dev_rows()
    names = random.Random(8)
    rows += [(f"{names.choice(SPEAKERS)}: {text}", label, group, kind) for text, label, group, kind in rows]
    texts = [t for t, _, _, _ in rows]
    y = np.array([label for _, label, _, _ in rows])
    groups = np.array([g for _, _, g, _ in rows])
    kinds = np.array([k for _, _, _, k in rows])
    X = embeddings.embed_texts(texts)

    held = np.zeros(len(rows))
    for group in sorted(set(groups) - {"locomo"}):
        test = groups == group
        model = LogisticRegression(C=C, max_iter=5000).fit(X[~test], y[~test])
        held[test] = model.predict_proba(X[test])[:, 1]
    # The look-alikes set the threshold: facts, small talk and LoCoMo's turns score far lower.
    threshold = float(np.quantile(held[kinds == "lookalike"], 1 - LOOKALIKE_SHARE))
    caught = float(np.mean(held[y == 1] >= threshold))

    model = LogisticRegression(C=C, max_iter=5000).fit(X, y)
    OUT.write_text(json.dumps({
        "embedding_version": embeddings.EMBEDDING_VERSION,
        "threshold": round(threshold, 4),
        "bias": float(model.intercept_[0]),
        "weights": [round(float(w), 6) for w in model.coef_[0]],
        "trained_on": {"texts": len(rows), "credentials": int(y.sum()),
                       "sets": sorted(set(groups)), "split": "dev only; LoCoMo's tune conversations"},
        "leave_one_set_out": {"credentials_over_threshold": round(caught, 3),
                              "lookalikes_over_threshold": LOOKALIKE_SHARE},
    }, indent=1) + "\n")
    print(f"{len(rows)} texts, {int(y.sum())} with a credential; threshold {threshold:.3f}; "
          f"leave one set out: {100 * caught:.1f}% of dev credentials over it, "
          f"{100 * LOOKALIKE_SHARE:.1f}% of look-alikes")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
