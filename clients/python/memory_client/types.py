"""The agent API's JSON objects as TypedDicts: results stay plain dicts (as the service sent them,
extension fields included), typed for editors and type checkers."""
from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

MemoryType = Literal["semantic", "episodic", "procedural"]
MemoryStatus = Literal["active", "superseded", "expired", "pending_approval", "rejected", "candidate"]
SourceKind = Literal["user_explicit", "user", "assistant", "tool", "external", "system"]
Sensitivity = Literal["public", "internal", "personal", "special"]
Role = Literal["user", "assistant", "tool", "system"]
JobStatus = Literal["queued", "running", "succeeded", "failed"]


class Source(TypedDict):
    kind: SourceKind
    event_id: str | None


class IndexVersions(TypedDict):
    embedding: str
    extractor: str


class Memory(TypedDict):
    id: str
    subject: str
    memory_type: MemoryType
    namespace: str
    statement: str
    status: MemoryStatus
    source: Source
    evidence: list[str]
    confidence: float
    importance: float
    sensitivity: Sensitivity
    valid_from: str
    valid_to: str | None
    recorded_at: str
    supersedes: list[str]
    superseded_by: str | None
    derived_from: list[str]
    expires_at: str | None
    metadata: dict[str, Any]
    index_versions: IndexVersions
    # Extensions.
    key: NotRequired[str]
    flags: NotRequired[list[str]]
    trust: NotRequired[Literal["trusted", "untrusted"]]
    status_reason: NotRequired[str]
    proposal_for: NotRequired[str | None]


class ScoredMemory(Memory):
    score: float
    score_details: dict[str, Any]


class MemoryPage(TypedDict):
    results: list[Memory]
    next_cursor: str | None


class Event(TypedDict):
    """An event to append: `event_id`, `role` and `content` are required."""

    event_id: str
    role: Role
    content: str
    source: NotRequired[SourceKind]
    occurred_at: NotRequired[str]
    session_id: NotRequired[str]
    speaker: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


class AcceptedEvent(TypedDict):
    id: str
    event_id: str
    status: str
    duplicate: bool


class EventsAccepted(TypedDict):
    events: list[AcceptedEvent]
    job: str | None


class StoredEvent(TypedDict, total=False):
    id: str
    event_id: str
    role: Role
    source: dict[str, Any]
    content: str
    occurred_at: str
    recorded_at: str
    session_id: str
    speaker: str
    metadata: dict[str, Any]
    status: str


class History(TypedDict):
    versions: list[Memory]
    sources: list[StoredEvent]
    derived: list[Memory]


class JobProgress(TypedDict):
    done: int
    total: int


class Job(TypedDict):
    id: str
    kind: str
    status: JobStatus
    progress: JobProgress
    result: dict[str, Any] | None
    error: str | None
    created_at: str
    finished_at: str | None


class JobRef(TypedDict):
    job: str


class Context(TypedDict):
    context: str
    memories: list[ScoredMemory]
    tokens: int
    token_budget: NotRequired[int]
    nothing_relevant: NotRequired[bool]


class ConsoleLink(TypedDict):
    url: str
    expires_at: str


class Health(TypedDict, total=False):
    status: str
    database: Any
    broker: Any
    embedder: Any


class KeyInfo(TypedDict):
    prefix: str
    name: str
    subject: str | None


class NamespaceInfo(TypedDict):
    namespace: str
    memories: int
    last_recorded_at: str


class NamespacePage(TypedDict):
    namespaces: list[NamespaceInfo]
    next_cursor: str | None
