"""Train memoryapp/credential_classifier.json: does a message give away a credential?

A logistic regression over the MiniLM vector every message gets anyway (its episode's, with or
without the speaker's name before it). It is the second opinion for what the rules in
memoryapp/safety.py cannot see as a form: credentials described in words ("what i type after my
email on the nursery site is …"), values in parts, answers to security questions. See
memoryapp/credential_classifier.py for how it is used.

Trained on the **dev splits only** of the blind sets under bench/data (credentials and their
look-alikes, the fact phrasings with a value filled in, small talk) and on the turns of LoCoMo's
tune conversations (bench/locomo_data.TUNE_SPLIT; its test conversations are never read here).
The held-out splits, and the sets held out whole, are what the classifier is judged on, through
the pipeline: bench/changing_facts_blind.py --phases secrets.

It learns only from the messages it will be asked about: those the rules leave as they are
(what they redact is theirs; they change none of the ordinary texts). A message whose credential
the rules already cut would teach it the topic "credential" rather than what the rules miss, and
pull look-alikes over the line. Facts, the most of what people send, are learnt with each value.

The threshold is chosen without the held-out data, on what the pipeline would do: each blind set's
dev split is scored by a model trained on the others (leave one set out), each of its items is
played through the rules and the classifier at every candidate threshold, bare and after a
speaker's name (events come both ways), and the lowest threshold is taken at which the
classifier adds at most LOOKALIKE_SHARE of the dev look-alikes to those the rules refuse and
withholds at most ORDINARY_SHARE of the ordinary dev texts (every fact phrasing with every value,
small talk, LoCoMo's tune turns), scored leave one set out, bare (a speaker's name before them
lowered the scores looked at).

    .venv/bin/python -m memoryapp.embedded exec -- .venv/bin/python scripts/train_credential_classifier.py
"""
from __future__ import annotations

import json
import os
import random
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

DATA = ROOT / "bench" / "data"
OUT = ROOT / "memoryapp" / "credential_classifier.json"
C = 10.0  # inverse regularisation; chosen by the leave-one-set-out runs on dev (1, 3, 10, 30 tried)
# The issue's budget for refused look-alikes (2 %), given to the classifier on top of the rules'.
LOOKALIKE_SHARE = 0.02
# ... and of ordinary messages (facts, small talk, LoCoMo's turns) it may withhold: one in 2,000
# (the rules withhold none of them).
ORDINARY_SHARE = 0.0005
# blind_v12 came after this recipe was chosen and judged it whole; its dev half is for rule work
# until a fresher set can judge a model that learnt from it.
HELD_FROM_TRAINING = frozenset({"blind_v12"})
# An episode is embedded as "speaker: text" when the event names its speaker, and the prefix
# moves the vector: every text is also learnt with one of these names before it.
SPEAKERS = ["user", "Maria Lopez", "Tom", "Priya", "Sam", "Anna", "Jon Baker", "Leila", "Chen Wei", "Olu",
            "Grace", "Mateo", "Aisha Khan", "Ben", "Sofia", "Kenji", "Eve", "Liam O'Brien", "Nadia", "Raj"]


def _normalised(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


@dataclass
class Message:
    text: str
    stored: str              # what the rules leave of it, as events.py appends it
    redacted: bool           # the rules found something: the classifier has no say
    continued: str = ""      # what the rules leave when it is read as continuing a withheld message
    holds_value: bool = False  # (part of) the item's credential is in it
    may_withhold: bool = False


@dataclass
class Item:
    group: str
    credential: bool
    parts: list[str]
    messages: list[Message] = field(default_factory=list)


def dev_items() -> list[Item]:
    """Every dev credential and look-alike of the blind sets (one or two messages each), with
    what the rules make of each message."""
    from memoryapp.credential_classifier import may_withhold
    from memoryapp.safety import follows_credential, redact_secrets

    items = []
    for path in sorted(DATA.glob("*/secrets.json")):
        if path.parent.name in HELD_FROM_TRAINING:
            continue
        data = json.loads(path.read_text())
        for listname in ("secrets", "harmless"):
            for entry in data[listname]:
                if entry.get("split") != "dev":
                    continue
                texts = entry["text"] if isinstance(entry["text"], list) else [entry["text"]]
                parts = entry.get("secret") or []
                parts = parts if isinstance(parts, list) else [parts]
                item = Item(path.parent.name, listname == "secrets", parts)
                previous = None
                for text in texts:
                    continues, carried = follows_credential(previous) if previous is not None else (False, False)
                    stored, findings = redact_secrets(text, continues=continues, carried=carried)
                    item.messages.append(Message(
                        text, stored, bool(findings),
                        continued=redact_secrets(text, continues=True)[0] if previous is not None else stored,
                        holds_value=any(_normalised(p) and _normalised(p) in _normalised(text) for p in parts),
                        may_withhold=not findings and may_withhold(stored)))
                    previous = stored
                items.append(item)
    return items


def other_dev_texts(*, every_value: bool = False) -> list[tuple[str, str]]:
    """(text, group): dev texts that hold no credential: fact phrasings with a value filled in
    (one drawn at random, or each of the attribute's values), small talk, and the turns of
    LoCoMo's tune conversations."""
    rows = []
    for path in sorted(DATA.glob("*/attributes.json")):
        rng = random.Random(path.parent.name)
        for attribute in json.loads(path.read_text()):
            if attribute["split"] != "dev":
                continue
            for key in ("first", "change"):
                for text, split in zip(attribute.get(key, []), attribute.get(f"{key}_split", [])):
                    if split == "dev":
                        values = attribute["values"] if every_value else [rng.choice(attribute["values"])]
                        rows += [(text.replace("{v}", value), path.parent.name) for value in values]
    for path in sorted(DATA.glob("*/small_talk.json")):
        rows += [(item["text"], path.parent.name) for item in json.loads(path.read_text()) if item["split"] == "dev"]
    from bench.locomo_data import TUNE_SPLIT, load_conversations

    rows += [(turn.text, "locomo") for conv in load_conversations() if conv.sample_id in TUNE_SPLIT
             for turn in conv.turns]
    return rows


def outcome(items: list[Item], scores: dict, threshold: float) -> tuple[int, int]:
    """(credentials stored, look-alikes refused) when the rules and the classifier at
    `threshold` (a logit) read `items`, as the pipeline does: a withheld message is dropped
    whole, and the sender's next message is read as continuing it. (The pipeline carries the
    chain on when that continuation itself ends on a credential's word; no set holds an item of
    more than two messages, so it is not played here.)"""
    stored = refused = 0
    for item in items:
        kept, withheld_before, any_withheld = [], False, False
        for message in item.messages:
            withheld = message.may_withhold and bool(scores.get(id(message), float("-inf")) >= threshold)
            any_withheld |= withheld
            if not withheld:
                kept.append(message.continued if withheld_before else message.stored)
            withheld_before = withheld
        if item.credential:
            left = _normalised(" ".join(kept))
            stored += any(len(_normalised(p)) >= 3 and _normalised(p) in left for p in item.parts)
        else:
            refused += any_withheld or any(m.redacted for m in item.messages)
    return stored, refused


def main() -> None:
    import django

    django.setup()
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from memoryapp import embeddings
    from memoryapp.credential_classifier import may_withhold

    items = dev_items()
    # What the classifier is asked about: messages the rules leave as they are.
    messages = [(m, item.group) for item in items for m in item.messages if not m.redacted]
    # Facts are what a person's messages mostly are: each fact phrasing with each of its values.
    others = list(dict.fromkeys(other_dev_texts(every_value=True)))
    names = random.Random(8)
    texts = [m.stored for m, _ in messages] + [t for t, _ in others]
    texts += [f"{names.choice(SPEAKERS)}: {text}" for text in texts]
    X = embeddings.embed_texts(texts)
    y = np.array([int(m.holds_value) for m, _ in messages] + [0] * len(others), dtype=float)
    groups = np.array([g for _, g in messages] + [g for _, g in others])
    y, groups = np.concatenate([y, y]), np.concatenate([groups, groups])
    # A message's two vectors, bare (an event without a speaker) and after a speaker's name.
    forms = [X[:len(messages)], X[len(y) // 2:len(y) // 2 + len(messages)]]

    # Ordinary dev texts, each fact phrasing with every value, that something could be a value in:
    # the threshold must not withhold them (a person's facts are what memory is for).
    ordinary = [(text, group) for text, group in dict.fromkeys(other_dev_texts(every_value=True))
                if may_withhold(text)]
    ordinary_vectors = embeddings.embed_texts([text for text, _ in ordinary])
    ordinary_groups = np.array([group for _, group in ordinary])
    ordinary_scores = np.full(len(ordinary), -np.inf)

    # Leave one set out: each set's dev messages scored, in both forms, by a model that never
    # saw that set; the threshold must serve both.
    scores = [{}, {}]
    sets = sorted({item.group for item in items})
    for group in sorted(set(sets) | set(ordinary_groups)):
        model = LogisticRegression(C=C, max_iter=5000).fit(X[groups != group], y[groups != group])
        mine = [i for i, (_, g) in enumerate(messages) if g == group]
        for form, vectors in zip(scores, forms):
            for i, logit in zip(mine, model.decision_function(vectors[mine]) if mine else []):
                form[id(messages[i][0])] = float(logit)
        if (theirs := ordinary_groups == group).any():
            ordinary_scores[theirs] = model.decision_function(ordinary_vectors[theirs])

    def played(threshold: float) -> tuple[int, int]:
        both = [outcome(items, form, threshold) for form in scores]
        return sum(s for s, _ in both), sum(r for _, r in both)

    rules_stored, rules_refused = played(float("inf"))
    lookalikes = sum(not item.credential for item in items)
    budget = rules_refused + LOOKALIKE_SHARE * 2 * lookalikes
    ordinary_budget = ORDINARY_SHARE * len(ordinary_scores)
    threshold = min((float(t) for t in np.arange(-3.0, 8.0, 0.05) if played(t)[1] <= budget
                     and (ordinary_scores >= t).sum() <= ordinary_budget), default=8.0)
    stored, refused = played(threshold)
    ordinary_withheld = int((ordinary_scores >= threshold).sum())
    for probability in (0.4, 0.5, 0.6, 0.7, 0.8, 0.9):  # the trade around it, for the record
        logit = float(np.log(probability / (1 - probability)))
        print(f"  at {probability:.2f}: stored / refused {played(logit)}, ordinary withheld "
              f"{int((ordinary_scores >= logit).sum())} of {len(ordinary_scores)}")

    model = LogisticRegression(C=C, max_iter=5000).fit(X, y)
    probability = float(1 / (1 + np.exp(-threshold)))
    credentials = sum(item.credential for item in items)
    OUT.write_text(json.dumps({
        "embedding_version": embeddings.EMBEDDING_VERSION,
        "threshold": round(probability, 4),
        "bias": float(model.intercept_[0]),
        "weights": [round(float(w), 6) for w in model.coef_[0]],
        "trained_on": {"texts": len(texts), "credentials": int(y.sum()), "sets": sets + ["locomo"],
                       "split": "dev only; LoCoMo's tune conversations; messages the rules leave as they are"},
        "leave_one_set_out": {"credentials": credentials, "lookalikes": lookalikes,
                              "forms": ["bare", "after a speaker"],
                              "rules_alone": {"stored": rules_stored, "refused": rules_refused},
                              "with_classifier": {"stored": stored, "refused": refused},
                              "ordinary": {"texts": len(ordinary_scores), "withheld": ordinary_withheld}},
    }, indent=1) + "\n")
    print(f"{len(texts)} texts, {int(y.sum())} with a credential; threshold {probability:.3f}")
    print(f"leave one set out, {credentials} dev credentials / {lookalikes} look-alikes, each bare and after a "
          f"speaker's name: rules alone "
          f"{rules_stored} stored / {rules_refused} refused; with the classifier {stored} / {refused}")
    print(f"ordinary dev texts that could hold a value: {ordinary_withheld} of {len(ordinary_scores)} withheld")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
