"""The embedder: ONNX Runtime gives torch's vectors, and the per-process cache gives the model's."""
import numpy as np

from memoryapp import embedding_onnx, embeddings

TEXTS = [
    "I am vegetarian.", "where does the user live?", "",
    "Caroline: I went to the support group yesterday and it was so powerful, everyone listened. " * 8,
    "Je préfère le thé au café, surtout le matin.",
]


def test_onnx_runtime_vectors_match_torch_within_tolerance():
    onnx = embedding_onnx.load(1, embeddings._torch_encode)
    reference = embeddings._torch_encode(TEXTS)
    # Batched with padding (mixed lengths in one batch) and one by one: both must match.
    for got in (onnx.encode(TEXTS, batch_size=8), np.vstack([onnx.encode([t], batch_size=1) for t in TEXTS])):
        assert got.shape == (len(TEXTS), embeddings.DIMENSIONS)
        cosine = np.sum(reference * got, axis=1)
        assert np.all(1 - cosine <= embedding_onnx.COSINE_TOLERANCE), cosine
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_service_embeds_with_onnx_runtime_by_default():
    embeddings.embed_texts(["warm up"])
    assert embeddings.embedder_backend() == "onnxruntime"


def test_cached_text_gives_the_same_vector_and_callers_cannot_change_the_cache():
    text = "a sentence only this test embeds, twice"
    first = embeddings.embed_text(text, partition=None)
    first[:] = 0  # a caller that changes its copy must not change what the next caller gets
    second = embeddings.embed_text(text, partition=None)
    fresh = embeddings.embed_texts([text])[0]
    assert np.array_equal(second, fresh)


def test_cache_keeps_at_most_its_size(settings):
    settings.MEMORY_EMBEDDING_CACHE_SIZE = 3
    for i in range(10):
        embeddings.embed_text(f"cache bound test {i}", partition=None)
    assert len(embeddings._cache) <= 3
    # Keyed by a digest: the cache never holds a person's words.
    assert all(isinstance(key, bytes) and len(key) == 16 for key in embeddings._cache)


def test_a_cached_vector_is_dropped_once_its_time_is_up(monkeypatch, settings):
    settings.MEMORY_EMBEDDING_CACHE_SIZE = 100
    embeddings._cache.clear()
    clock = [1000.0]
    monkeypatch.setattr(embeddings.time, "monotonic", lambda: clock[0])
    embeddings.embed_text("the user rides a Brompton", partition=None)
    assert len(embeddings._cache) == 1
    clock[0] += embeddings.CACHE_SECONDS + 1
    embeddings.embed_text("something else entirely", partition=None)
    assert len(embeddings._cache) == 1  # the first text's vector is gone, not merely unused


def test_tenants_do_not_share_cached_vectors(monkeypatch, settings):
    # A hit is faster than a miss: one tenant must not learn by timing what another embedded.
    settings.MEMORY_EMBEDDING_CACHE_SIZE = 100
    embeddings._cache.clear()
    computed = []
    real = embeddings.embed_texts
    monkeypatch.setattr(embeddings, "embed_texts", lambda texts, **kw: computed.append(list(texts)) or real(texts, **kw))
    first = embeddings.embed_text("where does the user bank?", partition=1)
    embeddings.embed_text("where does the user bank?", partition=1)
    other = embeddings.embed_text("where does the user bank?", partition=2)
    assert len(computed) == 2  # tenant 1's second ask was a hit; tenant 2's first ask was not
    assert np.array_equal(first, other)
