"""Loader for the LoCoMo benchmark file (locomo10.json) plus the recall@k metric.

The data set is CC BY-NC and lives outside the project (../shared/data/locomo/locomo10.json
relative to the project root); it is read in place and never copied in. Set LOCOMO_PATH to
point elsewhere. See ../shared/data/README.md for the format and its quirks.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATH = PROJECT_ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"

# Fixed split so that tuning never looks at the conversations we report on.
TUNE_SPLIT = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
TEST_SPLIT = ["conv-44", "conv-47", "conv-48", "conv-49", "conv-50"]

# Category numbers as used in the JSON (not the order the paper lists them in).
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass
class Turn:
    dia_id: str  # "D<session>:<n>"
    session: int
    speaker: str
    text: str
    blip_caption: str | None
    occurred_at: datetime  # timezone-aware UTC


@dataclass
class Question:
    question: str
    answer: str | None  # category 5 carries `adversarial_answer`; the right output there is "not mentioned"
    category: int
    evidence: list[str]  # valid, normalised dia_ids, never empty


@dataclass
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def turn_text(turn: Turn) -> str:
    """The text we index for a turn: speaker, words and (for image turns) the caption."""
    s = f"{turn.speaker}: {turn.text}"
    if turn.blip_caption:
        s += f" [image: {turn.blip_caption}]"
    return s


def parse_session_date(s: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime (the file has no zone; we call it UTC)."""
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


_EVIDENCE_ID = re.compile(r"^D:?(\d+):(\d+)$")


def normalise_evidence(raw: list[str], valid_ids: set[str]) -> list[str]:
    """Clean the evidence list: some entries hold several ids ("D8:6; D9:17", "D9:1 D4:4"),
    some are malformed ("D:11:26", "D30:05", "D"). Keep only ids naming a real turn, in order,
    without duplicates."""
    out: list[str] = []
    for entry in raw:
        for tok in re.split(r"[;,\s]+", str(entry)):
            m = _EVIDENCE_ID.match(tok)
            if not m:
                continue
            dia_id = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia_id in valid_ids and dia_id not in out:
                out.append(dia_id)
    return out


def _session_numbers(conv: dict) -> list[int]:
    # Only keys `session_N` holding a list are sessions; conv-26 has extra date keys without one.
    nums = []
    for key, value in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(value, list):
            nums.append(int(m.group(1)))
    return sorted(nums)


def load_conversations(path: str | os.PathLike | None = None) -> list[Conversation]:
    path = Path(path or os.environ.get("LOCOMO_PATH") or DEFAULT_PATH)
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)

    conversations = []
    for sample in raw:
        c = sample["conversation"]
        conv = Conversation(sample["sample_id"], c["speaker_a"], c["speaker_b"])
        for n in _session_numbers(c):
            start = parse_session_date(c[f"session_{n}_date_time"])
            for i, t in enumerate(c[f"session_{n}"]):
                conv.turns.append(Turn(
                    dia_id=t["dia_id"],
                    session=n,
                    speaker=t["speaker"],
                    text=t["text"],
                    blip_caption=t.get("blip_caption") or None,
                    # Sessions only have a start time; a per-turn offset keeps turns ordered.
                    occurred_at=start + timedelta(seconds=i),
                ))
        valid_ids = {t.dia_id for t in conv.turns}
        for q in sample["qa"]:
            evidence = normalise_evidence(q.get("evidence", []), valid_ids)
            if not evidence:  # 4 open-domain questions have no usable evidence: unscorable, skip
                continue
            answer = q["answer"] if "answer" in q else q.get("adversarial_answer")
            conv.questions.append(Question(
                question=q["question"],
                answer=None if answer is None else str(answer),
                category=int(q["category"]),
                evidence=evidence,
            ))
        conversations.append(conv)
    return conversations


def recall_at_k(retrieved_dia_ids: list[str], evidence: list[str], k: int) -> float:
    """Fraction of the evidence ids among the first k distinct retrieved ids (LoCoMo's metric)."""
    top: list[str] = []
    for d in retrieved_dia_ids:
        if d not in top:
            top.append(d)
            if len(top) == k:
                break
    if not evidence:
        return 0.0
    return sum(1 for e in evidence if e in top) / len(evidence)
