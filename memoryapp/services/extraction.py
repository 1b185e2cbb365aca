"""The extraction pipeline: a job's pending events become an episodic memory each, plus the
durable candidates the extractor finds in them, through the write policy.

Per event, in (occurred_at, seq) order: claim it (pending -> processing, a conditional update
whose timestamp is the claim token), then trust, secrets, candidates, conflicts, the episode.
Events are handled in chunks: the chunk's texts are embedded in one batch outside any
transaction (the model's time must not hold row locks), then the chunk is written in short
write transactions (WRITE_CHUNK_SIZE events each) that re-check the claim, so a worker killed at
any point leaves each event either untouched-and-claimed (the sweeper resets it) or completely
processed, never half. The next chunk is embedded while this one is written, and each write
transaction shares one prefetch, one audit append and one event update among its events
(MemoryWriteBatch, AuditBuffer): per-event round trips, not the model, used to bound ingestion.
"""
import json
import logging
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DataError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Count, F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import WORKER
from memoryapp.bulk_insert import bulk_insert
from memoryapp.clauses import statement_clauses
from memoryapp.credential_classifier import (
    KIND as SUSPECTED, MARKER as SUSPECTED_MARKER, may_withhold, suspects_credential,
)
from memoryapp.errors import ApplicationError, PolicyRejected
from memoryapp.extraction import Candidate, RULES_VERSION, extract_candidates, extractor_for_settings
from memoryapp.extraction.rules import is_ephemeral
from memoryapp.models import Event, Job, Memory, MemoryEvidence, Subject, Tenant
from memoryapp.policy import durable_types_allowed
from memoryapp.safety import (
    REDACTION_MARKER, ends_with_credential_word, findings_kept, follows_credential,
    looks_like_instruction, redact_secrets,
)
from memoryapp.services.audit import AuditBuffer, audit_record
from memoryapp.services.jobs import job_progress
from memoryapp.services.memories import MemoryDraft, MemoryWriteBatch, content_hash
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

# Events are claimed and embedded CHUNK_SIZE at a time and written WRITE_CHUNK_SIZE at a time.
# The model batches a chunk's texts by length, so a large chunk pads less: on LoCoMo's turns
# (5 to 100 words) chunks of 256 embed at 137 sentences/s against 88 for chunks of 64
# (docs/benchmarks.md). Writes stay small so a transaction holds its subjects' row locks (which
# "please remember" waits for) for a fraction of a second.
CHUNK_SIZE = 256
WRITE_CHUNK_SIZE = 64
# With a language-model extractor every event costs a model call while its chunk is prepared;
# smaller chunks keep the work claimed ahead of each write small.
LLM_CHUNK_SIZE = WRITE_CHUNK_SIZE
# Chatter and "today" remarks are kept as episodes for the session, then expire.
EPHEMERAL_TTL = timedelta(hours=getattr(settings, "MEMORY_EPHEMERAL_TTL_HOURS", 24))
SELF_ROLES = {"user"}
# Errors that say the database (not an event) is in trouble: the whole job waits and retries.
TRANSIENT = (OperationalError, InterfaceError)


@dataclass
class Prepared:
    """One claimed event, with everything computed before the write transaction."""

    event: Event
    claim: datetime
    content: str
    secret_kinds: list[str]
    untrusted: bool
    instruction_like: bool
    ephemeral: bool
    candidates: list[Candidate] = field(default_factory=list)
    extractor_version: str = RULES_VERSION
    clause_vectors: list | None = None  # its content's clauses, embedded (memoryapp/clauses.py)

    @property
    def episode_statement(self) -> str:
        speaker = self.event.speaker.strip()
        return f"{speaker}: {self.content}" if speaker else self.content

    @property
    def quarantined(self) -> bool:
        """Held back until an admin looks: untrusted input, and instructions from anyone but the
        user themself. An admin's release (services/quarantine.py) is for good."""
        if "released" in (self.event.flags or []):
            return False
        return self.event.quarantined or self.untrusted or (self.instruction_like and self.event.role not in SELF_ROLES)

    @property
    def flags(self) -> list[str]:
        flags = list(self.event.flags or [])
        for flag, on in (("untrusted", self.untrusted), ("instruction_like", self.instruction_like),
                         ("secret_redacted", bool(self.secret_kinds))):
            if on and flag not in flags:
                flags.append(flag)
        return flags


# An event that keeps killing or failing its worker is given up on after this many claims,
# quarantined with the reason, so it never blocks the events after it.
# Fewer than a job's attempts (jobs.MAX_ATTEMPTS), so a poison event is given up within the
# job's attempts and the rest of its batch still goes through.
MAX_EVENT_ATTEMPTS = getattr(settings, "MEMORY_EVENT_MAX_ATTEMPTS", 3)


class PoisonEvent(ValueError):
    """An event that cannot be processed as stored: says what is wrong, in words."""


def event_namespace(event: Event) -> str:
    """The namespace an event's metadata asks for ("" when none). The API validates it at the
    door; rows stored before it did are refused here, one event at a time."""
    metadata = event.metadata if isinstance(event.metadata, dict) else {}
    namespace = metadata.get("namespace", "")
    if namespace is None or namespace == "":
        return ""
    if not isinstance(namespace, str) or len(namespace) > Memory._meta.get_field("namespace").max_length:
        raise PoisonEvent("metadata.namespace is not a namespace (a string of at most 300 characters)")
    return namespace.strip("/")


def _pending_ids(*, tenant: Tenant, job: Job) -> list[tuple]:
    """(event id, attempts so far) of the job's pending events, in the order they apply. (The
    caller has activated the tenant in its transaction.)"""
    return list(
        Event.objects.filter(tenant=tenant, job_id=job.id, status=Event.Status.PENDING)
        .order_by("subject_id", "occurred_at", "seq")
        .values_list("id", "attempts")
    )


def _claim(*, tenant: Tenant, ids: list) -> list[Event]:
    """pending -> processing for whichever of `ids` nobody else holds; returns those claimed.
    An event already claimed MAX_EVENT_ATTEMPTS times (its workers died or failed on it each
    time) is given up on instead: failed and quarantined, with the reason."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        events = list(
            # FOR NO KEY UPDATE: a claim excludes other workers but not the foreign-key checks of
            # a write that cites the event (KEY SHARE at its commit), which FOR UPDATE blocked, and
            # a write holding its subject's lock then deadlocked with this job waiting for that lock.
            Event.objects.select_for_update(skip_locked=True, of=("self",), no_key=True)
            .filter(tenant=tenant, id__in=ids, status=Event.Status.PENDING)
            .select_related("subject")
            .order_by("occurred_at", "seq")
        )
        exhausted = [e for e in events if e.attempts >= MAX_EVENT_ATTEMPTS]
        if exhausted:
            _give_up(tenant=tenant, events=exhausted,
                     reason=f"gave up after {MAX_EVENT_ATTEMPTS} attempts to process this event")
            events = [e for e in events if e.attempts < MAX_EVENT_ATTEMPTS]
        now = timezone.now()
        Event.objects.filter(id__in=[e.id for e in events], status=Event.Status.PENDING).update(
            status=Event.Status.PROCESSING, claimed_at=now, attempts=F("attempts") + 1
        )
    for event in events:
        event.status, event.claimed_at = Event.Status.PROCESSING, now
    return events


def _continuing_credentials(*, tenant: Tenant, events: list[Event]) -> tuple[set, set]:
    """Ids of the events whose sender's previous message (same subject, session and role, one
    or two messages back) stopped where a credential's value starts ("my bank PIN is" then
    "4821"), and ids of those whose previous message named a credential anywhere ("the bank PIN,
    I'll send it separately" then "4821"). The value alone looks like nothing, so it is only
    caught with what came before."""
    wanted = {(e.subject_id, e.seq - back) for e in events for back in (1, 2)}
    if not wanted:
        return set(), set()
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        earlier = Event.objects.filter(
            tenant=tenant, subject_id__in={s for s, _ in wanted}, seq__in={q for _, q in wanted},
        ).values_list("subject_id", "seq", "session_id", "role", "content")
        by_position = {(s, q): (session, role, content) for s, q, session, role, content in earlier}
    continuing, carried = set(), set()
    for event in events:
        previous = _own_previous(by_position, event)
        if previous is None:
            continue
        continues, carries = follows_credential(previous[2])
        if continues:
            continuing.add(event.pk)
        elif carries:
            carried.add(event.pk)
    return continuing, carried


def _own_previous(by_position: dict, event: Event) -> tuple | None:
    """The sender's own last message, one or two places back (a reply may stand between), from
    `by_position`: (subject, seq) -> (session, role, ...); None when neither place holds one."""
    for back in (1, 2):
        previous = by_position.get((event.subject_id, event.seq - back))
        if previous is not None and previous[:2] == (event.session_id, event.role):
            return previous
    return None


def _prepare(event: Event, extractor, *, continues: bool = False, carried: bool = False) -> Prepared:
    event_namespace(event)  # a poison event fails here, alone
    content, findings = redact_secrets(event.content, continues=continues, carried=carried)
    kinds = {f.kind for f in findings}
    if event.redacted and "released" not in (event.flags or []):
        # Redacted at append (services/events.py): the refusal is audited here, once, as if found here.
        kinds |= set(REDACTION_MARKER.findall(event.content))
    untrusted = not durable_types_allowed(event.source_kind)
    instruction_like = looks_like_instruction(content)
    prepared = Prepared(
        event=event, claim=event.claimed_at, content=content,
        secret_kinds=sorted(kinds), untrusted=untrusted,
        instruction_like=instruction_like, ephemeral=is_ephemeral(content),
    )
    # Trust: untrusted text is evidence only, and instruction-like text from anyone but the
    # user themself is never promoted (a tool result can carry a web page's injection).
    if untrusted or (instruction_like and event.role not in SELF_ROLES):
        return prepared
    if extractor is not None:
        prepared.candidates = extractor.extract(content, role=event.role)
        prepared.extractor_version = extractor.version
    else:
        prepared.candidates = extract_candidates(content, role=event.role)
    # Nothing carrying a secret marker becomes a durable memory, whatever the extractor said.
    prepared.candidates = [c for c in prepared.candidates if "[redacted" not in c.statement]
    return prepared


def _embed(prepared: list[Prepared], positions: dict | None = None):
    """One embedding batch for a chunk: each episode, its clauses (set on the Prepared), and
    each candidate fact. `positions`: the job's messages embedded so far (_withhold_suspected)."""
    texts = [p.episode_statement for p in prepared]
    texts += [c.statement for p in prepared for c in p.candidates]
    clauses = [statement_clauses(p.content) for p in prepared]
    texts += [clause for found in clauses for clause in found]
    raw = embeddings.embed_texts(texts)
    vectors = embeddings.stored_vectors(raw)
    episode_vectors = {p.event.id: vectors[i] for i, p in enumerate(prepared)}
    i = len(prepared)
    candidate_vectors = {}
    for p in prepared:
        for c in p.candidates:
            candidate_vectors[id(c)] = vectors[i]
            i += 1
    for p, found in zip(prepared, clauses):
        p.clause_vectors = vectors[i:i + len(found)] or None
        i += len(found)
    _withhold_suspected(prepared, raw[:len(prepared)], episode_vectors, {} if positions is None else positions)
    return episode_vectors, candidate_vectors


def _withhold_suspected(prepared: list[Prepared], vectors, episode_vectors: dict, positions: dict) -> None:
    """Messages the rules let through but the classifier over their vector takes for a
    credential, and that hold something that could be its value (credential_classifier), are
    withheld whole: the content becomes the marker, nothing is extracted from it, and the
    episode is embedded again from the marker. Whatever the rules already redacted is left to
    them (its marker would skew the vector). Then the sender's next messages are read as
    continuations (_continuations_of). `positions` holds the job's messages embedded so far
    (chunks are embedded one after another, in order, by one thread)."""
    suspected = [p for p, vector in zip(prepared, vectors)
                 if not p.secret_kinds and suspects_credential(vector) and may_withhold(p.content)]
    for p in suspected:
        p.content, p.secret_kinds, p.candidates, p.clause_vectors = SUSPECTED_MARKER, [SUSPECTED], [], None
    changed = suspected + _continuations_of(prepared, positions)
    if not changed:
        return
    vectors = embeddings.stored_vectors(embeddings.embed_texts([p.episode_statement for p in changed]))
    episode_vectors.update((p.event.id, vector) for p, vector in zip(changed, vectors))


def _continuations_of(prepared: list[Prepared], positions: dict) -> list[Prepared]:
    """The sender's next message after a withheld one ("... starts with Copper" withheld, then
    "and ends with Kettle_71"), read again as continuing a credential, here or in an earlier
    chunk of the job; a message whose value was cut at its end carries the chain on. (Once a
    withheld message is stored, _continuing_credentials finds its marker at claim time; the
    next chunk is claimed before this one is written.) Records each message in `positions`,
    (subject, seq) -> (session, role, withheld), and returns those whose content changed
    (their facts are dropped with the value)."""
    changed = []
    for p in sorted(prepared, key=lambda p: (p.event.subject_id, p.event.seq)):
        event = p.event
        withheld = p.secret_kinds == [SUSPECTED]
        previous = None if withheld else _own_previous(positions, event)
        if previous is not None and previous[2]:
            content, findings = redact_secrets(event.content, continues=True)
            if findings and content != p.content:
                p.content = content
                p.secret_kinds = sorted({f.kind for f in findings} | set(p.secret_kinds))
                p.candidates, p.clause_vectors = [], None
                changed.append(p)
                withheld = ends_with_credential_word(content)  # "... and the rest is [redacted …]"
        positions[(event.subject_id, event.seq)] = (event.session_id, event.role, withheld)
    return changed


def _episode(*, tenant: Tenant, p: Prepared, vector) -> Memory:
    event = p.event
    return Memory(
        tenant=tenant,
        subject_id=event.subject_id,
        memory_type=Memory.Type.EPISODIC,
        namespace=event_namespace(event),
        statement=p.episode_statement,
        source_kind=event.source_kind,
        source_event=event,
        confidence=1.0 if not p.untrusted else 0.5,
        importance=0.6 if p.candidates else (0.2 if p.ephemeral else 0.4),
        valid_from=event.occurred_at,
        expires_at=event.occurred_at + EPHEMERAL_TTL if p.ephemeral else None,
        metadata={"session_id": event.session_id, "speaker": event.speaker, "role": event.role,
                  "event_id": event.event_id, "seq": event.seq},
        flags=[f for f in p.flags if f != "secret_redacted"],
        # No agent reads a quarantined event's episode until an admin releases the event.
        status=Memory.Status.QUARANTINED if p.quarantined else Memory.Status.ACTIVE,
        content_hash=content_hash(p.episode_statement),
        embedding=vector,
        clause_embeddings=p.clause_vectors,
        embedding_version=embeddings.EMBEDDING_VERSION,
        extractor_version=p.extractor_version,
    )


# One statement per event: its episode, unless a durable memory drawn from the same event is
# still current (three statements a supersession cost ~3.8 ms of a chat job's write).
# Written so that the planner reads the episode by event (migration 0018), and the durable
# memories through that event's evidence, whatever the tables' statistics say. Each of these
# made it read the tenant's whole range of memory_scope_idx instead, a cost that grows with the
# tenant (tests/workers/test_retire_plan.py):
# - the events as a subquery (semi-join or InitPlan), or an array of two or more, with no
#   statistics yet (a new service);
# - the tenant as a literal, with statistics taken before the tenant had rows (its first import):
#   they put an unknown tenant's range at about no rows. As `(SELECT %(tenant)s)` it is a
#   parameter, estimated as an average tenant's share;
# - the durable memory as a plain join of the evidence: with statistics that put the tenant at a
#   few rows, the planner read the tenant's range of the primary key once and filtered it by id
#   (3,000 rows for one event, seen in the suite). A lateral lookup (OFFSET 0 keeps it one) is
#   by the whole key.
_RETIRE_EPISODES = """
UPDATE memoryapp_memory m SET status = %(superseded)s, valid_to = %(at)s, superseded_by_id = %(successor)s
WHERE m.tenant_id = (SELECT %(tenant)s::bigint) AND m.source_event_id = ANY(%(events)s)
  AND m.memory_type = %(episodic)s AND m.status = %(active)s
  AND NOT EXISTS (
      SELECT 1 FROM memoryapp_memoryevidence ev
      CROSS JOIN LATERAL (SELECT 1 FROM memoryapp_memory d
                          WHERE d.tenant_id = ev.tenant_id AND d.id = ev.memory_id
                            AND d.status = %(active)s AND NOT d.erasing AND d.memory_type <> %(episodic)s
                          OFFSET 0) d
      WHERE ev.tenant_id = m.tenant_id AND ev.event_id = m.source_event_id)
RETURNING m.id
"""


# Which of a chunk's events already have their episode (a retried chunk): one probe per event
# (OFFSET 0 keeps the EXISTS a per-event subplan), read through memory_episode_of_event_idx.
# With statistics that did not know the tenant yet (its first import), the ORM's IN list, and
# this probe with the tenant a literal, read the tenant's whole range of memories through the
# primary key instead, a cost that grows with the tenant; with the tenant as `(SELECT ...)` the
# planner took the event's index (tests/workers/test_unknown_tenant_plans.py). Observed, like
# _RETIRE_EPISODES above, not derived: check the test before copying the form elsewhere.
_EVENTS_WITH_AN_EPISODE = """
SELECT e.id FROM unnest(%(events)s::uuid[]) AS e(id)
WHERE EXISTS (SELECT 1 FROM memoryapp_memory m
              WHERE m.source_event_id = e.id AND m.tenant_id = (SELECT %(tenant)s::bigint)
                AND m.memory_type = %(episodic)s
              OFFSET 0)
"""


def _events_with_an_episode(*, tenant: Tenant, event_ids: list) -> set:
    if not event_ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(_EVENTS_WITH_AN_EPISODE,
                       {"events": event_ids, "tenant": tenant.pk, "episodic": Memory.Type.EPISODIC})
        return {row[0] for row in cursor.fetchall()}


def _retire_episodes(*, tenant: Tenant, event_ids, successor: Memory, at: datetime, record, subject_ref: str) -> int:
    """An episode stating a value that no longer holds stops being current with it, so a
    current query does not find the old statement through its raw copy. Only when every
    durable memory drawn from that event is no longer current (one message may state two facts).
    Audited as one entry naming the episodes."""
    event_ids = sorted(set(event_ids))
    if not event_ids:
        return 0
    ids = []
    with connection.cursor() as cursor:
        for event_id in event_ids:
            cursor.execute(_RETIRE_EPISODES, {
                "superseded": Memory.Status.SUPERSEDED, "active": Memory.Status.ACTIVE,
                "episodic": Memory.Type.EPISODIC, "at": at, "successor": successor.pk, "tenant": tenant.pk,
                "events": [event_id]})
            ids.extend(row[0] for row in cursor.fetchall())
    ids.sort()
    if not ids:
        return 0
    record(tenant=tenant, actor=WORKER, action="episodes_superseded", subject_ref=subject_ref,
           details={"memory_ids": [f"mem_{i.hex}" for i in ids], "superseded_by": successor.public_id})
    return len(ids)


def _draft(p: Prepared, c: Candidate) -> MemoryDraft:
    event = p.event
    source_kind = event.source_kind
    if c.explicit and source_kind == "user":
        # "Please remember that ..." is the user asking explicitly.
        source_kind = "user_explicit"
    namespace = "/".join(x for x in (event_namespace(event), c.namespace.strip("/")) if x)
    return MemoryDraft(
        statement=c.statement, memory_type=c.memory_type, namespace=namespace, source_kind=source_kind,
        key=c.key, confidence=c.confidence, importance=c.importance, sensitivity=c.sensitivity,
        valid_from=event.occurred_at, source_event=event,
        metadata={"kind": c.kind, "value": c.value, "decision": c.decision, "speaker": event.speaker,
                  "session_id": event.session_id},
        extractor_version=p.extractor_version,
    )


@transaction.atomic
def _apply_chunk(*, tenant: Tenant, prepared: list[Prepared], episode_vectors, candidate_vectors,
                 totals: Counter) -> None:
    """Write claimed events in one transaction (a write of at most WRITE_CHUNK_SIZE). Assumes
    the claims were taken by _claim(); an event whose claim
    changed since (the sweeper reset it and another worker took it) is left to that worker.

    Events apply in (occurred_at, seq) order, each candidate through the write policy exactly as
    memory_write would (MemoryWriteBatch); the chunk's audit entries are appended at the end."""
    tenant_activate(tenant=tenant)
    current = {
        e.id: e for e in Event.objects.select_for_update(no_key=True).filter(  # see _claim
            tenant=tenant, id__in=[p.event.id for p in prepared], status=Event.Status.PROCESSING,
        )
    }
    mine = [p for p in prepared if p.event.id in current and current[p.event.id].claimed_at == p.claim]
    totals["skipped_claimed_elsewhere"] += len(prepared) - len(mine)
    if not mine:
        return
    audit = AuditBuffer(tenant=tenant)
    batch = MemoryWriteBatch(tenant=tenant, record=audit.record)
    # The subjects' row locks first (memory_write's lock, held once for the write), so an
    # erasure cannot start between this check and the writes.
    subjects = batch.lock_subjects(subject_ids={p.event.subject_id for p in mine})
    erasing = {s.pk for s in subjects if s.status == Subject.Status.ERASING}
    live = [p for p in mine if p.event.subject_id not in erasing]
    have_episode = _events_with_an_episode(tenant=tenant, event_ids=[p.event.id for p in live])
    episodes = [_episode(tenant=tenant, p=p, vector=episode_vectors[p.event.id])
                for p in live if p.event.id not in have_episode]
    bulk_insert(Memory, episodes)  # bulk_create's VALUES cost ~0.3 ms of client CPU per episode
    MemoryEvidence.objects.bulk_create(
        [MemoryEvidence(tenant=tenant, memory=m, event_id=m.source_event_id) for m in episodes], ignore_conflicts=True
    )
    totals["episodic"] += len(episodes)
    # After the episodes: memory_write would find them too (a candidate may repeat one word for word).
    batch.prefetch(subject_ids={p.event.subject_id for p in live},
                   drafts=[_draft(p, c) for p in live for c in p.candidates])

    now = timezone.now()
    processed: list[tuple] = []
    for p in mine:
        event = p.event
        if p.secret_kinds:
            audit.record(
                tenant=tenant, actor=WORKER, action="secret_redacted", subject_ref=event.subject.external_id,
                target=event.public_id, details={"kinds": p.secret_kinds},
            )
            totals["redacted"] += 1
        if event.subject_id in erasing:
            totals["skipped_erasing"] += 1
        else:
            _apply_candidates(tenant=tenant, p=p, batch=batch, candidate_vectors=candidate_vectors, totals=totals,
                              record=audit.record)
        # An admin's release (services/quarantine.py) takes the event out of quarantine for good;
        # its content keeps its trust label, so untrusted text still never becomes a durable fact.
        totals["quarantined"] += int(p.quarantined and not event.quarantined)
        processed.append((event.pk, p.content, event.redacted or bool(p.secret_kinds), p.quarantined, p.flags))
        totals["processed"] += 1
    _mark_processed(tenant=tenant, rows=processed, at=now)
    # Every memory that appears has an entry: the episodes, one entry per subject naming them
    # (the facts have their own memory_written entries).
    for subject in subjects:
        theirs = [p for p in mine if p.event.subject_id == subject.pk]
        if not theirs:
            continue
        written = [m for m in episodes if m.subject_id == subject.pk]
        audit.record(
            tenant=tenant, actor=WORKER, action="events_extracted", subject_ref=subject.external_id,
            subject_row_id=subject.pk,
            details={"events": len(theirs), "episodic": len(written),
                     "memory_ids": [m.public_id for m in written if m.status == Memory.Status.ACTIVE],
                     "quarantined_memory_ids": [m.public_id for m in written if m.status == Memory.Status.QUARANTINED]},
        )
    audit.flush()


def _mark_processed(*, tenant: Tenant, rows: list[tuple], at: datetime) -> None:
    """One UPDATE for a write's events, each row (id, content, redacted, quarantined, flags).
    Assumes their rows are locked by the caller's transaction. (bulk_update would build a CASE
    per field and row, which costs more Python time than the statement takes to run.)"""
    values = ", ".join(["(%s::uuid, %s::text, %s::boolean, %s::boolean, %s::jsonb)"] * len(rows))
    params = [x for pk, content, redacted, quarantined, flags in rows
              for x in (pk, content, redacted, quarantined, json.dumps(flags))]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Event._meta.db_table} AS e SET status = %s, processed_at = %s, error = '', "
            "content = v.content, redacted = v.redacted, quarantined = v.quarantined, flags = v.flags "
            f"FROM (VALUES {values}) AS v (id, content, redacted, quarantined, flags) "
            "WHERE e.id = v.id AND e.tenant_id = %s",
            [Event.Status.PROCESSED, at, *params, tenant.pk],
        )


def _apply_candidates(*, tenant: Tenant, p: Prepared, batch: MemoryWriteBatch, candidate_vectors,
                      totals: Counter, record) -> None:
    subject_ref = p.event.subject.external_id
    for c in p.candidates:
        draft = _draft(p, c)
        try:
            result = batch.write(subject=p.event.subject, subject_ref=subject_ref, draft=draft, actor=WORKER,
                                 embedding=candidate_vectors[id(c)])
        except PolicyRejected:
            totals["refused"] += 1
            continue
        memory = result.memory
        if not result.created:
            totals["reinforced"] += 1
            continue
        totals[memory.memory_type] += 1
        totals["conflicts"] += len(result.conflicts)
        retired = 0
        if memory.status == Memory.Status.SUPERSEDED:
            # A late older value: its episode is history too.
            totals["history"] += 1
            retired += _retire_episodes(tenant=tenant, event_ids=[p.event.id], successor=memory.superseded_by or memory,
                                        at=memory.valid_to or memory.valid_from, record=record, subject_ref=subject_ref)
        if result.superseded:
            # The events every value it replaces was drawn from, in one query for them all.
            totals["superseded"] += len(result.superseded)
            old_events = MemoryEvidence.objects.filter(
                tenant=tenant, memory_id__in=[old.pk for old in result.superseded]).values_list("event_id", flat=True)
            superseded = _retire_episodes(tenant=tenant, event_ids=old_events, successor=memory, at=memory.valid_from,
                                          record=record, subject_ref=subject_ref)
            totals["episodes_superseded"] += superseded
            retired += superseded
        if retired:
            batch.recheck_episodes()


def failure_reason(exc: Exception) -> str:
    """What went wrong with one event, in words a caller can act on: never an exception class or
    a traceback (those go to the log, with the event's id)."""
    if isinstance(exc, (PoisonEvent, ApplicationError)):
        return str(exc) if isinstance(exc, PoisonEvent) else exc.message
    if isinstance(exc, DataError):
        return "a value of this event is too long or malformed to be stored"
    return "an internal error while processing this event (logged with its id)"


def _give_up(*, tenant: Tenant, events: list[Event], reason: str) -> None:
    """Fail events for good, each alone: quarantined with the reason, for an admin to look at
    (release retries them, discard drops them), never retried by the pipeline again. Call
    inside the tenant's transaction, with the events' rows locked."""
    now = timezone.now()
    for event in events:
        flags = [*(event.flags or []), "failed"] if "failed" not in (event.flags or []) else event.flags
        Event.objects.filter(tenant=tenant, pk=event.pk).update(
            status=Event.Status.FAILED, quarantined=True, error=reason[:500], flags=flags, processed_at=now,
            claimed_at=None,
        )
        audit_record(tenant=tenant, actor=WORKER, action="event_failed", subject_ref=event.subject.external_id,
                     subject_row_id=event.subject_id, target=event.public_id, details={"reason": reason[:500]})


def _fail(*, tenant: Tenant, p: Prepared, exc: Exception) -> None:
    """One event failed on its own (its neighbours were written without it)."""
    logger.warning("extraction of %s failed", p.event.public_id, exc_info=exc)
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        event = (Event.objects.select_for_update(no_key=True).select_related("subject")
                 .filter(pk=p.event.pk, status=Event.Status.PROCESSING, claimed_at=p.claim).first())
        if event is not None:
            _give_up(tenant=tenant, events=[event], reason=failure_reason(exc))


def _heartbeat(*, tenant: Tenant, job: Job) -> int:
    """Report progress; touching updated_at is what tells the sweeper this job is alive. (One
    count and one update: a job of one event, the usual job under light load, ran it twice in
    five statements each, a fifth of the job's time.)"""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        counts = Event.objects.filter(tenant=tenant, job_id=job.id).aggregate(
            total=Count("pk"), done=Count("pk", filter=~Q(status__in=[Event.Status.PENDING, Event.Status.PROCESSING])))
        job_progress(job_id=job.id, done=counts["done"], total=counts["total"], token=job.started_at)
    return counts["done"]


def _claim_and_embed(*, tenant: Tenant, ids: list, extractor, embedder: ThreadPoolExecutor, totals: Counter,
                     positions: dict):
    """Claim and prepare a chunk here, and start embedding it in `embedder`'s thread."""
    claimed = _claim(tenant=tenant, ids=ids)
    totals["claimed"] += len(claimed)
    try:
        prepared = []
        continuing, carried = _continuing_credentials(tenant=tenant, events=claimed)
        for event in claimed:
            try:
                prepared.append(_prepare(event, extractor, continues=event.pk in continuing,
                                         carried=event.pk in carried))
            except TRANSIENT:
                raise
            except Exception as exc:  # a poison event fails alone; the others go on
                totals["failed"] += 1
                _fail(tenant=tenant, p=Prepared(event=event, claim=event.claimed_at, content="", secret_kinds=[],
                                                untrusted=False, instruction_like=False, ephemeral=False), exc=exc)
    except BaseException:
        # Nobody else would hand these back before the stale-claim window.
        _release(tenant=tenant, claims=[(e.pk, e.claimed_at) for e in claimed])
        raise
    return prepared, (embedder.submit(_embed, prepared, positions) if prepared else None)


def _release(*, tenant: Tenant, claims: list[tuple]) -> None:
    """Hand claimed but unwritten events back (processing -> pending), so the job's retry or the
    sweeper picks them up at once rather than after the stale-claim window. `claims`: (event
    pk, claim token) pairs; only events still under that claim move (those a write already
    committed are processed and stay so). The attempt is not counted against them: whatever
    failed here was not pinned on one of them (each event's own failures are caught and fail it
    alone), so only a worker's death, which runs no release, leaves attempts counted. If even
    this fails (the database is gone), the sweeper resets them."""
    by_token: dict = {}
    for pk, token in claims:
        by_token.setdefault(token, []).append(pk)
    try:
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            for token, pks in by_token.items():  # one token per _claim call
                Event.objects.filter(pk__in=pks, status=Event.Status.PROCESSING, claimed_at=token).update(
                    status=Event.Status.PENDING, claimed_at=None, attempts=Greatest(F("attempts") - 1, 0),
                )
    except Exception:  # noqa: BLE001 - best effort on a failure path; the original error is re-raised
        logger.warning("could not release %d claimed events; the sweeper will", len(claims), exc_info=True)


def _write_chunk(*, tenant: Tenant, prepared: list[Prepared], episode_vectors, candidate_vectors,
                 totals: Counter) -> None:
    # Counts are merged only for what committed (a rolled-back chunk counted nothing).
    chunk_totals: Counter = Counter()
    try:
        _apply_chunk(tenant=tenant, prepared=prepared, episode_vectors=episode_vectors,
                     candidate_vectors=candidate_vectors, totals=chunk_totals)
        totals.update(chunk_totals)
    except TRANSIENT:
        raise
    except Exception as exc:
        # One bad event must not block its neighbours: retry them one by one.
        logger.warning("extraction chunk failed (%s); retrying event by event", type(exc).__name__)
        for p in prepared:
            one: Counter = Counter()
            try:
                _apply_chunk(tenant=tenant, prepared=[p], episode_vectors=episode_vectors,
                             candidate_vectors=candidate_vectors, totals=one)
                totals.update(one)
            except TRANSIENT:
                raise
            except Exception as one_exc:
                totals["failed"] += 1
                _fail(tenant=tenant, p=p, exc=one_exc)


def _chunks(ids: list, size: int) -> list[list]:
    """Chunks of at most `size` events, near-equal (65 events are not 64 + 1), except that
    the job's last WRITE_CHUNK_SIZE events are a chunk of their own: nothing is embedded beside
    the last chunk's write, so keeping that write short keeps the model busy for more of the job."""
    if len(ids) <= WRITE_CHUNK_SIZE or size <= WRITE_CHUNK_SIZE:
        return [ids[start:start + size] for start in range(0, len(ids), size)]
    head, tail = ids[:-WRITE_CHUNK_SIZE], ids[-WRITE_CHUNK_SIZE:]
    count = -(-len(head) // size)
    bounds = [len(head) * i // count for i in range(count + 1)]
    return [head[a:b] for a, b in zip(bounds, bounds[1:])] + [tail]


def _isolating_chunks(pending: list[tuple], size: int) -> list[tuple[list, bool]]:
    """(ids, suspect) chunks in the order the events apply. An event claimed before without its
    attempt ending (its worker died: a poison event may be what killed it) gets a chunk of its
    own, so whatever kills a worker next time kills it alone and its neighbours go on; the
    others are chunked as usual (_chunks)."""
    chunks: list[tuple[list, bool]] = []
    run: list = []
    for event_id, attempts in pending:
        if attempts:
            chunks += [(c, False) for c in _chunks(run, size)] + [([event_id], True)]
            run = []
        else:
            run.append(event_id)
    return chunks + [(c, False) for c in _chunks(run, size)]


def _embed_each(tenant: Tenant, prepared: list[Prepared], totals: Counter, positions: dict):
    """The chunk's embedding failed as a whole: embed event by event, and fail alone the events
    whose text the model cannot take. Returns the events left and their vectors."""
    kept, episode_vectors, candidate_vectors = [], {}, {}
    for p in prepared:
        try:
            episodes, candidates = _embed([p], positions)
        except TRANSIENT:
            raise
        except Exception as exc:  # the model refuses this text
            totals["failed"] += 1
            _fail(tenant=tenant, p=p, exc=exc)
            continue
        kept.append(p)
        episode_vectors.update(episodes)
        candidate_vectors.update(candidates)
    return kept, episode_vectors, candidate_vectors


def extraction_job_run(*, tenant: Tenant, job: Job) -> dict:
    """Run an extraction job: every pending event of `job`, in chunks. Called by jobs.job_run
    after it claimed the job; safe to run again (only pending events are claimed).

    Two chunks are in flight: while this thread writes chunk N (in transactions of
    WRITE_CHUNK_SIZE events), a second thread embeds chunk N+1 (claimed just before; torch
    releases the GIL, so the model's cores and the database's round trips overlap). Chunks are
    still written one after another, in order; a worker killed meanwhile leaves what it had
    claimed and not yet committed for the sweeper."""
    with findings_kept(), SubjectsInTurn(tenant=tenant, job=job) as turn:
        return _run_job(tenant=tenant, job=job, turn=turn)


# How long a job waits for another job of its subject to finish. Far longer than a job takes (at
# most 1,000 events, seconds); past it the attempt fails as a database error and the job is
# retried, so a holder that never lets go (a worker host gone without closing its connection,
# until the server's TCP keepalive notices) costs attempts, not a worker forever.
SUBJECT_WAIT = timedelta(seconds=getattr(settings, "MEMORY_SUBJECT_WAIT_SECONDS", 600))


def subject_lock_key(*, tenant_id: int, subject_id) -> str:
    """The text whose hash (hashtextextended) is a subject's extraction advisory lock."""
    return f"extraction:{tenant_id}:{subject_id}"


class SubjectsInTurn:
    """Hold the job's subjects against any other extraction job of theirs, for the whole job,
    so that with several worker processes a subject's jobs still run one after another: a later
    job must not write a subject's events while an earlier one is still reading theirs (a message
    continuing a credential is read with the one before it, as that job left it). Session-level
    advisory locks, taken in one order (no deadlock), waited for in PostgreSQL's queue (first
    come, first served, for at most SUBJECT_WAIT) and released at the end; a worker that dies
    loses its connection and with it the locks. A worker process waiting for a subject does
    nothing else meanwhile. The job's heartbeat goes on while it waits."""

    def __init__(self, *, tenant: Tenant, job: Job):
        self.tenant, self.job = tenant, job
        self.keys: list[str] = []
        self.held: list[str] = []
        self.session = None
        self.pending: list[tuple] = []  # _pending_ids, read once the subjects are held

    def __enter__(self):
        try:
            # One transaction reads the subjects, waits for them, then reads the job's pending
            # events as the jobs before it left them (three round trips of BEGIN and COMMIT were
            # most of a one-event job's fixed cost).
            with transaction.atomic():
                tenant_activate(tenant=self.tenant)
                subject_ids = sorted(set(
                    Event.objects.filter(tenant=self.tenant, job_id=self.job.id, status=Event.Status.PENDING)
                    .values_list("subject_id", flat=True)))
                self.keys = [subject_lock_key(tenant_id=self.tenant.pk, subject_id=s) for s in subject_ids]
                self._take()
                self.pending = _pending_ids(tenant=self.tenant, job=self.job)
        except BaseException:
            # A session's advisory lock outlives the rollback of the transaction that took it.
            self.__exit__(None, None, None)
            raise
        return self

    def _take(self) -> None:
        self.held = []
        # (inside __enter__'s transaction, no savepoint: nothing here is rolled back alone)
        with transaction.atomic(savepoint=False), connection.cursor() as cursor:
            # The worker's lock timeout is for row locks; this wait has its own bound (until the
            # outermost transaction ends, which __enter__'s does right after reading).
            cursor.execute("SELECT set_config('lock_timeout', %s, true)",
                           [f"{int(SUBJECT_WAIT.total_seconds() * 1000)}ms"])
            self.session = connection.connection  # the client side of the connection holding them
            for key in self.keys:
                self.held.append(key)  # before: an interrupted wait is released too (a spare unlock only warns)
                cursor.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])

    def keep(self) -> None:
        """Take the locks again if the connection that held them was replaced (Django reopens a
        connection a failed transaction closed): a lock belongs to its connection."""
        if not self.keys:
            return
        # Django makes a new client connection when it replaces one; the same one is the same
        # session. (A session the server ended is noticed by the next statement, which fails.)
        if connection.connection is self.session:
            return
        logger.warning("job %s lost its connection and its subjects' locks; taking them again", self.job.public_id)
        self._take()

    def __exit__(self, *exc_info):
        try:
            with connection.cursor() as cursor:
                for key in reversed(self.held):
                    cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])
        except TRANSIENT:  # the connection is gone, and its locks with it
            logger.warning("could not release the subjects of job %s; their connection is gone", self.job.public_id)
        return False


def _run_job(*, tenant: Tenant, job: Job, turn: SubjectsInTurn) -> dict:
    extractor = extractor_for_settings()
    totals: Counter = Counter()
    pending = turn.pending
    chunks = _isolating_chunks(pending, CHUNK_SIZE if extractor is None else LLM_CHUNK_SIZE)
    seconds: Counter = Counter()
    positions: dict = {}  # the job's messages as embedded (_continuations_of)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="extraction-embed") as embedder:
        def start(chunk):
            return _claim_and_embed(tenant=tenant, ids=chunk[0], extractor=extractor, embedder=embedder, totals=totals,
                                    positions=positions)

        ahead = None
        prepared: list[Prepared] = []
        done = None  # the last heartbeat's count, while nothing has changed since it
        try:
            for index, chunk in enumerate(chunks):
                clock = time.perf_counter()
                done = None
                prepared, embedding = ahead or start(chunk)
                ahead = None
                following = chunks[index + 1] if index + 1 < len(chunks) else None
                # No claiming ahead next to a suspect: a worker it kills must hold nothing else.
                if following is not None and not chunk[1] and not following[1]:
                    ahead = start(following)
                seconds["claim"] += time.perf_counter() - clock
                if not prepared:
                    continue
                clock = time.perf_counter()
                try:
                    episode_vectors, candidate_vectors = embedding.result()
                except TRANSIENT:
                    raise
                except Exception:
                    logger.warning("embedding a chunk failed; embedding its events one by one", exc_info=True)
                    prepared, episode_vectors, candidate_vectors = _embed_each(tenant, prepared, totals, positions)
                seconds["embed_wait"] += time.perf_counter() - clock
                clock = time.perf_counter()
                for start_at in range(0, len(prepared), WRITE_CHUNK_SIZE):
                    _write_chunk(tenant=tenant, prepared=prepared[start_at:start_at + WRITE_CHUNK_SIZE],
                                 episode_vectors=episode_vectors, candidate_vectors=candidate_vectors,
                                 totals=totals)
                    done = _heartbeat(tenant=tenant, job=job)
                    turn.keep()
                prepared = []
                seconds["write"] += time.perf_counter() - clock
        except BaseException:
            # What this chunk had not committed (the failed write transaction rolled back, and
            # the writes after it) and the chunk claimed ahead go back to pending now; earlier
            # write transactions stay committed.
            unwritten = prepared + (ahead[0] if ahead else [])
            _release(tenant=tenant, claims=[(p.event.pk, p.claim) for p in unwritten])
            raise
    if done is None:  # (after the last chunk's write, its heartbeat already said it all)
        done = _heartbeat(tenant=tenant, job=job)
    # Where the job's time went: a large embed_wait means the model is the bottleneck, a large
    # write the database (the embedding of the next chunk runs during the write).
    logger.info("extraction job %s: %d events; seconds %s", job.public_id, len(pending),
                {k: round(v, 2) for k, v in seconds.items()})
    return {"events": len(pending), "done": done, **{k: v for k, v in sorted(totals.items()) if v}}
