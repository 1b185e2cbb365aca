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

from memoryapp.safety import ends_with_credential_word, mentions_credential, redact_secrets  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "blind_v1"
TURNS = 1000
ROUNDS = 5


def turns() -> list[str]:
    talk = [t["text"] for t in json.loads((DATA / "small_talk.json").read_text()) if t["split"] == "dev"]
    harmless = [t["text"] for t in json.loads((DATA / "secrets.json").read_text())["harmless"] if t["split"] == "dev"]
    pool = talk + harmless
    return [pool[i % len(pool)] for i in range(TURNS)]


def _event(text: str, previous: str) -> None:
    """What extraction runs per event: the checks of the sender's previous message, then the
    redaction of this one."""
    continues = ends_with_credential_word(previous)
    carried = not continues and mentions_credential(previous)
    redact_secrets(text, continues=continues, carried=carried)


def _best(run) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    texts = turns()
    for text in texts[:50]:
        redact_secrets(text)  # compile and warm the caches once
    chars = sum(len(t) for t in texts) / len(texts)
    alone = _best(lambda: [redact_secrets(text) for text in texts])
    per_event = _best(lambda: [_event(text, texts[i - 1]) for i, text in enumerate(texts)])
    print(f"{TURNS} turns (mean {chars:.0f} characters), best of {ROUNDS}, CPU time:")
    print(f"  redact_secrets: {alone * 1000:.1f} ms, {alone * 1000 / TURNS:.3f} ms per turn")
    print(f"  per event in extraction (with the previous message's checks): {per_event * 1000:.1f} ms, "
          f"{per_event * 1000 / TURNS:.3f} ms per turn")


if __name__ == "__main__":
    main()
