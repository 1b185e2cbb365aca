"""What the secret detector costs per event: redact_secrets over 1,000 chat turns.

    .venv/bin/python bench/secret_detector_cost.py

The turns are the dev split's small talk and harmless look-alikes of bench/data/blind_v1 (the
kind of text every event carries), repeated to 1,000. No database: the detector is pure Python
and runs on every event in the extraction worker.
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from memoryapp.safety import redact_secrets  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "blind_v1"
TURNS = 1000
ROUNDS = 5


def turns() -> list[str]:
    talk = [t["text"] for t in json.loads((DATA / "small_talk.json").read_text()) if t["split"] == "dev"]
    harmless = [t["text"] for t in json.loads((DATA / "secrets.json").read_text())["harmless"] if t["split"] == "dev"]
    pool = talk + harmless
    return [pool[i % len(pool)] for i in range(TURNS)]


def main() -> None:
    texts = turns()
    for text in texts[:50]:
        redact_secrets(text)  # compile and warm the caches once
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time()
        for text in texts:
            redact_secrets(text)
        best = min(best, time.process_time() - started)
    chars = sum(len(t) for t in texts) / len(texts)
    print(f"{TURNS} turns (mean {chars:.0f} characters): {best * 1000:.1f} ms, "
          f"{best * 1000 / TURNS:.3f} ms per turn (best of {ROUNDS}, CPU time)")


if __name__ == "__main__":
    main()
