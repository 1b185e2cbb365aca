"""Our memories as mem0 Platform objects (v1.1 format: `id`, `memory`, entity ids, `metadata`,
`score`, …), with our own fields kept beside them (`memory_type`, `status`, `source`)."""
from api.mem0.scope import LABELS_KEY
from api.representations import iso
from memoryapp.models import Memory
from memoryapp.retrieval import WEIGHTS

# A search score is a relevance in [0, 1] plus small recency, importance and confidence terms;
# dividing by the most it can reach keeps mem0's scale (0 to 1) and our order.
SCORE_SCALE = 1.0 + sum(WEIGHTS.values())
ENDED = {Memory.Status.EXPIRED, Memory.Status.REJECTED}


def labels_and_metadata(memory: Memory, events: dict) -> tuple[dict, dict]:
    """The mem0 labels and the caller's own metadata: on the memory when it was written through
    this door (infer=false, or an update), else on the event it was drawn from (infer=true)."""
    own = memory.metadata if isinstance(memory.metadata, dict) else {}
    if LABELS_KEY in own:
        return _labels(own.get(LABELS_KEY)), {k: v for k, v in own.items() if k != LABELS_KEY}
    event_md = events.get(memory.source_event_id) if memory.source_event_id else None
    if isinstance(event_md, dict) and LABELS_KEY in event_md:
        return _labels(event_md.get(LABELS_KEY)), {k: v for k, v in event_md.items() if k != LABELS_KEY}
    return {}, own


def _labels(value) -> dict:
    # Written through another door (v1, MCP), metadata["mem0"] may be anything.
    return value if isinstance(value, dict) else {}


def entity_ids(subject_ref: str, labels: dict) -> dict:
    if subject_ref.startswith("agent:"):
        user_id, agent_id = None, subject_ref[len("agent:"):]
    else:
        user_id, agent_id = subject_ref, labels.get("agent_id")
    return {"user_id": user_id, "agent_id": agent_id, "run_id": labels.get("run_id"), "app_id": labels.get("app_id")}


def mem0_memory(memory: Memory, events: dict) -> dict:
    labels, metadata = labels_and_metadata(memory, events)
    return {
        "id": memory.public_id,
        "memory": memory.statement,
        **entity_ids(memory.subject.external_id, labels),
        "metadata": metadata or None,
        "categories": [],
        "immutable": False,
        "hash": memory.content_hash,
        "created_at": iso(memory.recorded_at),
        "updated_at": iso(memory.recorded_at),
        "expiration_date": memory.expires_at.date().isoformat() if memory.expires_at else None,
        # Ours, beside mem0's fields.
        "memory_type": memory.memory_type,
        "status": memory.status,
        "source": memory.source_kind,
        "namespace": memory.namespace,
    }


def mem0_score(score: float) -> float:
    return round(min(1.0, max(0.0, score / SCORE_SCALE)), 6)


def mem0_history(versions: list[Memory], current: Memory, events: dict) -> list[dict]:
    """Our versions, oldest first, as mem0 history entries: the first ADD, each later version an
    UPDATE of the one before, and a DELETE when the chain ended (expired or rejected)."""
    entries = []
    previous = None
    for version in versions:
        labels, metadata = labels_and_metadata(version, events)
        entries.append({
            "id": version.public_id,
            "memory_id": current.public_id,
            "old_memory": previous.statement if previous else None,
            "new_memory": version.statement,
            "event": "UPDATE" if previous else "ADD",
            **entity_ids(version.subject.external_id, labels),
            "metadata": metadata or None,
            "categories": [],
            "input": [],
            "is_deleted": False,
            "created_at": iso(version.recorded_at),
            "updated_at": iso(version.recorded_at),
            "status": version.status,
        })
        previous = version
    if previous is not None and previous.status in ENDED:
        labels, metadata = labels_and_metadata(previous, events)
        ended_at = previous.valid_to or previous.expires_at or previous.recorded_at
        entries.append({
            "id": previous.public_id, "memory_id": current.public_id, "old_memory": previous.statement,
            "new_memory": None, "event": "DELETE", **entity_ids(previous.subject.external_id, labels),
            "metadata": metadata or None, "categories": [], "input": [], "is_deleted": True,
            "created_at": iso(ended_at), "updated_at": iso(ended_at), "status": previous.status,
        })
    return entries
