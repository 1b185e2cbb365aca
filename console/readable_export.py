"""The human-readable export: the same stored file as the JSON download (so both say the same
thing, as of the same moment), read back and laid out as what is remembered, each memory with
its earlier versions. Pure functions over the export document (docs/export-format.md)."""
import json
from dataclasses import dataclass, field
from datetime import datetime

from console.provenance import origin_of
from memoryapp.context import DATA_SOURCES, SELF_SOURCES, UNTRUSTED_FLAGS
from memoryapp.models import UNTRUSTED_SOURCES

SECTIONS = (
    ("current", "What is remembered now"),
    ("waiting", "Waiting for approval or for you to confirm"),
    ("quarantined", "Held back in quarantine (no agent sees it until an administrator decides)"),
    ("ended", "No longer current (expired, rejected, or a message a newer fact made out of date)"),
)
SECTION_OF = {"active": "current", "pending_approval": "waiting", "candidate": "waiting",
              "quarantined": "quarantined"}


@dataclass
class Version:
    statement: str
    status: str
    memory_type: str
    origin: str
    untrusted: bool
    said: datetime | None
    recorded: datetime | None
    valid_to: datetime | None


@dataclass
class Entry:
    current: Version
    earlier: list[Version] = field(default_factory=list)


def _time(value) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except (TypeError, ValueError):
        return None


def _untrusted(memory: dict) -> bool:
    # The rule agents are given (memoryapp.context.is_untrusted), on the exported fields.
    kind = (memory.get("source") or {}).get("kind", "")
    return kind in UNTRUSTED_SOURCES or kind in DATA_SOURCES or (
        kind not in SELF_SOURCES and bool(UNTRUSTED_FLAGS.intersection(memory.get("flags") or [])))


def _version(memory: dict, said: dict) -> Version:
    source = memory.get("source") or {}
    return Version(
        statement=memory.get("statement", ""), status=memory.get("status", ""),
        memory_type=memory.get("memory_type", ""), origin=origin_of(source.get("kind", "")),
        untrusted=_untrusted(memory),
        said=_time(said.get(source.get("event_id"))) or _time(memory.get("valid_from")),
        recorded=_time(memory.get("recorded_at")), valid_to=_time(memory.get("valid_to")),
    )


def readable_export(content: bytes) -> dict:
    """{"exported_at", "sections": [(title, [Entry])], "counts": {...}} from an export file.
    Each entry is a memory's latest version with its earlier versions (the supersession chain),
    oldest first."""
    document = json.loads(bytes(content).decode("utf-8"))
    memories = document.get("memories") or []
    said = {e.get("id"): e.get("occurred_at") for e in document.get("events") or []}
    by_id = {m.get("id"): m for m in memories}

    def version_of(m: dict) -> dict | None:
        # A message (episode) a newer fact made out of date is not a version of that fact.
        successor = by_id.get(m.get("superseded_by"))
        return successor if successor and successor.get("memory_type") == m.get("memory_type") else None

    earlier_of: dict = {}
    for m in memories:
        if version_of(m):
            earlier_of.setdefault(m["superseded_by"], []).append(m)
    sections: dict = {key: [] for key, _ in SECTIONS}
    for m in memories:
        if version_of(m):
            continue  # shown as an earlier version of what replaced it
        chain, frontier = [], [m]
        while frontier:
            older = [o for f in frontier for o in earlier_of.get(f.get("id"), []) if o not in chain]
            chain.extend(older)
            frontier = older
        chain.sort(key=lambda o: (o.get("valid_from") or "", o.get("recorded_at") or ""))
        entry = Entry(current=_version(m, said), earlier=[_version(o, said) for o in chain])
        sections[SECTION_OF.get(m.get("status"), "ended")].append(entry)
    return {
        "exported_at": _time(document.get("exported_at")),
        "sections": [(title, sections[key]) for key, title in SECTIONS if sections[key]],
        "counts": {"memories": len(memories), "messages": len(document.get("events") or []),
                   "log_entries": len(document.get("audit") or []), "reads": len(document.get("reads") or [])},
    }
