"""all-mpnet-base-v2 ONNX with ONNX Runtime dynamic int8 quantisation: size, 1-thread speed and
the blind dev plain scores (bench/embedder_scout.py must have exported var/scout/mpnet.onnx).

    .venv/bin/python bench/embedder_scout_int8.py
"""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import embedder_scout as es  # noqa: E402

INT8 = es.SCOUT / "mpnet-int8.onnx"


def main():
    if not INT8.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(str(es.MPNET_ONNX), str(INT8), weight_type=QuantType.QInt8)
    es.MPNET_ONNX = INT8
    convs = es.conversations(100, 0)
    short = [t for turns, _, _ in convs[:10] for t, *_ in turns][:400]
    enc = es.MPNetOnnx(1)
    ref = es.MPNet(1)
    from memoryapp.embedding_onnx import CHECK_SENTENCES
    a, b = ref.passages(CHECK_SENTENCES, 4), enc.passages(CHECK_SENTENCES, 4)
    print(f"int8 vs fp32 torch: worst cosine distance {float(1 - np.min((a * b).sum(1))):.4f}")
    b1, b32 = es.speed(enc, short)
    print(f"mpnet-int8 batch 1 {b1:.2f} ms  batch 32 {b32:.2f} ms/text  file {INT8.stat().st_size / 1e6:.0f} MB")
    hits = {}
    base = es.score_blind(convs, es.embed_blind(es.MiniLM(2), convs), hits=hits.setdefault("minilm", {}))
    enc2 = es.MPNetOnnx(2)
    res = es.score_blind(convs, es.embed_blind(enc2, convs), hits=hits.setdefault("int8", {}))
    print("\n".join(es.fmt_blind("minilm", base) + es.fmt_blind("mpnet-int8", res)))
    for k in es.KS:
        print(f"k={k}: int8 vs minilm +%d/-%d p=%.3f" % es.paired(hits["minilm"][k], hits["int8"][k]))


if __name__ == "__main__":
    main()
