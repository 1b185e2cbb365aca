"""Consolidation: merge near-duplicate semantic memories, and derive one episodic summary per
conversation session. Both are derived data: regenerable, linked to their sources by lineage,
and they never delete a source (merged sources are superseded, still in history).

- Merge: active semantic memories of one subject and namespace whose embeddings have cosine
  similarity >= MERGE_THRESHOLD are clustered (transitively). Each cluster becomes one new memory
  carrying the statement of its most authoritative member (explicit beats extracted, then
  confidence, then the newest), the union of their evidence and the sum of their evidence
  counts, `derived_from` every member. It holds from the earliest member's `valid_from`; the
  members become `superseded` (status_reason "consolidated") with an empty validity interval,
  so an as-of query in the past finds the merged memory, never the duplicates.
- Session summaries: for each session id, a deterministic offline summary (the first sentence
  of up to SUMMARY_SENTENCES of the session's messages, dated, with the session id), evidence
  = the session's events, derived_from = the memories extracted from them. A rerun keeps an
  unchanged summary and replaces a changed one; a summary whose session is gone is removed.
"""
import re
from collections import defaultdict

import numpy as np
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.models import Event, Job, Memory, MemoryLineage, Subject, Tenant, UNTRUSTED_SOURCES
from memoryapp.policy import source_authority, weakest_source
from memoryapp.safety import looks_like_instruction, redact_secrets
from memoryapp.selectors.memories import subject_get
from memoryapp.services.audit import audit_record
from memoryapp.services.jobs import job_create, job_progress
from memoryapp.services.memories import MemoryDraft, _new_memory, content_hash, memory_snapshot
from memoryapp.tenancy import tenant_activate

MERGE_THRESHOLD = 0.92
SUMMARY_SENTENCES = 3
SUMMARY_SENTENCE_CHARS = 200
SUMMARY_KIND = "session_summary"
SUMMARY_NAMESPACE = "summary/session"
SUMMARY_GENERATOR = "session-summary-v1"
WORKER = Actor("worker", "consolidation")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
UNTRUSTED_EVENT_FLAGS = frozenset({"untrusted", "instruction_like"})


def consolidation_request(*, tenant: Tenant, subject_ref: str, actor: Actor) -> Job:
    """Consolidate one subject now (on demand). A missing subject, or one being erased, is a 404."""
    with transaction.atomic():
        subject_get(tenant=tenant, external_id=subject_ref)
        job = job_create(tenant=tenant, kind=Job.Kind.CONSOLIDATION, subject_ref=subject_ref, actor=str(actor))
        audit_record(tenant=tenant, actor=actor, action="consolidation_requested", subject_ref=subject_ref,
                     target=job.public_id)
    return job


def consolidation_sweep() -> int:
    """Nightly: one consolidation job per active subject of every tenant, unless one is already
    waiting or running for it. Returns how many jobs were created."""
    created = 0
    for tenant in Tenant.objects.all():
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            busy = set(
                Job.objects.filter(tenant=tenant, kind=Job.Kind.CONSOLIDATION,
                                   status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
                .values_list("subject_ref", flat=True)
            )
            refs = Subject.objects.filter(tenant=tenant, status=Subject.Status.ACTIVE).values_list(
                "external_id", flat=True
            )
            for subject_ref in refs:
                if subject_ref not in busy:
                    job_create(tenant=tenant, kind=Job.Kind.CONSOLIDATION, subject_ref=subject_ref,
                               actor=str(WORKER))
                    created += 1
    return created


def consolidation_job_run(*, tenant: Tenant, job: Job) -> dict:
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = Subject.objects.filter(tenant=tenant, external_id=job.subject_ref,
                                         status=Subject.Status.ACTIVE).first()
    if subject is None:
        return {"merged_groups": 0, "merged_sources": 0, "summaries_created": 0, "summaries_kept": 0,
                "summaries_removed": 0, "skipped": "subject_missing_or_erasing"}
    job_progress(job_id=job.id, done=0, total=2)
    merged = consolidation_merge(tenant=tenant, subject=subject)
    job_progress(job_id=job.id, done=1)
    summaries = consolidation_summarise(tenant=tenant, subject=subject)
    job_progress(job_id=job.id, done=2)
    return {**merged, **summaries}


# --- near-duplicate merge ------------------------------------------------------------------

def near_duplicate_groups(vectors: np.ndarray, threshold: float = MERGE_THRESHOLD) -> list[list[int]]:
    """Indices clustered transitively by cosine >= threshold (rows are unit vectors). Compares
    in blocks so a capped subject (thousands of rows) never needs an n x n matrix at once."""
    n = len(vectors)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for start in range(0, n, 512):
        sims = vectors[start:start + 512] @ vectors.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i = start + r
            if c > i:
                a, b = find(i), find(c)
                if a != b:
                    parent[b] = a
    groups = defaultdict(list)
    for i in range(n):
        groups[find(i)].append(i)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def _same_attribute(members) -> list[list[Memory]]:
    """A group of near-duplicates, split so that memories filed under different keys are never
    merged: each key is its own attribute (a key-value client such as the LangGraph store may
    hold the same text under two keys, and merging would take one of them away). Unkeyed
    memories join the one key of the group, or stay among themselves when there are several."""
    members = list(members)
    keys = {m.key for m in members if m.key}
    if len(keys) <= 1:
        return [members]
    by_key = defaultdict(list)
    for m in members:
        by_key[m.key].append(m)
    return [part for part in by_key.values() if len(part) > 1]


def _best(members: list[Memory]) -> Memory:
    return max(members, key=lambda m: (source_authority(m.source_kind), m.confidence, m.valid_from, m.recorded_at))


def consolidation_merge(*, tenant: Tenant, subject: Subject) -> dict:
    """Merge near-duplicates of one subject, one namespace at a time, each in its own
    transaction that locks the subject (the writer lock memory_write takes too)."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        namespaces = list(
            Memory.objects.filter(tenant=tenant, subject=subject, memory_type=Memory.Type.SEMANTIC,
                                  status=Memory.Status.ACTIVE, erasing=False)
            .values_list("namespace", flat=True).distinct()
        )
    groups_merged = sources_merged = 0
    for namespace in namespaces:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            Subject.objects.select_for_update().filter(pk=subject.pk).first()
            candidates = list(
                Memory.objects.filter(
                    tenant=tenant, subject=subject, namespace=namespace, memory_type=Memory.Type.SEMANTIC,
                    status=Memory.Status.ACTIVE, erasing=False, embedding__isnull=False,
                    # Vectors of different models are not comparable.
                    embedding_version=embeddings.EMBEDDING_VERSION,
                )
                # Past its expiry it is no longer a fact to reinforce; the forgetting sweep retires it.
                .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
                .order_by("recorded_at", "id")
            )
            if len(candidates) < 2:
                continue
            vectors = np.array([np.asarray(m.embedding, dtype=np.float32) for m in candidates])
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            for group in near_duplicate_groups(vectors):
                for members in _same_attribute(candidates[i] for i in group):
                    _merge(tenant=tenant, subject=subject, members=members)
                    groups_merged += 1
                    sources_merged += len(members)
    return {"merged_groups": groups_merged, "merged_sources": sources_merged}


def _merge(*, tenant: Tenant, subject: Subject, members: list[Memory]) -> Memory:
    best = _best(members)
    evidence = list(Event.objects.filter(tenant=tenant, evidence_links__memory__in=members).distinct())
    draft = MemoryDraft(
        statement=best.statement, memory_type=Memory.Type.SEMANTIC, namespace=best.namespace,
        # A derived memory is no more trusted, nor more certain, than its weakest source (seed 001 §12).
        source_kind=weakest_source(m.source_kind for m in members),
        key=best.key or next((m.key for m in members if m.key), ""),
        confidence=min(m.confidence for m in members), importance=max(m.importance for m in members),
        sensitivity=best.sensitivity, expires_at=best.expires_at,
        metadata={**best.metadata, "consolidated_from": len(members)},
        source_event=best.source_event, evidence=evidence, derived_from=members,
        extractor_version=best.extractor_version, status=Memory.Status.ACTIVE,
    )
    valid_from = min(m.valid_from for m in members)
    merged = _new_memory(tenant=tenant, subject=subject, draft=draft, embedding=best.embedding,
                         valid_from=valid_from)
    merged.evidence_count = sum(m.evidence_count for m in members)
    merged.embedding_version = best.embedding_version
    merged.save(update_fields=["evidence_count", "embedding_version"])
    MemoryLineage.objects.filter(tenant=tenant, derived=merged).update(kind="consolidated")
    for member in members:
        before = memory_snapshot(member)
        member.status = Memory.Status.SUPERSEDED
        member.status_reason = "consolidated"
        member.superseded_by = merged
        # An empty interval: the merged memory speaks for this one over all of its time.
        member.valid_to = member.valid_from
        member.save(update_fields=["status", "status_reason", "superseded_by", "valid_to"])
        audit_record(
            tenant=tenant, actor=WORKER, action="memory_superseded", subject_ref=subject.external_id,
            memory_id=member.id, before=before, after=memory_snapshot(member),
            details={"superseded_by": merged.public_id, "reason": "consolidated"},
        )
    audit_record(
        tenant=tenant, actor=WORKER, action="memory_consolidated", subject_ref=subject.external_id,
        memory_id=merged.id, after=memory_snapshot(merged),
        details={"derived_from": [m.public_id for m in members], "evidence_count": merged.evidence_count},
    )
    return merged


# --- session summaries ---------------------------------------------------------------------

def first_sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    if len(sentence) > SUMMARY_SENTENCE_CHARS:
        sentence = sentence[:SUMMARY_SENTENCE_CHARS - 1].rstrip() + "…"
    return sentence


def session_summary_text(session_id: str, events: list[Event]) -> str:
    """Deterministic: the same events always give the same text. The user's own messages come
    first (they carry what the session was about); the assistant's fill up to the limit."""
    ordered = sorted(events, key=lambda e: (e.occurred_at, e.seq))
    chosen = [e for e in ordered if e.role == Event.Role.USER] + [e for e in ordered if e.role != Event.Role.USER]
    sentences = []
    for event in chosen:
        sentence = first_sentence(redact_secrets(event.content)[0])
        if sentence and sentence not in sentences:
            sentences.append(sentence)
        if len(sentences) == SUMMARY_SENTENCES:
            break
    start, end = ordered[0].occurred_at.date(), ordered[-1].occurred_at.date()
    dated = start.isoformat() if start == end else f"{start.isoformat()} to {end.isoformat()}"
    return f"Session {session_id} ({dated}, {len(ordered)} messages): " + " ".join(sentences)


def consolidation_summarise(*, tenant: Tenant, subject: Subject) -> dict:
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        # Only what an agent may read: not quarantined, not being erased by a pending forget, and
        # no instruction-like text from anyone but the user, whether extraction has screened it
        # yet or an admin released it (a summary is read as the session's record, so it must not
        # repeat an injected instruction). Only processed events: until extraction has looked at
        # a message, the second opinion on credentials (credential_classifier) has not.
        events = [
            event for event in Event.objects.filter(
                tenant=tenant, subject=subject, quarantined=False, erasing=False, status=Event.Status.PROCESSED,
            ).exclude(session_id="").exclude(source_kind__in=list(UNTRUSTED_SOURCES)).order_by("seq")
            if event.role == Event.Role.USER or not (
                UNTRUSTED_EVENT_FLAGS.intersection(event.flags or []) or looks_like_instruction(event.content))
        ]
        existing = list(
            Memory.objects.filter(tenant=tenant, subject=subject, metadata__kind=SUMMARY_KIND, erasing=False)
            .prefetch_related("evidence")
        )
    sessions: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        sessions[event.session_id].append(event)
    wanted = {sid: session_summary_text(sid, evs) for sid, evs in sessions.items()}
    by_session = defaultdict(list)
    for memory in existing:
        by_session[memory.metadata.get("session_id", "")].append(memory)

    keep, stale, fresh = [], [], {}
    for sid, text in wanted.items():
        event_ids = {e.pk for e in sessions[sid]}
        current = [m for m in by_session.get(sid, [])
                   if m.content_hash == content_hash(text) and {e.pk for e in m.evidence.all()} == event_ids]
        if current:
            keep.append(current[0])
            stale += [m for m in by_session.get(sid, []) if m is not current[0]]
        else:
            fresh[sid] = text
            stale += by_session.get(sid, [])
    stale += [m for sid, ms in by_session.items() if sid not in wanted for m in ms]

    vectors = embeddings.embed_texts(list(fresh.values())) if fresh else []
    created = 0
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        Subject.objects.select_for_update().filter(pk=subject.pk).first()
        # Regenerable: an outdated summary is replaced, never kept beside its successor.
        # Its lineage and evidence links go with it; its sources stay.
        Memory.objects.filter(tenant=tenant, pk__in=[m.pk for m in stale], metadata__kind=SUMMARY_KIND).delete()
        if stale:
            audit_record(
                tenant=tenant, actor=WORKER, action="summaries_replaced", subject_ref=subject.external_id,
                details={"removed": [m.public_id for m in stale]},
            )
        for (sid, text), vector in zip(fresh.items(), vectors):
            session_events = sessions[sid]
            sources = list(
                Memory.objects.filter(tenant=tenant, subject=subject, erasing=False,
                                      evidence_links__event__in=session_events)
                .exclude(metadata__contains={"kind": SUMMARY_KIND}).exclude(status=Memory.Status.REJECTED).distinct()
            )
            ordered = sorted(session_events, key=lambda e: (e.occurred_at, e.seq))
            # It speaks for its weakest message or memory, never as "system" with full confidence.
            draft = MemoryDraft(
                statement=text, memory_type=Memory.Type.EPISODIC, namespace=SUMMARY_NAMESPACE,
                source_kind=weakest_source([e.source_kind for e in session_events] + [m.source_kind for m in sources]),
                key=f"session:{sid}", confidence=min((m.confidence for m in sources), default=1.0), importance=0.3,
                metadata={"kind": SUMMARY_KIND, "session_id": sid, "events": len(session_events),
                          "generator": SUMMARY_GENERATOR},
                evidence=session_events, derived_from=sources, extractor_version=SUMMARY_GENERATOR,
                status=Memory.Status.ACTIVE,
            )
            summary = _new_memory(tenant=tenant, subject=subject, draft=draft, embedding=vector,
                                  valid_from=ordered[0].occurred_at)
            MemoryLineage.objects.filter(tenant=tenant, derived=summary).update(kind="summary")
            summary.evidence_count = len(session_events)
            summary.save(update_fields=["evidence_count"])
            audit_record(
                tenant=tenant, actor=WORKER, action="summary_written", subject_ref=subject.external_id,
                memory_id=summary.id, after=memory_snapshot(summary),
                details={"session_id": sid, "events": len(session_events), "derived_from": len(sources)},
            )
            created += 1
    return {"summaries_created": created, "summaries_kept": len(keep), "summaries_removed": len(stale)}
