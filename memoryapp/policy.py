"""The write policy's rules that every door shares. Secret detection and instruction detection
live in memoryapp/safety.py; extraction rules in memoryapp/extraction/."""
from memoryapp.models import Memory, SourceKind, UNTRUSTED_SOURCES

# Who may replace whose fact: an explicit user statement outranks what the user said in
# passing, which outranks tools and the assistant's own inferences.
SOURCE_AUTHORITY = {
    SourceKind.USER_EXPLICIT: 4,
    SourceKind.SYSTEM: 3,
    SourceKind.USER: 3,
    SourceKind.TOOL: 2,
    SourceKind.ASSISTANT: 1,
    SourceKind.EXTERNAL: 0,
}

DEFAULT_SOURCE_FOR_ROLE = {
    "user": SourceKind.USER,
    "assistant": SourceKind.ASSISTANT,
    "tool": SourceKind.TOOL,
    "system": SourceKind.SYSTEM,
}


def source_authority(source_kind: str) -> int:
    return SOURCE_AUTHORITY.get(source_kind, 0)


def may_supersede(*, old: Memory, new_source_kind: str) -> bool:
    return source_authority(new_source_kind) >= source_authority(old.source_kind)


def durable_types_allowed(source_kind: str) -> bool:
    """Untrusted content never becomes a semantic or procedural memory."""
    return source_kind not in UNTRUSTED_SOURCES


# What a model or a tool concluded about the person, as opposed to what the person said.
INFERRED_SOURCES = frozenset({SourceKind.ASSISTANT, SourceKind.TOOL})


def held_as_candidate(*, memory_type: str, source_kind: str, accept_inferences: bool) -> bool:
    """An inferred fact waits for the person's confirmation unless the tenant accepts inferences.
    An episode is the record of what was said (labelled with its source), not a claimed fact, so it
    is kept current; a procedure waits for an admin's approval instead."""
    return (memory_type == Memory.Type.SEMANTIC and source_kind in INFERRED_SOURCES
            and not accept_inferences)


def initial_status(*, memory_type: str, source_kind: str = "", accept_inferences: bool = True) -> str:
    # A procedure changes how the agent acts: it waits for an admin's approval.
    if memory_type == Memory.Type.PROCEDURAL:
        return Memory.Status.PENDING_APPROVAL
    if held_as_candidate(memory_type=memory_type, source_kind=source_kind, accept_inferences=accept_inferences):
        return Memory.Status.CANDIDATE
    return Memory.Status.ACTIVE


def source_allowed(*, source_kind: str, max_source: str) -> bool:
    """Whether a key capped at `max_source` may claim `source_kind`: the cap itself, or any source
    of strictly lower authority (so a key capped at `user` may not claim `system`, of equal rank,
    nor the reverse)."""
    return source_kind == max_source or source_authority(source_kind) < source_authority(max_source)


def weakest_source(source_kinds) -> str:
    """The least trusted of several sources: what a memory derived from them may claim."""
    return min(source_kinds, key=source_authority)
