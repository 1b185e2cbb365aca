"""The contract's JSON objects, built from domain rows. Plain functions (rather than
ModelSerializers) so a search answer costs no per-field introspection; the output serializers
in api/schemas.py describe the same shapes for OpenAPI."""
from memoryapp.context import is_untrusted
from memoryapp.models import Event, Job, Memory


def iso(value):
    return value.isoformat() if value is not None else None


def _loaded(memory: Memory, name: str):
    """The rows of a relation (evidence, supersedes, derived_from) loaded with the memory, as both
    readers below load them, without the related manager Django makes to hand them over: ~40 µs
    each, three per memory, half of what rendering a memory cost. Unloaded, they are queried."""
    try:
        return memory._prefetched_objects_cache[name]
    except (AttributeError, KeyError):
        return getattr(memory, name).all()


def memory_json(memory: Memory) -> dict:
    """Expects a row from memory_queryset() or a search hit from memories_for_hits() (relations
    loaded either way: this reads no more rows)."""
    source_event = memory.source_event
    return {
        "id": memory.public_id,
        "subject": memory.subject.external_id,
        "memory_type": memory.memory_type,
        "namespace": memory.namespace,
        "statement": memory.statement,
        "status": memory.status,
        "source": {"kind": memory.source_kind, "event_id": source_event.event_id if source_event else None},
        "evidence": [e.event_id for e in _loaded(memory, "evidence")],
        "confidence": memory.confidence,
        "importance": memory.importance,
        "sensitivity": memory.sensitivity,
        "valid_from": iso(memory.valid_from),
        "valid_to": iso(memory.valid_to),
        "recorded_at": iso(memory.recorded_at),
        "supersedes": [m.public_id for m in _loaded(memory, "supersedes")],
        "superseded_by": memory.superseded_by.public_id if memory.superseded_by_id else None,
        "derived_from": [m.public_id for m in _loaded(memory, "derived_from")],
        "expires_at": iso(memory.expires_at),
        "metadata": memory.metadata,
        "index_versions": {"embedding": memory.embedding_version, "extractor": memory.extractor_version},
        # Extensions: the write policy's flags, and whether the content came from outside.
        "key": memory.key,
        "flags": list(memory.flags),
        "trust": "untrusted" if is_untrusted(memory) else "trusted",
        "status_reason": memory.status_reason,
        "proposal_for": f"mem_{memory.proposal_for_id.hex}" if memory.proposal_for_id else None,
    }


def event_json(event: Event) -> dict:
    return {
        "id": event.public_id,
        "event_id": event.event_id,
        "role": event.role,
        "source": {"kind": event.source_kind},
        "content": event.content,
        "occurred_at": iso(event.occurred_at),
        "recorded_at": iso(event.recorded_at),
        "session_id": event.session_id,
        "speaker": event.speaker,
        "metadata": event.metadata,
        "status": event.status,
        "redacted": event.redacted,
        "quarantined": event.quarantined,
        "flags": list(event.flags),
        "trust": "untrusted" if event.is_untrusted else "trusted",
    }


def job_json(job: Job) -> dict:
    return {
        "id": job.public_id,
        "kind": job.kind,
        "status": job.status,
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "result": job.result,
        "error": job.error or None,
        "created_at": iso(job.created_at),
        "finished_at": iso(job.finished_at),
    }
