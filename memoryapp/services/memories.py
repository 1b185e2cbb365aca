"""Writing, superseding, correcting and forgetting memories. Each service is one complete state
change in one transaction, with its audit entry and its follow-up jobs."""
import functools
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import DatabaseError, transaction
from django.db.models import F, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound, PolicyRejected
from memoryapp.frames import ended_or_replaced, says_change
from memoryapp.models import Event, Job, Memory, MemoryEvidence, MemoryLineage, Subject, Tenant
from memoryapp.policy import durable_types_allowed, held_as_candidate, initial_status, source_authority
from memoryapp.safety import find_secrets, looks_like_instruction, text_values
from memoryapp.selectors.forget import memory_forget_plan
from memoryapp.selectors.memories import current_version
from memoryapp.services.audit import audit_record
from memoryapp.services.export import export_files_withdraw
from memoryapp.services.jobs import job_create
from memoryapp.services.tenants import subject_locked_for_write
from memoryapp.tenancy import tenant_activate

EXPLICIT_EXTRACTOR_VERSION = "explicit-v1"


def normalise_statement(statement: str) -> str:
    return re.sub(r"\s+", " ", statement.strip().lower()).rstrip(".!")


def content_hash(statement: str) -> str:
    return hashlib.sha256(normalise_statement(statement).encode()).hexdigest()


def fact_values(*, statement: str, metadata: dict | None) -> set[str]:
    """The normalised forms a keyed fact's value takes: the extracted value when there is one,
    and the whole statement. Two facts under one key state the same value when these meet."""
    values = {normalise_statement(statement)}
    value = (metadata or {}).get("value") if isinstance(metadata, dict) else None
    if isinstance(value, str) and value.strip():
        values.add(normalise_statement(value))
    return values


def memory_snapshot(memory: Memory) -> dict:
    """What the audit log keeps of a memory's state (blanked if the memory is erased)."""
    return {
        "statement": memory.statement,
        "memory_type": memory.memory_type,
        "namespace": memory.namespace,
        "status": memory.status,
        "key": memory.key,
        "source_kind": memory.source_kind,
        "confidence": memory.confidence,
        "valid_from": memory.valid_from,
        "valid_to": memory.valid_to,
    }


@dataclass
class MemoryDraft:
    """A memory about to be written: what the explicit-write API and the extractors produce."""

    statement: str
    memory_type: str = Memory.Type.SEMANTIC
    namespace: str = ""
    source_kind: str = "user_explicit"
    key: str = ""
    confidence: float = 1.0
    importance: float = 0.5
    sensitivity: str = Memory.Sensitivity.PERSONAL
    valid_from: datetime | None = None
    expires_at: datetime | None = None
    metadata: dict = field(default_factory=dict)
    flags: list = field(default_factory=list)
    source_event: Event | None = None
    evidence: list[Event] = field(default_factory=list)
    derived_from: list[Memory] = field(default_factory=list)
    extractor_version: str = EXPLICIT_EXTRACTOR_VERSION
    status: str | None = None
    status_reason: str = ""
    # A proposal (a procedure waiting for approval): the current memory it would replace.
    proposal_for: Memory | None = None
    # The draft is exactly the value of `key` (a key-value client such as the LangGraph store):
    # it reinforces an identical memory only under the same key with the same metadata, so two
    # keys holding the same text, or a changed metadata under one key, stay distinct values.
    exact_key: bool = False


@dataclass
class WriteResult:
    memory: Memory
    created: bool
    superseded: list[Memory] = field(default_factory=list)
    conflicts: list[Memory] = field(default_factory=list)


def policy_refusal(*, draft: MemoryDraft) -> tuple[str, dict] | None:
    """Why `draft` must never be remembered (reason, details), or None when it may be."""
    secrets_found = find_secrets(draft.statement)
    if secrets_found:
        return ("The statement contains a secret, which is never stored in memory.",
                {"secret_kinds": sorted({f.kind for f in secrets_found})})
    in_metadata = [f for text in text_values(draft.metadata) for f in find_secrets(text)]
    if in_metadata:
        return ("The metadata contains a secret, which is never stored in memory.",
                {"secret_kinds": sorted({f.kind for f in in_metadata}), "field": "metadata"})
    if draft.memory_type != Memory.Type.EPISODIC and not durable_types_allowed(draft.source_kind):
        return "Untrusted content cannot become a semantic or procedural memory.", {"source_kind": draft.source_kind}
    if draft.source_kind == "external" and looks_like_instruction(draft.statement):
        return "Instruction-like content from an untrusted source is not remembered.", {"flag": "instruction_like"}
    return None


def _refusal_details(reason: str, details: dict, draft: MemoryDraft) -> dict:
    return {"reason": reason, **details, "memory_type": draft.memory_type}


def policy_check(*, tenant: Tenant, subject_ref: str, draft: MemoryDraft, actor: Actor) -> None:
    """Refuse what must never be remembered. The refusal is audited (without the content) in
    a savepoint of its own that the raised PolicyRejected does not roll back: call this
    outside the atomic block of the write it guards."""
    refusal = policy_refusal(draft=draft)
    if refusal:
        reason, details = refusal
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            audit_record(
                tenant=tenant, actor=actor, action="policy_refused", subject_ref=subject_ref,
                details=_refusal_details(reason, details, draft),
            )
        raise PolicyRejected(reason, details)


def _link_evidence(*, tenant: Tenant, memory: Memory, events: list[Event]) -> int:
    links = [MemoryEvidence(tenant=tenant, memory=memory, event=e) for e in events if e is not None]
    created = MemoryEvidence.objects.bulk_create(links, ignore_conflicts=True)
    return len(created)


def _new_memory(*, tenant: Tenant, subject: Subject, draft: MemoryDraft, embedding: np.ndarray,
                valid_from: datetime) -> Memory:
    memory = Memory.objects.create(
        tenant=tenant,
        subject=subject,
        memory_type=draft.memory_type,
        namespace=draft.namespace,
        statement=draft.statement,
        key=draft.key,
        source_kind=draft.source_kind,
        source_event=draft.source_event,
        confidence=draft.confidence,
        importance=draft.importance,
        sensitivity=draft.sensitivity,
        valid_from=valid_from,
        expires_at=draft.expires_at,
        metadata=draft.metadata,
        flags=list(draft.flags),
        status=draft.status or initial_status(memory_type=draft.memory_type, source_kind=draft.source_kind,
                                              accept_inferences=tenant.accept_inferences),
        status_reason=draft.status_reason,
        proposal_for=draft.proposal_for,
        content_hash=content_hash(draft.statement),
        embedding=embedding,
        clause_embeddings=embeddings.clause_vectors(draft.statement),
        embedding_version=embeddings.EMBEDDING_VERSION,
        extractor_version=draft.extractor_version,
    )
    evidence = list(draft.evidence)
    if draft.source_event is not None and draft.source_event not in evidence:
        evidence.insert(0, draft.source_event)
    _link_evidence(tenant=tenant, memory=memory, events=evidence)
    if draft.derived_from:
        MemoryLineage.objects.bulk_create(
            [MemoryLineage(tenant=tenant, derived=memory, source=s) for s in draft.derived_from],
            ignore_conflicts=True,
        )
    return memory


def _this_memory(*, memory_id, tenant_id: int):
    """One memory by id, to update. The tenant is named again as `(SELECT %s)`, a parameter: for a
    tenant the statistics do not know yet (its first import), row-level security's tenant alone is
    estimated at about no rows, the primary key then ties with memory_scope_idx, and the scope
    index, when it won, read the tenant's whole range for one row
    (tests/workers/test_unknown_tenant_plans.py)."""
    return Memory.objects.filter(pk=memory_id, tenant_id=RawSQL("(SELECT %s::bigint)", [tenant_id]))


def _save_fields(memory: Memory, *fields: str) -> None:
    """memory.save(update_fields=fields), through _this_memory."""
    values = {name: getattr(memory, name) for name in fields}
    if not _this_memory(memory_id=memory.pk, tenant_id=memory.tenant_id).update(**values):
        raise DatabaseError("Save with update_fields did not affect any rows.")


def _retire(*, memory: Memory, successor: Memory, at: datetime) -> None:
    # A fact stops holding when its successor starts; never before it started itself. An
    # inference never held at all: its interval is empty, so as_of never returns it.
    memory.valid_to = memory.valid_from if memory.status == Memory.Status.CANDIDATE else max(at, memory.valid_from)
    memory.status = Memory.Status.SUPERSEDED
    memory.superseded_by = successor
    _save_fields(memory, "status", "valid_to", "superseded_by")


# Sources that are the subject speaking for themself.
SELF_SOURCES = frozenset({"user_explicit", "user"})


def replaces(*, old: Memory, draft: MemoryDraft) -> bool:
    """Whether a newer value for the same key replaces `old`, or both are kept as a conflict.

    - The subject restating a new value (user or user_explicit, either way round) is an update:
      people change jobs and cities; the newer word wins.
    - Otherwise the higher source authority wins (an explicit user correction outranks an
      agent's inference; an inference never silently overwrites what the user said).
    - Equal authority from different origins (another source kind, or another named speaker,
      e.g. two tools) is a conflict: both stay, flagged, for someone to confirm.
    """
    if old.source_kind in SELF_SOURCES and draft.source_kind in SELF_SOURCES:
        return True
    new_rank, old_rank = source_authority(draft.source_kind), source_authority(old.source_kind)
    if new_rank != old_rank:
        return new_rank > old_rank
    return old.source_kind == draft.source_kind and (old.metadata or {}).get("speaker", "") == (
        draft.metadata or {}
    ).get("speaker", "")


def outranks(*, old: Memory, draft: MemoryDraft) -> bool:
    """Whether `old` comes from a higher authority than `draft` and does not give way to it:
    then the draft may not replace it, shorten its history or flag it as a conflict."""
    return not replaces(old=old, draft=draft) and source_authority(old.source_kind) > source_authority(draft.source_kind)


def _outranked(memory: Memory, *, by: Memory) -> None:
    """Store `memory` as a claim that never held: a higher authority said otherwise. It stays
    in history (include_superseded shows it, with status_reason "outranked"), and as_of never
    returns it: its validity interval is empty."""
    memory.status = Memory.Status.SUPERSEDED
    memory.status_reason = "outranked"
    memory.valid_to = memory.valid_from
    memory.superseded_by = by
    _save_fields(memory, "status", "status_reason", "valid_to", "superseded_by")


def memory_write(
    *, tenant: Tenant, subject_ref: str, draft: MemoryDraft, actor: Actor,
    embedding: np.ndarray | None = None, supersede: list[Memory] | None = None,
) -> WriteResult:
    """Write one memory through the write policy.

    - A secret, or untrusted content as a durable type, is refused (PolicyRejected, audited).
    - An identical statement for the same subject and namespace reinforces the memory already
      there (its evidence grows) instead of adding a copy.
    - With a `key`, an active memory of the same subject, namespace and key but another value is
      superseded when replaces() says the new source may (the subject restating is an update;
      otherwise higher authority wins); otherwise both stay and are flagged as a conflict. A
      late-arriving older value becomes history and never replaces a newer one. `supersede`
      names further memories to retire explicitly.
    - With `draft.exact_key`, the identical statement is reinforced only under the same key with
      the same metadata (a key-value store's put).
    """
    policy_check(tenant=tenant, subject_ref=subject_ref, draft=draft, actor=actor)
    if embedding is None:
        # Embedded before the write transaction: the model's time should not hold row locks.
        embedding = embeddings.embed_text(draft.statement, partition=tenant.pk)
    return _memory_write(tenant=tenant, subject_ref=subject_ref, draft=draft, actor=actor, embedding=embedding,
                         supersede=supersede)


def _same_statuses(candidates: bool) -> list[str]:
    """What an identical statement reinforces. A held inference may reinforce an identical held
    one; the person's own word never merely reinforces an inference: it confirms it."""
    statuses = [Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL]
    return [*statuses, Memory.Status.CANDIDATE] if candidates else statuses


# How many of a subject's latest keyless facts a restatement is compared with.
RESTATED_SCAN = 200


def restated_by(*, draft: MemoryDraft, memories) -> list[Memory]:
    """The keyless facts `draft` restates with another value and says so ("I prefer tea now"
    after "I prefer coffee"; memoryapp/frames.py): the same question answered anew, certain
    enough to supersede without a key. Only the person's own statements, about themselves."""
    if draft.key or draft.memory_type != Memory.Type.SEMANTIC or draft.source_kind not in SELF_SOURCES:
        return []
    if not says_change(draft.statement):
        return []
    return [m for m in memories if ended_or_replaced(m.statement, draft.statement)]


class _DatabaseLookup:
    """What a single memory_write looks up, read from the database each time."""

    def same(self, *, tenant: Tenant, subject: Subject, namespace: str, digest: str,
             candidates: bool = False) -> Memory | None:
        return (
            Memory.objects.filter(
                tenant=tenant, subject=subject, namespace=namespace, content_hash=digest,
                status__in=_same_statuses(candidates), erasing=False,
            )
            .order_by("recorded_at")
            .first()
        )

    def rivals(self, *, tenant: Tenant, subject: Subject, namespace: str, key: str) -> list[Memory]:
        return list(Memory.objects.select_for_update().filter(
            tenant=tenant, subject=subject, namespace=namespace, key=key,
            status=Memory.Status.ACTIVE, erasing=False,
        ))

    def candidates(self, *, tenant: Tenant, subject: Subject, namespace: str, key: str) -> list[Memory]:
        return list(Memory.objects.select_for_update().filter(
            tenant=tenant, subject=subject, namespace=namespace, key=key,
            status=Memory.Status.CANDIDATE, erasing=False,
        ))

    def restated(self, *, tenant: Tenant, subject: Subject, draft: MemoryDraft) -> list[Memory]:
        return restated_by(draft=draft, memories=Memory.objects.select_for_update().filter(
            tenant=tenant, subject=subject, namespace=draft.namespace, key="", memory_type=Memory.Type.SEMANTIC,
            status=Memory.Status.ACTIVE, erasing=False, source_kind__in=SELF_SOURCES,
        ).order_by("-valid_from", "-pk")[:RESTATED_SCAN])

    def reinforced(self, memory: Memory, *, grown: int, confidence: float) -> None:
        memory.refresh_from_db()

    def written(self, memory: Memory) -> None:
        pass

    def retired(self, memory: Memory) -> None:
        pass


@transaction.atomic
def _memory_write(*, tenant, subject_ref, draft, actor, embedding, supersede) -> WriteResult:
    # One writer per subject at a time: dedupe and supersession decisions need a stable view.
    subject = subject_locked_for_write(tenant=tenant, external_id=subject_ref)
    # Every entry of the write is about this subject, whose row is known.
    record = functools.partial(audit_record, subject_row_id=subject.pk)
    return _write(tenant=tenant, subject=subject, subject_ref=subject_ref, draft=draft, actor=actor,
                  embedding=embedding, supersede=supersede, lookup=_DatabaseLookup(), record=record)


def _write(*, tenant, subject, subject_ref, draft, actor, embedding, supersede, lookup, record) -> WriteResult:
    """memory_write's decisions and writes, for memory_write and MemoryWriteBatch alike.
    Assumes the tenant's transaction and the subject's row lock; `lookup` answers the reads
    (the database, or a batch's prefetched view of it) and `record` appends audit entries."""
    valid_from = draft.valid_from or timezone.now()
    # An inference waits for the person (seed 001 §4.2): it replaces, shortens and flags nothing.
    held = draft.status is None and held_as_candidate(
        memory_type=draft.memory_type, source_kind=draft.source_kind, accept_inferences=tenant.accept_inferences)
    if held:
        draft.status = Memory.Status.CANDIDATE

    digest = content_hash(draft.statement)
    if draft.exact_key and draft.key:
        # Only the key's own current value, if it is this very one, is reinforced: equal text under
        # another key is another value, and changed metadata under this key a new version.
        same = next((r for r in lookup.rivals(tenant=tenant, subject=subject, namespace=draft.namespace, key=draft.key)
                     if r.content_hash == digest and r.metadata == draft.metadata), None)
    else:
        same = lookup.same(tenant=tenant, subject=subject, namespace=draft.namespace, digest=digest, candidates=held)
    if same is not None:
        added = _link_evidence(tenant=tenant, memory=same, events=[draft.source_event, *draft.evidence])
        grown = max(added, 1 if not draft.source_event else added)
        confidence = max(same.confidence, draft.confidence)
        _this_memory(memory_id=same.pk, tenant_id=tenant.pk).update(
            evidence_count=F("evidence_count") + grown, confidence=confidence)
        lookup.reinforced(same, grown=grown, confidence=confidence)
        record(
            tenant=tenant, actor=actor, action="memory_reinforced", subject_ref=subject_ref, memory_id=same.id,
            details={"evidence_count": same.evidence_count},
        )
        return WriteResult(memory=same, created=False)

    to_retire: list[Memory] = list(supersede or [])
    conflicts: list[Memory] = []
    newer: Memory | None = None
    outranked_by: Memory | None = None
    # A proposed procedure replaces nothing until an admin approves it (memory_review retires
    # the active one then); until that moment the agent keeps following the approved version.
    proposal = (draft.status or initial_status(memory_type=draft.memory_type)) == Memory.Status.PENDING_APPROVAL
    rivals = lookup.rivals(tenant=tenant, subject=subject, namespace=draft.namespace, key=draft.key) \
        if draft.key and not held else []
    procedure = next((r for r in rivals if r.memory_type == Memory.Type.PROCEDURAL), None)
    if procedure is not None and not proposal:
        # A write under an approved procedure's key would change how the agent acts: a proposal.
        draft.status, draft.proposal_for, proposal = Memory.Status.PENDING_APPROVAL, procedure, True
    if draft.key and not proposal:
        newer = min((r for r in rivals if r.valid_from > valid_from), key=lambda r: r.valid_from, default=None)
        # Lower authority never replaces, shortens or flags what a higher one said.
        outranked_by = next((r for r in rivals if r.valid_from <= valid_from and outranks(old=r, draft=draft)), None)
        if newer is not None or outranked_by is not None:
            # A late-arriving older fact becomes history: it never replaces a newer one.
            draft.status = Memory.Status.SUPERSEDED
            to_retire = []
        else:
            for rival in rivals:
                if rival in to_retire:
                    continue
                if replaces(old=rival, draft=draft):
                    to_retire.append(rival)
                else:
                    conflicts.append(rival)
    if not draft.key and not held and not proposal:
        # No key, yet the same question answered anew, in words that say it changed.
        restated = [m for m in lookup.restated(tenant=tenant, subject=subject, draft=draft)
                    if m.valid_from <= valid_from and m not in to_retire and replaces(old=m, draft=draft)]
        to_retire.extend(restated)
    if conflicts:
        draft.flags = [*draft.flags, "conflict"]

    memory = _new_memory(tenant=tenant, subject=subject, draft=draft, embedding=embedding, valid_from=valid_from)
    lookup.written(memory)
    if outranked_by is not None:
        _outranked(memory, by=outranked_by)
    elif newer is not None:
        # The version it would interrupt (older, already retired by the newer one): only an
        # equal or higher authority may end it early.
        interrupted = list(Memory.objects.select_for_update().filter(
            tenant=tenant, subject=subject, namespace=draft.namespace, key=draft.key,
            status=Memory.Status.SUPERSEDED, valid_from__lt=valid_from, valid_to__gt=valid_from, erasing=False,
        ).exclude(pk=memory.pk))
        higher = next((e for e in interrupted if outranks(old=e, draft=draft)), None)
        if higher is not None:
            _outranked(memory, by=higher)
        else:
            # It held until the earliest newer fact began.
            memory.valid_to = newer.valid_from
            memory.superseded_by = newer
            memory.save(update_fields=["valid_to", "superseded_by"])
            # The version it interrupts now ends where this one begins, so an as_of between
            # them finds exactly one version.
            for earlier in interrupted:
                earlier.valid_to = valid_from
                earlier.superseded_by = memory
                earlier.save(update_fields=["valid_to", "superseded_by"])
    for old in to_retire:
        before = memory_snapshot(old)  # as it was: _retire sets its end
        _retire(memory=old, successor=memory, at=valid_from)
        lookup.retired(old)
        record(
            tenant=tenant, actor=actor, action="memory_superseded", subject_ref=subject_ref, memory_id=old.id,
            before=before, after=memory_snapshot(old),
            details={"superseded_by": memory.public_id},
        )
    for rival in conflicts:
        if "conflict" not in rival.flags:
            rival.flags = [*rival.flags, "conflict"]
            rival.save(update_fields=["flags"])
    settled = []
    if draft.key and draft.source_kind in SELF_SOURCES and memory.status == Memory.Status.ACTIVE:
        # The person stating a value under the key settles what was inferred under it.
        for candidate in lookup.candidates(tenant=tenant, subject=subject, namespace=draft.namespace, key=draft.key):
            candidate_settle(tenant=tenant, candidate=candidate, by=memory, actor=actor, subject_ref=subject_ref,
                             record=record, via="statement")
            lookup.retired(candidate)
            settled.append(candidate)
    details = {"supersedes": [m.public_id for m in to_retire], "conflicts": [m.public_id for m in conflicts]}
    if held:
        details["candidate"] = True
    if settled:
        details["settles"] = [m.public_id for m in settled]
    if memory.status_reason == "outranked" and memory.superseded_by_id:
        details["outranked_by"] = f"mem_{memory.superseded_by_id.hex}"
    record(
        tenant=tenant, actor=actor, action="memory_written", subject_ref=subject_ref, memory_id=memory.id,
        after=memory_snapshot(memory), details=details,
    )
    return WriteResult(memory=memory, created=True, superseded=to_retire, conflicts=conflicts)


def _extracted_value(memory: Memory) -> bool:
    value = (memory.metadata or {}).get("value") if isinstance(memory.metadata, dict) else None
    return isinstance(value, str) and bool(value.strip())


def candidate_settle(*, tenant: Tenant, candidate: Memory, by: Memory, actor: Actor, subject_ref: str, record,
                     via: str) -> str:
    """End a candidate because the person stated a value under its key (`by`), and say how:
    - "confirmed": the same value (fact_values meet); the candidate is superseded by `by`;
    - "contradicted": both carry an extracted value and they differ; the candidate is rejected;
    - "superseded_by_person": otherwise (free statements that differ in words may still mean the
      same), the person's word replaces it without calling the inference wrong.
    Either way it points to `by` and stays in history with an empty validity interval: it was
    never a fact, so no as_of returns it. Assumes the subject's and the candidate's row locks."""
    if fact_values(statement=candidate.statement, metadata=candidate.metadata) & fact_values(
            statement=by.statement, metadata=by.metadata):
        outcome, status, action = "confirmed", Memory.Status.SUPERSEDED, "candidate_confirmed"
    elif _extracted_value(candidate) and _extracted_value(by):
        outcome, status, action = "contradicted", Memory.Status.REJECTED, "candidate_rejected"
    else:
        outcome, status, action = "superseded_by_person", Memory.Status.SUPERSEDED, "candidate_superseded"
    before = memory_snapshot(candidate)
    candidate.status, candidate.status_reason = status, outcome
    candidate.valid_to = candidate.valid_from
    candidate.superseded_by = by
    candidate.save(update_fields=["status", "status_reason", "valid_to", "superseded_by"])
    record(
        tenant=tenant, actor=actor, action=action, subject_ref=subject_ref, memory_id=candidate.id, before=before,
        after=memory_snapshot(candidate), details={"by": by.public_id, "via": via},
    )
    return outcome


class MemoryWriteBatch:
    """memory_write for many drafts inside one transaction (the extraction pipeline's chunk):
    the same decisions, reads answered from one prefetch instead of two queries per draft, and
    audit entries appended through the caller's AuditBuffer.

    lock_subjects() takes memory_write's subject locks (once, until commit); prefetch() then
    reads, and locks, every memory the drafts could reinforce or supersede, so no other
    transaction changes them meanwhile; every write through the batch keeps that view current.
    Use it only inside that one transaction, and tell it (recheck_episodes) when episodes were
    retired meanwhile by anything else.
    """

    def __init__(self, *, tenant: Tenant, record):
        self.tenant = tenant
        self.record = record
        self._same: dict[tuple, list[Memory]] = {}
        self._rivals: dict[tuple, list[Memory]] = {}
        self._candidates: dict[tuple, list[Memory]] = {}

    def lock_subjects(self, *, subject_ids) -> list[Subject]:
        return list(Subject.objects.select_for_update().filter(tenant=self.tenant, pk__in=set(subject_ids))
                    .order_by("pk"))

    def prefetch(self, *, subject_ids, drafts: list[MemoryDraft]) -> None:
        """Read what memory_write would look up for `drafts` about `subject_ids` (call after
        lock_subjects; every later write() must be about one of those subjects)."""
        self._same, self._rivals, self._candidates = {}, {}, {}
        if not drafts:
            return
        digests = {content_hash(d.statement) for d in drafts}
        keys = {d.key for d in drafts if d.key}
        found = Memory.objects.select_for_update().filter(
            tenant=self.tenant, subject_id__in=set(subject_ids), namespace__in={d.namespace for d in drafts},
            status__in=_same_statuses(True), erasing=False,
        ).filter(Q(content_hash__in=digests)
                 | Q(key__in=keys, status__in=[Memory.Status.ACTIVE, Memory.Status.CANDIDATE]))
        for memory in found.order_by("recorded_at", "pk"):
            self.written(memory)

    def same(self, *, tenant, subject, namespace, digest, candidates: bool = False) -> Memory | None:
        statuses = _same_statuses(candidates)
        found = [m for m in self._same.get((subject.pk, namespace, digest), []) if m.status in statuses]
        return found[0] if found else None

    def candidates(self, *, tenant, subject, namespace, key) -> list[Memory]:
        return list(self._candidates.get((subject.pk, namespace, key), []))

    def rivals(self, *, tenant, subject, namespace, key) -> list[Memory]:
        return list(self._rivals.get((subject.pk, namespace, key), []))

    def restated(self, *, tenant, subject, draft) -> list[Memory]:
        # Extraction writes keyed facts and episodes; a keyless fact it finds is ranked after a
        # restatement at read time instead (retrieval.answered_later).
        return []

    def reinforced(self, memory: Memory, *, grown: int, confidence: float) -> None:
        # No re-read: prefetch() locked the row, so nobody else changed it.
        memory.evidence_count += grown
        memory.confidence = confidence

    def written(self, memory: Memory) -> None:
        # Oldest first, as memory_write's `same` query orders them.
        if memory.status in _same_statuses(True):
            self._same.setdefault((memory.subject_id, memory.namespace, memory.content_hash), []).append(memory)
        if memory.key and memory.status == Memory.Status.ACTIVE:
            self._rivals.setdefault((memory.subject_id, memory.namespace, memory.key), []).append(memory)
        if memory.key and memory.status == Memory.Status.CANDIDATE:
            self._candidates.setdefault((memory.subject_id, memory.namespace, memory.key), []).append(memory)

    def retired(self, memory: Memory) -> None:
        for index, key in ((self._same, (memory.subject_id, memory.namespace, memory.content_hash)),
                           (self._rivals, (memory.subject_id, memory.namespace, memory.key)),
                           (self._candidates, (memory.subject_id, memory.namespace, memory.key))):
            if key in index:
                index[key] = [m for m in index[key] if m.pk != memory.pk]

    def recheck_episodes(self) -> None:
        """Episodes were retired outside the batch's writes: re-read the few it holds (an
        episode is only held when a draft repeats it word for word)."""
        held = {m.pk for found in self._same.values() for m in found if m.memory_type == Memory.Type.EPISODIC}
        if not held:
            return
        current = set(Memory.objects.filter(
            tenant=self.tenant, pk__in=held, status__in=[Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL],
        ).values_list("pk", flat=True))
        for key, found in self._same.items():
            self._same[key] = [m for m in found if m.pk not in held or m.pk in current]

    def write(self, *, subject: Subject, subject_ref: str, draft: MemoryDraft, actor: Actor,
              embedding: np.ndarray) -> WriteResult:
        """memory_write(draft) through the batch. A refusal is recorded in the audit buffer and
        raised as PolicyRejected before anything is written."""
        refusal = policy_refusal(draft=draft)
        if refusal:
            reason, details = refusal
            self.record(tenant=self.tenant, actor=actor, action="policy_refused", subject_ref=subject_ref,
                        details=_refusal_details(reason, details, draft))
            raise PolicyRejected(reason, details)
        return _write(tenant=self.tenant, subject=subject, subject_ref=subject_ref, draft=draft, actor=actor,
                      embedding=embedding, supersede=None, lookup=self, record=self.record)


def memory_supersede(
    *, tenant: Tenant, memory: Memory, draft: MemoryDraft, actor: Actor, action: str = "memory_superseded"
) -> Memory:
    """Replace `memory` with a new version; the old one stays in history with `valid_to` and
    `superseded_by` set. A new version that must wait for approval (a procedure) is a proposal:
    it replaces nothing until memory_review approves it."""
    policy_check(tenant=tenant, subject_ref=memory.subject.external_id, draft=draft, actor=actor)
    vector = embeddings.embed_text(draft.statement, partition=tenant.pk)
    return _memory_supersede(tenant=tenant, memory=memory, draft=draft, actor=actor, action=action, vector=vector)


def lock_subject(*, tenant: Tenant, subject_id) -> None:
    """Take the subject's row lock. Every transaction that changes a subject's memories takes it
    first, before any memory row, so two such transactions never wait for each other in
    opposite orders (the extraction pipeline locks events, then subjects, then memories)."""
    Subject.objects.select_for_update().filter(tenant=tenant, pk=subject_id).first()


class Outranked(ApplicationError):
    def __init__(self, *, old: Memory, source_kind: str):
        super().__init__(
            "outranked",
            f"A change from source '{source_kind}' cannot replace a memory from source '{old.source_kind}'.",
            {"source": source_kind, "memory_source": old.source_kind}, status=409,
        )


@transaction.atomic
def _memory_supersede(*, tenant, memory, draft, actor, action, vector) -> Memory:
    tenant_activate(tenant=tenant)
    lock_subject(tenant=tenant, subject_id=memory.subject_id)
    memory = Memory.objects.select_for_update().filter(pk=memory.pk, tenant=tenant).first()
    if memory is None:
        raise NotFound("memory")
    correctable = (Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL, Memory.Status.CANDIDATE)
    if memory.erasing or memory.status not in correctable:
        raise ApplicationError(
            "memory_not_current", "Only a current memory (or an inference waiting) can be corrected or superseded.",
            {"status": memory.status}, status=409,
        )
    if outranks(old=memory, draft=draft):
        raise Outranked(old=memory, source_kind=draft.source_kind)
    subject_ref = memory.subject.external_id
    if draft.valid_from is None:
        draft.valid_from = timezone.now()
    # A procedure changes how the agent acts: any change to one (its text, or its type: turning it
    # into a fact removes it) waits for an admin, and so does any change to a proposal.
    proposal = (
        (draft.status or initial_status(memory_type=draft.memory_type)) == Memory.Status.PENDING_APPROVAL
        or memory.memory_type == Memory.Type.PROCEDURAL or memory.status == Memory.Status.PENDING_APPROVAL
    )
    if proposal:
        draft.status = Memory.Status.PENDING_APPROVAL
    elif memory.status == Memory.Status.CANDIDATE and not held_as_candidate(
            memory_type=draft.memory_type, source_kind=draft.source_kind, accept_inferences=tenant.accept_inferences):
        # Someone who may speak for the person corrects an inference: their version is written
        # like any new statement (under the key's rules), and the inference is settled by it.
        result = _write(tenant=tenant, subject=memory.subject, subject_ref=subject_ref, draft=draft, actor=actor,
                        embedding=vector, supersede=None, lookup=_DatabaseLookup(), record=audit_record)
        memory.refresh_from_db()
        if memory.status == Memory.Status.CANDIDATE:
            candidate_settle(tenant=tenant, candidate=memory, by=result.memory, actor=actor,
                             subject_ref=subject_ref, record=audit_record, via=action)
        return result.memory
    elif memory.status != Memory.Status.CANDIDATE and held_as_candidate(
            memory_type=draft.memory_type, source_kind=draft.source_kind, accept_inferences=tenant.accept_inferences):
        # An inferred correction waits for the person like any inference; the memory it would
        # replace stays current until they confirm it (services/candidates.py).
        draft.status, draft.proposal_for = Memory.Status.CANDIDATE, memory
        new = _new_memory(tenant=tenant, subject=memory.subject, draft=draft, embedding=vector,
                          valid_from=draft.valid_from)
        audit_record(
            tenant=tenant, actor=actor, action="memory_written", subject_ref=subject_ref, memory_id=new.id,
            after=memory_snapshot(new), details={"candidate": True, "proposal_for": memory.public_id, "via": action},
        )
        return new
    if proposal and memory.status == Memory.Status.ACTIVE:
        # The current memory stays current until an admin approves the proposal.
        draft.proposal_for = memory
        new = _new_memory(tenant=tenant, subject=memory.subject, draft=draft, embedding=vector,
                          valid_from=draft.valid_from)
        audit_record(
            tenant=tenant, actor=actor, action="memory_proposed", subject_ref=subject_ref, memory_id=new.id,
            after=memory_snapshot(new), details={"proposal_for": memory.public_id, "via": action},
        )
        return new
    if memory.status == Memory.Status.PENDING_APPROVAL:
        # A corrected proposal is still a proposal for what the first one would replace.
        draft.proposal_for = memory.proposal_for
    new = _new_memory(tenant=tenant, subject=memory.subject, draft=draft, embedding=vector,
                      valid_from=draft.valid_from)
    before = memory_snapshot(memory)
    _retire(memory=memory, successor=new, at=draft.valid_from)
    audit_record(
        tenant=tenant, actor=actor, action=action, subject_ref=subject_ref, memory_id=memory.id,
        before=before, after=memory_snapshot(memory), details={"superseded_by": new.public_id},
    )
    audit_record(
        tenant=tenant, actor=actor, action="memory_written", subject_ref=subject_ref, memory_id=new.id,
        after=memory_snapshot(new), details={"supersedes": [memory.public_id]},
    )
    return new


def memory_correct(*, tenant: Tenant, memory: Memory, actor: Actor, statement: str | None = None,
                   source_kind: str = "user_explicit", **changes) -> Memory:
    """A correction: a new version carrying the changed fields, superseding `memory` (or, for a
    procedure, proposing to). A source that `memory`'s outranks is refused (checked under the
    lock, by the same rule as a new write's)."""
    draft = MemoryDraft(
        statement=statement if statement is not None else memory.statement,
        memory_type=changes.pop("memory_type", memory.memory_type),
        namespace=changes.pop("namespace", memory.namespace),
        source_kind=source_kind,
        key=memory.key,
        confidence=changes.pop("confidence", 1.0),
        importance=changes.pop("importance", memory.importance),
        sensitivity=changes.pop("sensitivity", memory.sensitivity),
        valid_from=changes.pop("valid_from", None),
        expires_at=changes.pop("expires_at", memory.expires_at),
        metadata=changes.pop("metadata", memory.metadata),
        evidence=list(memory.evidence.all()),
    )
    if changes:
        raise ApplicationError("invalid_field", f"Cannot change: {', '.join(sorted(changes))}.")
    return memory_supersede(tenant=tenant, memory=memory, draft=draft, actor=actor, action="memory_corrected")


@transaction.atomic
def memory_forget(*, tenant: Tenant, memory: Memory, actor: Actor) -> Job:
    """Forget a memory, its versions, the messages it was drawn from and everything derived
    from them (memory_forget_plan). Marks them first (so they are never returned again, and the
    subject's exports are withdrawn), then a deletion job removes them and verifies that nothing
    states the forgotten content any more."""
    tenant_activate(tenant=tenant)
    lock_subject(tenant=tenant, subject_id=memory.subject_id)
    plan = memory_forget_plan(memory=memory)
    ids = [m.pk for m in plan.memories]
    Memory.objects.filter(tenant=tenant, pk__in=ids).update(erasing=True)
    Event.objects.filter(tenant=tenant, pk__in=plan.event_ids).update(erasing=True)
    export_files_withdraw(tenant=tenant, subject_id=memory.subject_id)
    subject_ref = memory.subject.external_id
    job = job_create(
        tenant=tenant, kind=Job.Kind.DELETION, subject_ref=subject_ref,
        params={"scope": "memory", "memory_ids": [str(i) for i in ids],
                "event_ids": [str(i) for i in plan.event_ids], "kept_memory_ids": [str(m.pk) for m in plan.kept]},
        total=len(ids) + len(plan.event_ids), actor=str(actor),
    )
    audit_record(
        tenant=tenant, actor=actor, action="memory_forget_requested", subject_ref=subject_ref, memory_id=memory.id,
        target=job.public_id,
        details={"memories": len(ids), "events": len(plan.event_ids), "kept": len(plan.kept),
                 "memory_ids": [m.public_id for m in plan.memories]},
    )
    return job


@transaction.atomic
def memories_forget(*, tenant: Tenant, subject: Subject, memories: list[Memory], actor: Actor) -> Job:
    """Forget several memories of one subject with one deletion job (one receipt): the union of
    their forget plans (memory_forget_plan), marked first like memory_forget. A memory one plan
    keeps and another forgets is forgotten. With no memories the job still runs and its receipt
    says nothing was removed."""
    tenant_activate(tenant=tenant)
    lock_subject(tenant=tenant, subject_id=subject.pk)
    doomed: dict = {}
    event_ids: set = set()
    kept: dict = {}
    for memory in memories:
        if memory.pk in doomed:
            continue  # already taken by an earlier plan (a version, an episode or a derived memory)
        plan = memory_forget_plan(memory=memory)
        doomed.update((m.pk, m) for m in plan.memories)
        event_ids.update(plan.event_ids)
        kept.update((m.pk, m) for m in plan.kept)
    kept = {pk: m for pk, m in kept.items() if pk not in doomed}
    Memory.objects.filter(tenant=tenant, pk__in=list(doomed)).update(erasing=True)
    Event.objects.filter(tenant=tenant, pk__in=list(event_ids)).update(erasing=True)
    export_files_withdraw(tenant=tenant, subject_id=subject.pk)
    job = job_create(
        tenant=tenant, kind=Job.Kind.DELETION, subject_ref=subject.external_id,
        params={"scope": "memory", "memory_ids": [str(i) for i in doomed],
                "event_ids": [str(i) for i in event_ids], "kept_memory_ids": [str(i) for i in kept]},
        total=len(doomed) + len(event_ids), actor=str(actor),
    )
    audit_record(
        tenant=tenant, actor=actor, action="memories_forget_requested", subject_ref=subject.external_id,
        target=job.public_id,
        details={"requested": len(memories), "memories": len(doomed), "events": len(event_ids), "kept": len(kept),
                 "memory_ids": [m.public_id for m in doomed.values()][:1000]},
    )
    return job


@transaction.atomic
def subject_erase_request(*, tenant: Tenant, subject_ref: str, actor: Actor) -> Job:
    """Erase a subject and everything about it: marked now, deleted in batches by a job.

    Only the subject row is marked: every read scopes memories through an active subject, and
    marking each memory would rewrite every row (and its HNSW entry) inside this request. Its
    exports are withdrawn at once. The job names the Subject row, so that once the id is free
    again, nothing about the next person with it is touched."""
    tenant_activate(tenant=tenant)
    subject = Subject.objects.select_for_update().filter(tenant=tenant, external_id=subject_ref).first()
    params = {"scope": "subject"}
    if subject is not None:
        if subject.status != Subject.Status.ERASING:
            subject.status = Subject.Status.ERASING
            subject.save(update_fields=["status"])
        export_files_withdraw(tenant=tenant, subject_id=subject.pk)
        params["subject_row_id"] = subject.pk
    job = job_create(
        tenant=tenant, kind=Job.Kind.DELETION, subject_ref=subject_ref, params=params, actor=str(actor),
    )
    audit_record(
        tenant=tenant, actor=actor, action="subject_erase_requested", subject_ref=subject_ref,
        subject_row_id=subject.pk if subject is not None else None, target=job.public_id,
    )
    return job


@transaction.atomic
def memory_review(*, tenant: Tenant, memory: Memory, approve: bool, actor: Actor) -> Memory:
    """An admin's decision on a procedural memory waiting for approval. Approval retires the
    memory it was proposed for (and any other active procedure under its key); rejection leaves
    everything current as it was."""
    tenant_activate(tenant=tenant)
    lock_subject(tenant=tenant, subject_id=memory.subject_id)
    memory = Memory.objects.select_for_update().filter(pk=memory.pk, tenant=tenant).first()
    if memory is None:
        raise NotFound("memory")
    if memory.status != Memory.Status.PENDING_APPROVAL:
        raise ApplicationError("not_pending", "This memory is not waiting for approval.", status=409)
    before = memory_snapshot(memory)
    memory.status = Memory.Status.ACTIVE if approve else Memory.Status.REJECTED
    memory.save(update_fields=["status"])
    subject_ref = memory.subject.external_id
    retired = []
    if approve:
        replaced = Q(pk=current_version(memory.proposal_for).pk) if memory.proposal_for_id else Q(pk__in=[])
        if memory.key:
            replaced |= Q(memory_type=Memory.Type.PROCEDURAL, namespace=memory.namespace, key=memory.key)
        now = timezone.now()
        for old in Memory.objects.select_for_update().filter(
            replaced, tenant=tenant, subject=memory.subject, status=Memory.Status.ACTIVE, erasing=False,
        ).exclude(pk=memory.pk):
            old_before = memory_snapshot(old)
            _retire(memory=old, successor=memory, at=now)
            retired.append(old)
            audit_record(
                tenant=tenant, actor=actor, action="memory_superseded", subject_ref=subject_ref, memory_id=old.id,
                before=old_before, after=memory_snapshot(old), details={"superseded_by": memory.public_id},
            )
    audit_record(
        tenant=tenant, actor=actor, action="memory_approved" if approve else "memory_rejected",
        subject_ref=subject_ref, memory_id=memory.id, before=before, after=memory_snapshot(memory),
        details={"supersedes": [m.public_id for m in retired]},
    )
    return memory
