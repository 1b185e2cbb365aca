"""Erasure: the deletion job behind `DELETE subjects/{subject}` and `DELETE memories/{id}`.

The request services (subject_erase_request, memory_forget) have already marked everything
(`Subject.status = erasing`, `Memory.erasing = True`), so nothing doomed is returned or written
again while this job deletes it in batches, each batch its own transaction. A crash between
batches loses nothing: the marks stay, and a rerun continues where it stopped. A rerun after
success finds nothing and succeeds.

What goes, per scope:

- subject: its events, memories (with their derived summaries and merges, which belong to the
  same subject), evidence and lineage links (embeddings are columns of the memory rows), read
  audit rows, idempotency records, export files, sign-in links, console accounts (and their
  Django users; admins are kept), the subject's non-deletion jobs, cache keys, audit payloads
  (blanked: the log keeps that the erasure happened, never the content), finally the Subject
  row itself, so its id can be reused cleanly. API keys bound to the subject id survive: they
  belong to the tenant's integration, not to the person.
- memory: the memory, everything derived from it (the ids the request put in the params),
  their evidence and lineage links, their ids in read-audit rows, idempotency records whose
  stored answer names them, the subject's export files (each one holds the forgotten memory)
  and their audit payloads. Source events stay, because other memories may cite them, except
  the events of an episodic memory that nothing else cites: such an event is the memory (their
  ids are kept in the job's params, so a rerun after the memories went still finds them).

The receipt (the job's result) counts what was removed by kind and reports a verification that
looks for what should be gone, by id and by content; it never holds the content itself.
"""
import json
import logging
import re
import uuid

import ahocorasick
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q

from memoryapp.models import (
    ConsoleAccount, Event, ExportFile, IdempotencyRecord, Job, Memory, MemoryEvidence,
    MemoryChange, MemoryLineage, ReadAudit, SignInLink, Subject, Tenant,
    TenantRoute,
)
from memoryapp.services.audit import audit_record, audit_redact
from memoryapp.services.jobs import job_progress
from memoryapp.sqlarrays import uuid_array, uuid_hex_array
from memoryapp.sqlpatterns import like_escape
from memoryapp.actors import Actor
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

# Memories (or events) deleted per transaction. Each transaction commits (a WAL flush) and seals
# its audit entry; 2,000 rows of set-based statements hold their locks well under a second.
BATCH_SIZE = 2000
ERASURE_ACTOR = Actor("worker", "erasure")
# Content shorter than this is not searched for: "ok" or "yes" would be found everywhere.
MIN_SEARCH_LENGTH = 8
# The verification searches every captured string up to this many (the longest first): a
# subject at the default cap (10,000 memories and their events) is searched whole. The copy
# checks of a forget match by ILIKE and take the longest MAX_LIKE_PATTERNS of them.
MAX_SEARCH_STRINGS = 20000
MAX_LIKE_PATTERNS = 2000
# A memory this close (cosine) to a forgotten one says the same thing in other words: a copy.
NEAR_COPY_SIMILARITY = 0.95

RECEIPT_KINDS = (
    "events", "memories", "derived_memories", "evidence_links", "lineage_links", "embeddings",
    "memory_changes", "read_audit_rows", "read_audit_refs", "idempotency_records", "export_files", "signin_links",
    "console_accounts", "jobs", "cache_keys", "audit_payloads_redacted", "subjects",
)


def subject_cache_keys(*, tenant_id: int, subject_ref: str) -> list[str]:
    """Every Django cache key that may hold something about a subject. The service caches
    nothing per subject today; code that starts to must name its keys here, so erasure
    removes them."""
    return [f"memory:profile:{tenant_id}:{subject_ref}"]


def erasure_job_run(*, tenant: Tenant, job: Job) -> dict:
    """Run one deletion job (claimed by job_run). Owns its transactions: one per batch."""
    scope = (job.params or {}).get("scope", "subject")
    if scope == "subject" and _subject_recreated(tenant=tenant, job=job):
        # A rerun of an old erasure after the id was reused: the new subject is someone else.
        return {"scope": scope, "removed": _zero_counts(),
                "verification": {"passed": True, "checked": [], "residue": {},
                                 "note": "the subject id was reused after this erasure; nothing was touched"}}
    if scope == "memory":
        counts, captured, ids = _erase_memories(tenant=tenant, job=job)
    elif scope == "subject":
        counts, captured, ids = _erase_subject(tenant=tenant, job=job)
    else:
        raise ValueError(f"unknown erasure scope {scope!r}")
    verification = erasure_verify(
        tenant=tenant, subject_ref=job.subject_ref, subject_row_id=_erased_row(job), scope=scope, texts=captured, **ids
    )
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        audit_record(
            tenant=tenant, actor=ERASURE_ACTOR, action="erasure_completed", subject_ref=job.subject_ref,
            subject_row_id=_erased_row(job), target=job.public_id,
            details={"scope": scope, "removed": counts, "verified": verification["passed"]},
        )
    receipt = {
        # No subject id here: the job row already names it, and the receipt is counts only.
        "scope": scope,
        "removed": counts,
        "verification": verification,
    }
    kept = _kept(tenant=tenant, job=job)
    if kept is not None:
        receipt["kept"] = kept
    if not verification["passed"]:
        # The job still succeeds as a record of what it did; the receipt says the check failed.
        logger.error("erasure %s left residue: %s", job.public_id, verification["residue"])
    return receipt


def _kept(*, tenant: Tenant, job: Job) -> dict | None:
    """What a forget left on purpose: other memories drawn from the erased messages (the person
    asked to forget one thing, not everything said in the same breath)."""
    ids = (job.params or {}).get("kept_memory_ids")
    if ids is None:
        return None
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        still = Memory.objects.filter(tenant=tenant, pk__in=[uuid.UUID(i) for i in ids], erasing=False).count()
    return {"memories": still,
            "why": "other memories drawn from the erased messages; kept, and no longer linked to them"}


def _erased_row(job: Job) -> int | None:
    """The Subject row the erasure is about: recorded by a subject erasure's request, and by
    job_create for a forget (the memories' subject when it was asked)."""
    row = (job.params or {}).get("subject_row_id") if (job.params or {}).get("scope", "subject") == "subject" else None
    return int(row) if row is not None else job.subject_row_id


def _subject_recreated(*, tenant: Tenant, job: Job) -> bool:
    """Whether the subject id now belongs to someone new (an erasure rerun after the id was
    reused): then nothing keyed by the id string may be touched."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        others = Subject.objects.filter(tenant=tenant, external_id=job.subject_ref)
        row = _erased_row(job)
        if row is not None:
            return others.exclude(pk=row).exists()
        return others.exclude(status=Subject.Status.ERASING).exists()


def _zero_counts() -> dict:
    return {kind: 0 for kind in RECEIPT_KINDS}


def _capture(texts: set, values) -> None:
    for value in values:
        if isinstance(value, str) and len(value.strip()) >= MIN_SEARCH_LENGTH:
            texts.add(value.strip())


def _delete_memory_batch(*, tenant: Tenant, memory_ids: list, counts: dict, job: Job) -> None:
    """Delete memories and every link to them, with an audit entry naming them (ids only).
    Call inside the tenant's transaction.

    Set-based statements, not QuerySet.delete(): Django's collector loads every doomed row as an
    object (vector columns included) and cascades one relation at a time, which made a batch of
    500 cost seconds. The relations are those of the models (every foreign key to Memory:
    evidence, lineage both ways, changes, and the superseded_by / proposal_for pointers); the
    database's own foreign keys are deferred, so the order below only has to be complete by commit.
    """
    audit_record(tenant=tenant, actor=ERASURE_ACTOR, action="memories_erased", subject_ref=job.subject_ref,
                 subject_row_id=_erased_row(job), target=job.public_id,
                 details={"memory_ids": [f"mem_{uuid.UUID(str(i)).hex}" for i in memory_ids]})
    ids = uuid_array(memory_ids)
    memory, evidence, lineage, change = (model._meta.db_table for model in (
        Memory, MemoryEvidence, MemoryLineage, MemoryChange))
    with connection.cursor() as cursor:
        # Derived: linked to the memories it came from, or a session summary (linked to events only).
        cursor.execute(
            f"SELECT count(*) FILTER (WHERE m.embedding IS NOT NULL), "
            f"count(*) FILTER (WHERE m.metadata->>'kind' = 'session_summary' OR EXISTS ("
            f"  SELECT 1 FROM {lineage} l WHERE l.tenant_id = m.tenant_id AND l.derived_id = m.id)) "
            f"FROM {memory} m WHERE m.tenant_id = %s AND m.id = ANY(%s::uuid[])",
            [tenant.pk, ids],
        )
        embeddings, derived = cursor.fetchone()
        counts["embeddings"] += embeddings
        counts["derived_memories"] += derived
        cursor.execute(f"DELETE FROM {evidence} WHERE tenant_id = %s AND memory_id = ANY(%s::uuid[])",
                       [tenant.pk, ids])
        counts["evidence_links"] += cursor.rowcount
        cursor.execute(f"DELETE FROM {lineage} WHERE tenant_id = %s AND "
                       f"(derived_id = ANY(%s::uuid[]) OR source_id = ANY(%s::uuid[]))", [tenant.pk, ids, ids])
        counts["lineage_links"] += cursor.rowcount
        # Survivors that pointed at a doomed version lose only the pointer.
        for pointer in ("superseded_by_id", "proposal_for_id"):
            cursor.execute(f"UPDATE {memory} SET {pointer} = NULL WHERE tenant_id = %s AND {pointer} = ANY(%s::uuid[]) "
                           f"AND NOT (id = ANY(%s::uuid[]))", [tenant.pk, ids, ids])
        # What each version was before its changes (known_at) goes with it.
        cursor.execute(f"DELETE FROM {change} WHERE tenant_id = %s AND memory_id = ANY(%s::uuid[])", [tenant.pk, ids])
        counts["memory_changes"] += cursor.rowcount
        cursor.execute(f"DELETE FROM {memory} WHERE tenant_id = %s AND id = ANY(%s::uuid[])", [tenant.pk, ids])
        counts["memories"] += cursor.rowcount
    counts["read_audit_refs"] += _read_audit_strip(tenant=tenant, memory_ids=memory_ids)
    counts["idempotency_records"] += _idempotency_delete_naming(tenant=tenant, memory_ids=memory_ids)


def _delete_events(*, tenant: Tenant, event_ids: list, counts: dict) -> None:
    """Delete events with their evidence links; memories that cite one as their source keep only
    a null pointer (as the model's SET_NULL says). Set-based, like _delete_memory_batch."""
    if not event_ids:
        return
    ids = uuid_array(event_ids)
    memory, evidence, event = (model._meta.db_table for model in (Memory, MemoryEvidence, Event))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {evidence} WHERE tenant_id = %s AND event_id = ANY(%s::uuid[])", [tenant.pk, ids])
        counts["evidence_links"] += cursor.rowcount
        cursor.execute(f"UPDATE {memory} SET source_event_id = NULL WHERE tenant_id = %s "
                       f"AND source_event_id = ANY(%s::uuid[])", [tenant.pk, ids])
        cursor.execute(f"DELETE FROM {event} WHERE tenant_id = %s AND id = ANY(%s::uuid[])", [tenant.pk, ids])
        counts["events"] += cursor.rowcount


def _read_audit_strip(*, tenant: Tenant, memory_ids: list) -> int:
    """Remove erased ids from read-audit arrays; returns how many ids were removed."""
    ids = uuid_array(memory_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH hit AS (
                SELECT id, cardinality(memory_ids) AS before FROM memoryapp_readaudit
                WHERE tenant_id = %s AND memory_ids && %s::uuid[]
            ), stripped AS (
                UPDATE memoryapp_readaudit r SET memory_ids = ARRAY(
                    SELECT x FROM unnest(r.memory_ids) x WHERE NOT (x = ANY(%s::uuid[]))
                )
                FROM hit WHERE r.id = hit.id
                RETURNING hit.before - cardinality(r.memory_ids) AS removed
            )
            SELECT COALESCE(SUM(removed), 0) FROM stripped
            """,
            [tenant.pk, ids, ids],
        )
        return int(cursor.fetchone()[0])


def _vector_text(vector) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in list(vector)) + "]"


# A stored answer names a memory by its public id (mem_<hex>) or, rarely, its UUID, in any case.
# Inside PostgreSQL, linear in the answers' text (the table is the tenant's, and can be large):
# every run of 32 or more hex digits and hyphens, lowercased and without its hyphens, is read as
# all its 32-digit windows, each compared with the erased ids (a hashed `= ANY`). So an id is
# found wherever its hex or dashed form appears, also right after other hex digits, as ILIKE
# '%id%' found it, without ILIKE's cost of answers x ids.
_NAMES_ANY_ID = (
    "EXISTS (SELECT 1 FROM regexp_matches(lower(t.response::text), '[0-9a-f-]{32,}', 'g') AS run(m) "
    "CROSS JOIN LATERAL (SELECT replace(run.m[1], '-', '') AS hex) h "
    "CROSS JOIN LATERAL generate_series(1, length(h.hex) - 31) AS k "
    "WHERE substr(h.hex, k, 32) = ANY(%s::text[]))"
)


def _idempotency_delete_naming(*, tenant: Tenant, memory_ids: list) -> int:
    if not memory_ids:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM memoryapp_idempotencyrecord t WHERE t.tenant_id = %s AND {_NAMES_ANY_ID}",
                       [tenant.pk, uuid_hex_array(memory_ids)])
        return cursor.rowcount


def text_automaton(strings):
    """An Aho-Corasick automaton of `strings`, lowercased, each also as it reads inside JSON (a
    quote, backslash or line break escaped: jsonb's text and the export files hold them so):
    text_contains then reads a text once, whatever the number of strings (ILIKE ANY read it
    once per string, and never found an escaped copy)."""
    automaton = ahocorasick.Automaton()
    for string in strings:
        automaton.add_word(string.lower(), True)
        in_json = json.dumps(string, ensure_ascii=False)[1:-1]
        if in_json != string:
            automaton.add_word(in_json.lower(), True)
    automaton.make_automaton()
    return automaton


def text_contains(automaton, text) -> bool:
    """Whether `text` contains, ignoring case, any string of the automaton."""
    if not isinstance(text, str) or not text:
        return False
    for _ in automaton.iter(text.lower()):
        return True
    return False


def _subject_idempotency_filter(subject_ref: str) -> Q:
    # The API's scope names the request path; the stored answer names the subject.
    return Q(scope__contains=f"/subjects/{subject_ref}/") | Q(scope__endswith=f"/subjects/{subject_ref}") | Q(
        response__subject=subject_ref
    )


def _erase_subject(*, tenant: Tenant, job: Job) -> tuple[dict, set, dict]:
    subject_ref = job.subject_ref
    counts = _zero_counts()
    captured: set = set()
    memory_ids: list = []
    event_ids: list = []
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = Subject.objects.filter(tenant=tenant, external_id=subject_ref,
                                         status=Subject.Status.ERASING).first()
        if subject is not None:
            total = Memory.objects.filter(tenant=tenant, subject=subject).count() + Event.objects.filter(
                tenant=tenant, subject=subject
            ).count()
            job_progress(job_id=job.id, done=0, total=total)
    done = 0
    if subject is not None:
        # Derived memories first: a batch never leaves a summary whose sources are gone.
        while True:
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                batch = list(
                    Memory.objects.filter(tenant=tenant, subject=subject)
                    .order_by("-recorded_at")
                    .values_list("id", "statement", "metadata")[:BATCH_SIZE]
                )
                if not batch:
                    break
                ids = [row[0] for row in batch]
                memory_ids += ids
                _capture(captured, (row[1] for row in batch))
                _delete_memory_batch(tenant=tenant, memory_ids=ids, counts=counts, job=job)
                done += len(ids)
                job_progress(job_id=job.id, done=done)
        while True:
            with transaction.atomic():
                tenant_activate(tenant=tenant)
                batch = list(
                    Event.objects.filter(tenant=tenant, subject=subject).order_by("seq").values_list(
                        "id", "content"
                    )[:BATCH_SIZE]
                )
                if not batch:
                    break
                ids = [row[0] for row in batch]
                event_ids += ids
                _capture(captured, (row[1] for row in batch))
                _delete_events(tenant=tenant, event_ids=ids, counts=counts)
                done += len(ids)
                job_progress(job_id=job.id, done=done)
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        readaudits = ReadAudit.objects.filter(tenant=tenant, subject_ref=subject_ref)
        counts["read_audit_rows"] += readaudits.delete()[0]
        counts["idempotency_records"] += IdempotencyRecord.objects.filter(
            _subject_idempotency_filter(subject_ref), tenant=tenant
        ).delete()[0]
        counts["export_files"] += ExportFile.objects.filter(tenant=tenant, subject_ref=subject_ref).delete()[0]
        links = SignInLink.objects.filter(tenant=tenant, subject_ref=subject_ref)
        # Their routes (kind, token hash -> tenant) go with them: nothing is left to find.
        TenantRoute.objects.filter(
            kind=TenantRoute.Kind.SIGNIN_LINK, tenant=tenant, lookup__in=links.values("token_hash")
        ).delete()
        counts["signin_links"] += links.delete()[0]
        # Other jobs about the subject may carry its event ids or counts; the deletion jobs stay
        # as the record of the erasure (they hold only the receipt).
        counts["jobs"] += (
            Job.objects.filter(tenant=tenant, subject_ref=subject_ref).exclude(kind=Job.Kind.DELETION).delete()[0]
        )
        accounts = ConsoleAccount.objects.filter(tenant=tenant, subject_ref=subject_ref, is_admin=False)
        user_ids = list(accounts.values_list("user_id", flat=True))
        counts["console_accounts"] += len(user_ids)
        get_user_model().objects.filter(pk__in=user_ids).delete()
        keys = subject_cache_keys(tenant_id=tenant.pk, subject_ref=subject_ref)
        counts["cache_keys"] += sum(1 for k in keys if cache.get(k) is not None)
        cache.delete_many(keys)
        row = subject.pk if subject is not None else _erased_row(job)
        if row is not None:
            counts["audit_payloads_redacted"] += audit_redact(
                tenant=tenant, actor=ERASURE_ACTOR, reason="subject erased", subject_row_id=row,
                subject_ref=subject_ref, target=job.public_id,
            )
        counts["audit_payloads_redacted"] += _audit_redact_ids(tenant=tenant, memory_ids=memory_ids, job=job)
        counts["subjects"] += Subject.objects.filter(
            tenant=tenant, external_id=subject_ref, status=Subject.Status.ERASING
        ).delete()[1].get("memoryapp.Subject", 0)
        job_progress(job_id=job.id, done=done)
    return counts, captured, {"memory_ids": memory_ids, "event_ids": event_ids}


def _audit_redact_ids(*, tenant: Tenant, memory_ids: list, job: Job) -> int:
    """Blank the payloads of entries about these memories; returns how many were blanked."""
    redacted = 0
    for start in range(0, len(memory_ids), BATCH_SIZE):
        redacted += audit_redact(
            tenant=tenant, actor=ERASURE_ACTOR, reason="memories erased", memory_ids=memory_ids[start:start + BATCH_SIZE],
            subject_ref=job.subject_ref, subject_row_id=_erased_row(job), target=job.public_id,
        )
    return redacted


def _erase_memories(*, tenant: Tenant, job: Job) -> tuple[dict, set, dict]:
    counts = _zero_counts()
    captured: set = set()
    params = job.params or {}
    wanted = [uuid.UUID(i) for i in params.get("memory_ids", [])]
    # A forget planned by memory_forget_plan names its events: they go, whatever else cites
    # them (the other memories drawn from them are kept, without the link). Older jobs and
    # quarantine discards name memories only.
    planned = "kept_memory_ids" in params
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        doomed = list(
            Memory.objects.filter(tenant=tenant, pk__in=wanted, erasing=True).values_list(
                "id", "statement", "memory_type", "subject_id", "embedding", "key", "metadata",
            )
        )
        ids = [row[0] for row in doomed]
        _capture(captured, (row[1] for row in doomed))
        if planned:
            event_ids = sorted(uuid.UUID(i) for i in params.get("event_ids", []))
        else:
            event_ids = _events_only_they_cite(tenant=tenant, job=job, doomed=doomed)
        _capture(captured, Event.objects.filter(tenant=tenant, pk__in=event_ids).values_list("content", flat=True))
        subject_ids = {row[3] for row in doomed} | set(
            Event.objects.filter(tenant=tenant, pk__in=event_ids).values_list("subject_id", flat=True)
        )
        subject_refs = set(
            Subject.objects.filter(tenant=tenant, pk__in=subject_ids).values_list("external_id", flat=True)
        ) | {job.subject_ref}
        # Kept for the check that no copy remains: the vectors of what goes (never stored).
        vectors = [row[4] for row in doomed if row[4] is not None][:MAX_LIKE_PATTERNS]
        facts = sorted({(row[5], str(row[6].get("value")).strip()) for row in doomed
                        if row[5] and isinstance(row[6], dict) and len(str(row[6].get("value") or "").strip()) >= 3})
        job_progress(job_id=job.id, done=0, total=len(ids) + len(event_ids))
    done = 0
    for start in range(0, len(ids), BATCH_SIZE):
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            _delete_memory_batch(tenant=tenant, memory_ids=ids[start:start + BATCH_SIZE], counts=counts, job=job)
            done += len(ids[start:start + BATCH_SIZE])
            job_progress(job_id=job.id, done=done)
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        # The subjects of the events themselves: evidence may cite another subject's event.
        event_subjects = set(Event.objects.filter(tenant=tenant, pk__in=event_ids).values_list("subject_id", flat=True))
        _delete_events(tenant=tenant, event_ids=event_ids, counts=counts)
        if event_subjects:
            _speakers_recount(tenant=tenant, subject_ids=event_subjects)
        # Every export made before now holds the forgotten memory (the request withdrew them).
        # By Subject row: a rerun after the id was reused must not touch the next person's files.
        counts["export_files"] += ExportFile.objects.filter(
            Q(subject_row_id__in=subject_ids) | Q(subject_row_id__isnull=True, subject_ref__in=subject_refs),
            tenant=tenant,
        ).delete()[0]
        counts["audit_payloads_redacted"] += _audit_redact_ids(tenant=tenant, memory_ids=wanted, job=job)
        job_progress(job_id=job.id, done=done + len(event_ids))
    # Verify by every id the request named, also those a previous run already removed.
    return counts, captured, {"memory_ids": wanted, "event_ids": event_ids, "subject_ids": sorted(subject_ids),
                              "vectors": vectors, "facts": facts}


def _events_only_they_cite(*, tenant: Tenant, job: Job, doomed: list) -> list:
    """For a job that names memories only: episodic memories take with them the events that
    nothing else cites (such an event is the memory)."""
    ids = [row[0] for row in doomed]
    episodic = [row[0] for row in doomed if row[2] == Memory.Type.EPISODIC]
    candidate_events = set(
        MemoryEvidence.objects.filter(tenant=tenant, memory_id__in=episodic).values_list("event_id", flat=True)
    ) | set(
        Memory.objects.filter(tenant=tenant, pk__in=episodic, source_event__isnull=False).values_list(
            "source_event_id", flat=True
        )
    )
    # A rerun after the memory batches committed no longer finds those episodes, so their
    # events are kept in the job's params by the first run (ids only, never content).
    candidate_events |= {uuid.UUID(i) for i in (job.params or {}).get("event_ids", [])}
    cited_elsewhere = set(
        MemoryEvidence.objects.filter(tenant=tenant, event_id__in=candidate_events)
        .exclude(memory_id__in=ids).values_list("event_id", flat=True)
    ) | set(
        Memory.objects.filter(tenant=tenant, source_event_id__in=candidate_events)
        .exclude(pk__in=ids).values_list("source_event_id", flat=True)
    )
    event_ids = sorted(candidate_events - cited_elsewhere)
    if event_ids and (job.params or {}).get("event_ids") != [str(i) for i in event_ids]:
        job.params = {**(job.params or {}), "event_ids": [str(i) for i in event_ids]}
        Job.objects.filter(tenant=tenant, pk=job.pk).update(params=job.params)
    return event_ids


def _speakers_recount(*, tenant: Tenant, subject_ids: set) -> None:
    """A subject's speakers are those of the events it still has: a name whose last event was
    just erased goes with it. The subject row is locked first, as event_append locks it, so an
    append committing meanwhile cannot have its new speaker overwritten."""
    for subject in Subject.objects.select_for_update().filter(tenant=tenant, pk__in=subject_ids).order_by("pk"):
        remaining = set(Event.objects.filter(tenant=tenant, subject=subject).exclude(speaker="")
                        .values_list("speaker", flat=True).distinct())
        kept = [name for name in subject.speakers if name in remaining]
        if kept != subject.speakers:
            Subject.objects.filter(tenant=tenant, pk=subject.pk).update(speakers=kept)


COPY_CHECKS = ("text:event", "text:memory", "near_copy:memory", "paraphrase:memory", "same_fact:memory")
# Words that say nothing about which fact a statement states.
_FILLER_WORDS = frozenset(
    "a an the is are was were am be been i i'm me my mine you your user user's users their they he she his her "
    "it its of in on at to for from with and or but has have had do does did not no this that these those "
    "there here who what which as by so very really just also now".split()
)
# A memory this similar (cosine) that also carries most of a forgotten statement's content words
# says the same thing in other words ("Blood type: AB negative" for "My blood type is AB
# negative."); different values of one attribute share the attribute's words but not the value's.
PARAPHRASE_SIMILARITY = 0.7
PARAPHRASE_SHARED_WORDS = 0.75


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()) if w not in _FILLER_WORDS}


def marked_words(text: str) -> set[str]:
    """Names and numbers (a capital inside the sentence, or a digit): the value of a fact more
    often than not, so a paraphrase must carry them all ("Springfield", "AB")."""
    tokens = re.findall(r"[A-Za-z0-9]+", text)
    return {t.lower() for i, t in enumerate(tokens)
            if (any(c.isdigit() for c in t) or (i > 0 and t[0].isupper())) and t.lower() not in _FILLER_WORDS}


def _remaining_copies(cursor, *, tenant_id: int, subject_ids, patterns, vectors, facts, texts) -> dict[str, set]:
    """Memories (and, for text, events) of the subjects that still state what a forget took:
    the same text, a near-identical memory (by embedding), a paraphrase (similar, and carrying
    most of a forgotten statement's content words), or another memory of the same attribute with
    the same value. Returns ids per kind of copy."""
    found: dict[str, set] = {name: set() for name in COPY_CHECKS}
    if patterns:
        cursor.execute("SELECT id FROM memoryapp_event WHERE tenant_id = %s AND subject_id = ANY(%s) AND "
                       "(content ILIKE ANY(%s) OR metadata::text ILIKE ANY(%s))",
                       [tenant_id, subject_ids, patterns, patterns])
        found["text:event"] = {("event", row[0]) for row in cursor.fetchall()}
        cursor.execute("SELECT id FROM memoryapp_memory WHERE tenant_id = %s AND subject_id = ANY(%s) AND NOT erasing "
                       "AND (statement ILIKE ANY(%s) OR metadata::text ILIKE ANY(%s))",
                       [tenant_id, subject_ids, patterns, patterns])
        found["text:memory"] = {row[0] for row in cursor.fetchall()}
    if vectors:
        cursor.execute(
            "SELECT m.id, m.statement, max(1 - (m.embedding <=> v)) FROM memoryapp_memory m "
            "CROSS JOIN unnest(%s::vector[]) v WHERE m.tenant_id = %s AND m.subject_id = ANY(%s) AND NOT m.erasing "
            "AND m.embedding IS NOT NULL AND m.embedding <=> v < %s GROUP BY m.id, m.statement",
            [[_vector_text(v) for v in vectors], tenant_id, subject_ids, 1 - PARAPHRASE_SIMILARITY],
        )
        forgotten = [(content_words(t), marked_words(t)) for t in texts]
        forgotten = [(words, marked) for words, marked in forgotten if len(words) >= 2]
        for memory_id, statement, similarity in cursor.fetchall():
            if similarity >= NEAR_COPY_SIMILARITY:
                found["near_copy:memory"].add(memory_id)
                continue
            words = content_words(statement)
            if any(len(words & f) >= PARAPHRASE_SHARED_WORDS * len(f) and marked <= words for f, marked in forgotten):
                found["paraphrase:memory"].add(memory_id)
    for key, value in facts:
        cursor.execute(
            "SELECT id FROM memoryapp_memory WHERE tenant_id = %s AND subject_id = ANY(%s) AND NOT erasing AND key = %s "
            "AND status IN ('active', 'superseded', 'pending_approval') "
            "AND (metadata->>'value' ILIKE %s OR statement ILIKE %s)",
            [tenant_id, subject_ids, key, like_escape(value), "%" + like_escape(value) + "%"],
        )
        found["same_fact:memory"] |= {row[0] for row in cursor.fetchall()}
    return found


def erasure_verify(*, tenant: Tenant, subject_ref: str, scope: str, texts: set, memory_ids: list,
                   event_ids: list, subject_row_id: int | None = None, subject_ids=(), vectors=(),
                   facts=()) -> dict:
    """Look for what the erasure should have removed: rows by id, references by id, the erased
    text in every text and JSON column where a copy could hide, and, for a forget, what still
    states the forgotten content in the subject's memories: a near-identical memory (by
    embedding) or another memory of the same attribute with the same value. Returns counts per
    place found (never the text) and `passed`."""
    residue: dict[str, int] = {}
    ids_searched = len(memory_ids) + len(event_ids)
    erased_hex = uuid_hex_array(memory_ids)
    memory_ids = uuid_array(memory_ids)
    event_ids = uuid_array(event_ids)
    strings = sorted(texts, key=len, reverse=True)[:MAX_SEARCH_STRINGS]
    patterns = ["%" + like_escape(s) + "%" for s in strings[:MAX_LIKE_PATTERNS]]
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        # (name, rows as `t`, condition, params): counted among the tenant's rows only. Row-level
        # security would filter them anyway; the explicit tenant_id lets Citus route each count
        # to one shard (docs/scaling.md).
        counted = [
            ("memories", "memoryapp_memory t", "id = ANY(%s::uuid[])", [memory_ids]),
            ("events", "memoryapp_event t", "id = ANY(%s::uuid[])", [event_ids]),
            ("evidence_links", "memoryapp_memoryevidence t", "memory_id = ANY(%s::uuid[]) OR event_id = ANY(%s::uuid[])",
             [memory_ids, event_ids]),
            ("lineage_links", "memoryapp_memorylineage t", "derived_id = ANY(%s::uuid[]) OR source_id = ANY(%s::uuid[])",
             [memory_ids, memory_ids]),
            ("read_audit_refs", "memoryapp_readaudit t", "memory_ids && %s::uuid[]", [memory_ids]),
            ("audit_payloads", "memoryapp_auditentry t",
             "memory_id = ANY(%s::uuid[]) AND (before IS NOT NULL OR after IS NOT NULL)", [memory_ids]),
            ("idempotency_records", "memoryapp_idempotencyrecord t", _NAMES_ANY_ID, [erased_hex]),
            # A speaker's name stays with a subject only while one of its events is theirs.
            ("speakers_without_events", "memoryapp_subject t CROSS JOIN LATERAL unnest(t.speakers) sp(name)",
             "t.external_id = %s AND NOT EXISTS (SELECT 1 FROM memoryapp_event e "
             "WHERE e.subject_id = t.id AND e.tenant_id = t.tenant_id AND e.speaker = sp.name)", [subject_ref]),
        ]
        if scope == "subject":
            counted += [
                ("subject", "memoryapp_subject t", "external_id = %s", [subject_ref]),
                ("export_files", "memoryapp_exportfile t", "subject_ref = %s", [subject_ref]),
                ("signin_links", "memoryapp_signinlink t", "subject_ref = %s", [subject_ref]),
                ("read_audit_rows", "memoryapp_readaudit t", "subject_ref = %s", [subject_ref]),
                ("audit_payloads_subject", "memoryapp_auditentry t",
                 "subject_row_id = %s AND (before IS NOT NULL OR after IS NOT NULL)", [subject_row_id]),
                ("jobs", "memoryapp_job t", "subject_ref = %s AND kind <> 'deletion'", [subject_ref]),
            ]
        checks = [(name, f"SELECT count(*) FROM {source} WHERE t.tenant_id = %s AND ({condition})",
                   [tenant.pk, *params]) for name, source, condition, params in counted]
        subject_ids = [int(i) for i in subject_ids]
        # The erased text, wherever a copy could live: rows of this subject (or naming the erased
        # ids) and the tenant-wide stores of answers and exports. Each query returns the text
        # columns of the rows a copy could be in, searched here for every string at once.
        text_checks = [
            ("text:audit", "SELECT before::text, after::text, details::text FROM memoryapp_auditentry "
             "WHERE tenant_id = %s AND (subject_row_id = %s AND %s = 'subject' OR memory_id = ANY(%s::uuid[]))",
             [tenant.pk, subject_row_id, scope, memory_ids]),
            ("text:export_file", "SELECT convert_from(content, 'UTF8') FROM memoryapp_exportfile "
             "WHERE tenant_id = %s AND subject_ref = %s", [tenant.pk, subject_ref]),
            ("text:idempotency", "SELECT response::text FROM memoryapp_idempotencyrecord WHERE tenant_id = %s "
             "AND (scope LIKE %s OR response->>'subject' = %s)",
             [tenant.pk, f"%/subjects/{like_escape(subject_ref)}%", subject_ref]),
            ("text:job", "SELECT params::text, result::text FROM memoryapp_job WHERE tenant_id = %s "
             "AND subject_ref = %s", [tenant.pk, subject_ref]),
        ]
        if scope == "subject":
            text_checks += [
                ("text:event", "SELECT e.content, e.metadata::text FROM memoryapp_event e "
                 "JOIN memoryapp_subject s ON s.tenant_id = e.tenant_id AND s.id = e.subject_id "
                 "WHERE s.tenant_id = %s AND s.external_id = %s AND NOT (e.id = ANY(%s::uuid[]))",
                 [tenant.pk, subject_ref, event_ids]),
                ("text:memory", "SELECT m.statement, m.metadata::text FROM memoryapp_memory m "
                 "JOIN memoryapp_subject s ON s.tenant_id = m.tenant_id AND s.id = m.subject_id "
                 "WHERE s.tenant_id = %s AND s.external_id = %s", [tenant.pk, subject_ref]),
            ]
        copies: dict[str, set] = {}
        with connection.cursor() as cursor:
            for name, sql, params in checks:
                cursor.execute(sql, params)
                found = int(cursor.fetchone()[0])
                if found:
                    residue[name] = residue.get(name, 0) + found
            if strings:
                searched = text_automaton(strings)
                for name, sql, params in text_checks:
                    cursor.execute(sql, params)
                    found = sum(1 for row in cursor.fetchall() if any(text_contains(searched, v) for v in row))
                    if found:
                        residue[name] = residue.get(name, 0) + found
            if scope == "memory" and subject_ids:
                copies = _remaining_copies(cursor, tenant_id=tenant.pk, subject_ids=subject_ids, patterns=patterns, vectors=vectors,
                                           facts=facts, texts=strings)
        for name, ids in copies.items():
            if ids:
                residue[name] = len(ids)
        copy_ids = sorted({i for ids in copies.values() for i in ids if isinstance(i, uuid.UUID)}, key=str)
    checked = {name for name, _, _ in checks} | {name for name, _, _ in text_checks if strings} | set(COPY_CHECKS if scope == "memory" and subject_ids else ())
    return {
        "passed": not residue,
        # Which memories still say what was forgotten (ids only), for the person to act on.
        **({"residue_memory_ids": [f"mem_{i.hex}" for i in copy_ids[:50]]} if copy_ids else {}),
        "checked": sorted(checked),
        "texts_searched": len(strings),
        "ids_searched": ids_searched,
        "residue": residue,
    }
