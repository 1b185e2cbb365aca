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


def initial_status(*, memory_type: str) -> str:
    # A procedure changes how the agent acts: it waits for an admin's approval.
    if memory_type == Memory.Type.PROCEDURAL:
        return Memory.Status.PENDING_APPROVAL
    return Memory.Status.ACTIVE
