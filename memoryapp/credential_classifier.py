"""A second opinion on credentials, from what a message means rather than how it is written.

The rules in memoryapp/safety.py find credentials by form: a credential word near a value shaped
like one. What they miss is a credential described in words ("what i type after my email on the
nursery booking site is Quince.Harbour.62"), given in parts, or answering a security question.
Every message is embedded anyway (its episode's vector), so a logistic regression over that
vector asks, at the cost of one dot product, whether the message gives a credential away.

Where the rules found nothing and this says yes, the whole message is withheld as
`[redacted credential_suspected]`: it cannot tell where the value is, and a message that hands
over a credential is worth less to memory than the credential is to a thief.

Only events (chat) are judged this way. An agent's explicit write is a statement about the
person, and statements about credentials ("Alice's locker code hint is the blue door") read as
credentials to it; those are left to the rules.

The weights (credential_classifier.json) come from scripts/train_credential_classifier.py, on
the dev splits of the blind sets and LoCoMo's tune conversations, and only on the messages it is
asked about (those the rules leave as they are); they belong to one embedding model. With
another model, or with MEMORY_CREDENTIAL_CLASSIFIER off, nothing is suspected and the rules alone
decide, as before.
"""
from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from memoryapp.credentials import NUMBER_WORDS, PHONETIC_LETTERS, QUOTES, names_secrets_kept_elsewhere
from memoryapp.safety import holds_ciphertext

logger = logging.getLogger(__name__)

WEIGHTS = Path(__file__).with_name("credential_classifier.json")
KIND = "credential_suspected"
MARKER = f"[redacted {KIND}]"

# The classifier reads what a message is about more than what it holds: "my login name for work
# is my first initial and surname" is about signing in and gives nothing away. A message is
# withheld only if something in it could be a value: a digit, a capital letter inside a word or
# after a sentence's first word, all capitals, a symbol inside a word, a quoted span, digits or
# letters read out (two in a row, in the languages the rules read), characters spaced out, or
# anything after a colon.
_QUOTES = "".join(sorted(set(QUOTES) | set(QUOTES.values()))) + "`"
_VALUE_CANDIDATE = re.compile(
    r"\d|[^\W\d_][A-Z]|\b[A-Z]{3,}\b|(?<=[^\s.!?])\s+(?!I\b)[A-Z]|\w[!@#$%^&*_~+=]\w"
    rf"|[{_QUOTES}][^{_QUOTES}]{{2,}}[{_QUOTES}]|(?:(?<!\S)\S[\s,·-]+){{3}}\S(?!\S)|:\s*\S"
)
_READ_OUT = frozenset(NUMBER_WORDS) | PHONETIC_LETTERS


def could_hold_value(text: str) -> bool:
    """Whether anything in `text` could be a credential's value (see _VALUE_CANDIDATE)."""
    if _VALUE_CANDIDATE.search(text):
        return True
    words = [word.strip(".,;:!?\"'()").lower() for word in text.split()]
    return any(a in _READ_OUT and b in _READ_OUT for a, b in zip(words, words[1:]))


def may_withhold(content: str) -> bool:
    """Whether a message the rules found nothing in may be withheld on the classifier's word:
    something in it could be a value, and it neither points at secrets kept elsewhere nor holds
    ciphertext (values the rules let through on purpose). (What the rules redacted is theirs:
    their marker would skew the vector.) The training script asks the same of its data."""
    return could_hold_value(content) and not names_secrets_kept_elsewhere(content) and not holds_ciphertext(content)


@lru_cache(maxsize=1)
def _model() -> tuple[np.ndarray, float, float] | None:
    """(weights, bias, logit threshold), or None when the classifier is off or was trained for
    another embedding model."""
    from django.conf import settings

    from memoryapp.embeddings import DIMENSIONS, EMBEDDING_VERSION

    if not settings.MEMORY_CREDENTIAL_CLASSIFIER:
        return None
    # Anything wrong with the weights leaves the rules alone in charge, loudly: an exception
    # here would fail every event of every job instead.
    try:
        saved = json.loads(WEIGHTS.read_text())
        weights = np.asarray(saved["weights"], dtype=np.float32)
        bias, trained_for = float(saved["bias"]), saved["embedding_version"]
        probability = float(settings.MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD or saved["threshold"])
        if weights.shape != (DIMENSIONS,) or not 0 < probability < 1:
            raise ValueError(f"{weights.shape[0] if weights.ndim else 0} weights, threshold {probability}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.error("the credential classifier cannot be loaded from %s (%s): the rules alone look for secrets",
                     WEIGHTS, exc)
        return None
    if trained_for != EMBEDDING_VERSION:
        logger.error("the credential classifier was trained for %s, not %s: the rules alone look for secrets",
                     trained_for, EMBEDDING_VERSION)
        return None
    # Compared as a logit: one dot product and no exponent per message.
    return weights, bias, float(np.log(probability / (1 - probability)))


def _logit(weights: np.ndarray, bias: float, vector) -> float:
    if hasattr(vector, "to_numpy"):  # a pgvector Vector (embeddings.StoredVector)
        vector = vector.to_numpy()
    return float(np.dot(weights, np.asarray(vector, dtype=np.float32))) + bias


def disclosure_probability(vector) -> float | None:
    """How likely the text embedded as `vector` gives a credential away; None when off."""
    model = _model()
    if model is None:
        return None
    weights, bias, _ = model
    return float(1 / (1 + np.exp(-_logit(weights, bias, vector))))


def suspects_credential(vector) -> bool:
    """Whether the text embedded as `vector` most likely gives a credential away."""
    model = _model()
    if model is None:
        return False
    weights, bias, threshold = model
    return _logit(weights, bias, vector) >= threshold
