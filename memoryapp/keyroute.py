"""Which stored attribute a query asks about, from its meaning rather than its words.

Extraction files durable facts under normalised keys (memoryapp/extraction/keys.py). A question
often names the attribute in words the fact never uses ("What does the user do for a living?"
against "Job / profession: The user works as a pilot."), and lexical search can even prefer a
fact sharing a stem by accident ("living" / "lives"). So the query's embedding is compared with
a short description of every key; when one key is clearly the best match, retrieval gives the
memories filed under it a boost. The descriptions are embedded once per process.
"""
import threading

import numpy as np

from memoryapp import embeddings
from memoryapp.extraction.keys import key_descriptions

# A query asks about a key when it is close to that key's description (measured with
# all-MiniLM-L6-v2: questions about an attribute score 0.64-0.84 on its description; unrelated
# questions, LoCoMo's included, stay under 0.5). Keys nearly as close as the best share the
# boost in proportion ("favourite food" is also near "favourite cuisine"); beyond BAND below
# the best, none.
MIN_SIMILARITY = 0.55
BAND = 0.12

_lock = threading.Lock()
_table: tuple[list[str], np.ndarray] | None = None


def _descriptions() -> tuple[list[str], np.ndarray]:
    global _table
    with _lock:
        if _table is None:
            described = key_descriptions()
            keys = list(described)
            _table = (keys, embeddings.embed_texts([described[k] for k in keys]))
        return _table


def warm_up() -> None:
    _descriptions()


def keys_for_query(query_embedding: np.ndarray) -> tuple[tuple[str, float], ...]:
    """(key, weight in (0, 1]) for the keys the query asks about, best first; empty when none.
    A key ending in ":" stands for its family ("user:allergy:" for every allergy)."""
    keys, vectors = _descriptions()
    similarity = vectors @ np.asarray(query_embedding, dtype=np.float32)
    best = float(similarity.max())
    if best < MIN_SIMILARITY:
        return ()
    weights = 1 - (best - similarity) / BAND
    order = [i for i in np.argsort(-weights) if weights[i] > 0]
    return tuple((keys[i], round(float(weights[i]), 4)) for i in order)


def key_weight(memory_key: str, routed: dict[str, float]) -> float:
    """How strongly the query asks about the key a memory is filed under (0 when not at all)."""
    if not memory_key or not routed:
        return 0.0
    weight = routed.get(memory_key, 0.0)
    family = memory_key.rsplit(":", 1)[0] + ":"
    return max(weight, routed.get(family, 0.0))
