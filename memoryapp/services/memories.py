"""Writing, superseding, correcting and forgetting memories. Each service is one complete state
change in one transaction, with its audit entry and its follow-up jobs."""
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound, PolicyRejected
from memoryapp.models import Event, Job, Memory, MemoryEvidence, MemoryLineage, Subject, Tenant
from memoryapp.policy import durable_types_allowed, initial_status, source_authority
from memoryapp.safety import find_secrets, looks_like_instruction
from memoryapp.services.audit import audit_record
from memoryapp.services.jobs import job_create
from memoryapp.services.tenants import subject_get_or_create
from memoryapp.tenancy import tenant_activate

EXPLICIT_EXTRACTOR_VERSION = "explicit-v1"


def normalise_statement(statement: str) -> str:
    return re.sub(r"\s+", " ", statement.strip().lower()).rstrip(".!")


def content_hash(statement: str) -> str:
    return hashlib.sha256(normalise_statement(statement).encode()).hexdigest()


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
        status=draft.status or initial_status(memory_type=draft.memory_type),
        content_hash=content_hash(draft.statement),
        embedding=embedding,
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


def _retire(*, memory: Memory, successor: Memory, at: datetime) -> None:
    memory.status = Memory.Status.SUPERSEDED
    # A fact stops holding when its successor starts; never before it started itself.
    memory.valid_to = max(at, memory.valid_from)
    memory.superseded_by = successor
    memory.save(update_fields=["status", "valid_to", "superseded_by"])


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
    """
    policy_check(tenant=tenant, subject_ref=subject_ref, draft=draft, actor=actor)
    if embedding is None:
        # Embedded before the write transaction: the model's time should not hold row locks.
        embedding = embeddings.embed_text(draft.statement)
    return _memory_write(tenant=tenant, subject_ref=subject_ref, draft=draft, actor=actor, embedding=embedding,
                         supersede=supersede)


class _DatabaseLookup:
    """What a single memory_write looks up, read from the database each time."""

    def same(self, *, tenant: Tenant, subject: Subject, namespace: str, digest: str) -> Memory | None:
        return (
            Memory.objects.filter(
                tenant=tenant, subject=subject, namespace=namespace, content_hash=digest,
                status__in=[Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL], erasing=False,
            )
            .order_by("recorded_at")
            .first()
        )

    def rivals(self, *, tenant: Tenant, subject: Subject, namespace: str, key: str) -> list[Memory]:
        return list(Memory.objects.select_for_update().filter(
            tenant=tenant, subject=subject, namespace=namespace, key=key,
            status=Memory.Status.ACTIVE, erasing=False,
        ))

    def reinforced(self, memory: Memory, *, grown: int, confidence: float) -> None:
        memory.refresh_from_db()

    def written(self, memory: Memory) -> None:
        pass

    def retired(self, memory: Memory) -> None:
        pass


@transaction.atomic
def _memory_write(*, tenant, subject_ref, draft, actor, embedding, supersede) -> WriteResult:
    tenant_activate(tenant=tenant)
    subject = subject_get_or_create(tenant=tenant, external_id=subject_ref)
    # One writer per subject at a time: dedupe and supersession decisions need a stable view.
    Subject.objects.select_for_update().filter(pk=subject.pk).first()
    return _write(tenant=tenant, subject=subject, subject_ref=subject_ref, draft=draft, actor=actor,
                  embedding=embedding, supersede=supersede, lookup=_DatabaseLookup(), record=audit_record)


def _write(*, tenant, subject, subject_ref, draft, actor, embedding, supersede, lookup, record) -> WriteResult:
    """memory_write's decisions and writes, for memory_write and MemoryWriteBatch alike.
    Assumes the tenant's transaction and the subject's row lock; `lookup` answers the reads
    (the database, or a batch's prefetched view of it) and `record` appends audit entries."""
    valid_from = draft.valid_from or timezone.now()

    same = lookup.same(tenant=tenant, subject=subject, namespace=draft.namespace, digest=content_hash(draft.statement))
    if same is not None:
        added = _link_evidence(tenant=tenant, memory=same, events=[draft.source_event, *draft.evidence])
        grown = max(added, 1 if not draft.source_event else added)
        confidence = max(same.confidence, draft.confidence)
        Memory.objects.filter(pk=same.pk).update(evidence_count=F("evidence_count") + grown, confidence=confidence)
        lookup.reinforced(same, grown=grown, confidence=confidence)
        record(
            tenant=tenant, actor=actor, action="memory_reinforced", subject_ref=subject_ref, memory_id=same.id,
            details={"evidence_count": same.evidence_count},
        )
        return WriteResult(memory=same, created=False)

    to_retire: list[Memory] = list(supersede or [])
    conflicts: list[Memory] = []
    newer: Memory | None = None
    # A proposed procedure replaces nothing until an admin approves it (memory_review retires
    # the active one then); until that moment the agent keeps following the approved version.
    proposal = (draft.status or initial_status(memory_type=draft.memory_type)) == Memory.Status.PENDING_APPROVAL
    if draft.key and not proposal:
        rivals = lookup.rivals(tenant=tenant, subject=subject, namespace=draft.namespace, key=draft.key)
        newer = min((r for r in rivals if r.valid_from > valid_from), key=lambda r: r.valid_from, default=None)
        if newer is not None:
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
    if conflicts:
        draft.flags = [*draft.flags, "conflict"]

    memory = _new_memory(tenant=tenant, subject=subject, draft=draft, embedding=embedding, valid_from=valid_from)
    lookup.written(memory)
    if newer is not None:
        # It held until the earliest newer fact began.
        memory.valid_to = newer.valid_from
        memory.superseded_by = newer
        memory.save(update_fields=["valid_to", "superseded_by"])
        # The version it interrupts (older, already retired by the newer one) now ends where
        # this one begins, so an as_of between them finds exactly one version.
        for earlier in Memory.objects.select_for_update().filter(
            tenant=tenant, subject=subject, namespace=draft.namespace, key=draft.key,
            status=Memory.Status.SUPERSEDED, valid_from__lt=valid_from, valid_to__gt=valid_from, erasing=False,
        ).exclude(pk=memory.pk):
            earlier.valid_to = valid_from
            earlier.superseded_by = memory
            earlier.save(update_fields=["valid_to", "superseded_by"])
    for old in to_retire:
        _retire(memory=old, successor=memory, at=valid_from)
        lookup.retired(old)
        record(
            tenant=tenant, actor=actor, action="memory_superseded", subject_ref=subject_ref, memory_id=old.id,
            before=memory_snapshot(old) | {"status": Memory.Status.ACTIVE}, after=memory_snapshot(old),
            details={"superseded_by": memory.public_id},
        )
    for rival in conflicts:
        if "conflict" not in rival.flags:
            rival.flags = [*rival.flags, "conflict"]
            rival.save(update_fields=["flags"])
    record(
        tenant=tenant, actor=actor, action="memory_written", subject_ref=subject_ref, memory_id=memory.id,
        after=memory_snapshot(memory),
        details={"supersedes": [m.public_id for m in to_retire], "conflicts": [m.public_id for m in conflicts]},
    )
    return WriteResult(memory=memory, created=True, superseded=to_retire, conflicts=conflicts)


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

    def lock_subjects(self, *, subject_ids) -> list[Subject]:
        return list(Subject.objects.select_for_update().filter(tenant=self.tenant, pk__in=set(subject_ids))
                    .order_by("pk"))

    def prefetch(self, *, subject_ids, drafts: list[MemoryDraft]) -> None:
        """Read what memory_write would look up for `drafts` about `subject_ids` (call after
        lock_subjects; every later write() must be about one of those subjects)."""
        self._same, self._rivals = {}, {}
        if not drafts:
            return
        digests = {content_hash(d.statement) for d in drafts}
        keys = {d.key for d in drafts if d.key}
        found = Memory.objects.select_for_update().filter(
            tenant=self.tenant, subject_id__in=set(subject_ids), namespace__in={d.namespace for d in drafts},
            status__in=[Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL], erasing=False,
        ).filter(Q(content_hash__in=digests) | Q(key__in=keys, status=Memory.Status.ACTIVE))
        for memory in found.order_by("recorded_at", "pk"):
            self.written(memory)

    def same(self, *, tenant, subject, namespace, digest) -> Memory | None:
        candidates = self._same.get((subject.pk, namespace, digest))
        return candidates[0] if candidates else None

    def rivals(self, *, tenant, subject, namespace, key) -> list[Memory]:
        return list(self._rivals.get((subject.pk, namespace, key), []))

    def reinforced(self, memory: Memory, *, grown: int, confidence: float) -> None:
        # No re-read: prefetch() locked the row, so nobody else changed it.
        memory.evidence_count += grown
        memory.confidence = confidence

    def written(self, memory: Memory) -> None:
        # Oldest first, as memory_write's `same` query orders them.
        if memory.status in (Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL):
            self._same.setdefault((memory.subject_id, memory.namespace, memory.content_hash), []).append(memory)
        if memory.key and memory.status == Memory.Status.ACTIVE:
            self._rivals.setdefault((memory.subject_id, memory.namespace, memory.key), []).append(memory)

    def retired(self, memory: Memory) -> None:
        for index, key in ((self._same, (memory.subject_id, memory.namespace, memory.content_hash)),
                           (self._rivals, (memory.subject_id, memory.namespace, memory.key))):
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
    `superseded_by` set."""
    policy_check(tenant=tenant, subject_ref=memory.subject.external_id, draft=draft, actor=actor)
    vector = embeddings.embed_text(draft.statement)
    return _memory_supersede(tenant=tenant, memory=memory, draft=draft, actor=actor, action=action, vector=vector)


@transaction.atomic
def _memory_supersede(*, tenant, memory, draft, actor, action, vector) -> Memory:
    tenant_activate(tenant=tenant)
    memory = Memory.objects.select_for_update().filter(pk=memory.pk, tenant=tenant).first()
    if memory is None:
        raise NotFound("memory")
    if memory.erasing or memory.status not in (Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL):
        raise ApplicationError(
            "memory_not_current", "Only a current memory can be corrected or superseded.",
            {"status": memory.status}, status=409,
        )
    subject_ref = memory.subject.external_id
    if draft.valid_from is None:
        draft.valid_from = timezone.now()
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
    """A correction: a new version carrying the changed fields, superseding `memory`."""
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


def memory_descendants(*, memory: Memory) -> list[Memory]:
    """Everything derived from `memory`, transitively (summaries of summaries included)."""
    found: dict = {}
    frontier = [memory.pk]
    while frontier:
        children = list(
            Memory.objects.filter(tenant_id=memory.tenant_id, source_links__source_id__in=frontier).distinct()
        )
        frontier = [c.pk for c in children if c.pk not in found and c.pk != memory.pk]
        for child in children:
            found.setdefault(child.pk, child)
    return list(found.values())


@transaction.atomic
def memory_forget(*, tenant: Tenant, memory: Memory, actor: Actor) -> Job:
    """Forget a memory and everything derived from it. Marks them first (so they are never
    returned again), then a deletion job removes them and verifies nothing is left."""
    tenant_activate(tenant=tenant)
    doomed = [memory, *memory_descendants(memory=memory)]
    ids = [m.pk for m in doomed]
    Memory.objects.filter(tenant=tenant, pk__in=ids).update(erasing=True)
    subject_ref = memory.subject.external_id
    job = job_create(
        tenant=tenant, kind=Job.Kind.DELETION, subject_ref=subject_ref,
        params={"scope": "memory", "memory_ids": [str(i) for i in ids]}, total=len(ids), actor=str(actor),
    )
    audit_record(
        tenant=tenant, actor=actor, action="memory_forget_requested", subject_ref=subject_ref, memory_id=memory.id,
        target=job.public_id, details={"memories": len(ids)},
    )
    return job


@transaction.atomic
def subject_erase_request(*, tenant: Tenant, subject_ref: str, actor: Actor) -> Job:
    """Erase a subject and everything about it: marked now, deleted in batches by a job.

    Only the subject row is marked: every read scopes memories through an active subject, and
    marking each memory would rewrite every row (and its HNSW entry) inside this request."""
    tenant_activate(tenant=tenant)
    Subject.objects.filter(tenant=tenant, external_id=subject_ref).update(status=Subject.Status.ERASING)
    job = job_create(
        tenant=tenant, kind=Job.Kind.DELETION, subject_ref=subject_ref, params={"scope": "subject"},
        actor=str(actor),
    )
    audit_record(
        tenant=tenant, actor=actor, action="subject_erase_requested", subject_ref=subject_ref,
        target=job.public_id,
    )
    return job


@transaction.atomic
def memory_review(*, tenant: Tenant, memory: Memory, approve: bool, actor: Actor) -> Memory:
    """An admin's decision on a procedural memory waiting for approval."""
    tenant_activate(tenant=tenant)
    memory = Memory.objects.select_for_update().filter(pk=memory.pk, tenant=tenant).first()
    if memory is None:
        raise NotFound("memory")
    if memory.status != Memory.Status.PENDING_APPROVAL:
        raise ApplicationError("not_pending", "This memory is not waiting for approval.", status=409)
    before = memory_snapshot(memory)
    memory.status = Memory.Status.ACTIVE if approve else Memory.Status.REJECTED
    memory.save(update_fields=["status"])
    if approve:
        # An approved procedure replaces the active one it was proposed against.
        for old in Memory.objects.filter(
            tenant=tenant, subject=memory.subject, status=Memory.Status.ACTIVE,
            memory_type=Memory.Type.PROCEDURAL, namespace=memory.namespace, key=memory.key,
        ).exclude(pk=memory.pk).exclude(key=""):
            _retire(memory=old, successor=memory, at=timezone.now())
    audit_record(
        tenant=tenant, actor=actor, action="memory_approved" if approve else "memory_rejected",
        subject_ref=memory.subject.external_id, memory_id=memory.id, before=before, after=memory_snapshot(memory),
    )
    return memory
