"""Export: everything stored about one subject, as one JSON document (docs/export-format.md).

Requested on the hot path (a Job), built by a worker with progress, stored as an ExportFile that
only its tenant can read (row-level security) and that expires after MEMORY_EXPORT_TTL_HOURS.
"""
import hashlib
import json
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError
from memoryapp.models import (
    AuditEntry, Event, ExportFile, Job, Memory, MemoryChange, MemoryEvidence, MemoryLineage, ReadAudit, Subject,
    Tenant,
)
from memoryapp.selectors.memories import subject_get
from memoryapp.selectors.reads import key_names
from memoryapp.services.audit import audit_record, audit_seal
from memoryapp.services.jobs import job_create, job_progress
from memoryapp.tenancy import tenant_activate

FORMAT = "memory-export/v1"
DOWNLOAD_PATH = "/api/v1/exports/"
BATCH_SIZE = 1000


@transaction.atomic
def export_request(*, tenant: Tenant, subject_ref: str, actor: Actor) -> Job:
    """Queue an export of `subject_ref`. A missing subject, or one being erased, is a 404."""
    subject_get(tenant=tenant, external_id=subject_ref)
    job = job_create(tenant=tenant, kind=Job.Kind.EXPORT, subject_ref=subject_ref, actor=str(actor))
    audit_record(tenant=tenant, actor=actor, action="export_requested", subject_ref=subject_ref,
                 target=job.public_id)
    return job


def _time(value):
    return value.isoformat() if value else None


def _event_json(e: Event) -> dict:
    return {
        "id": e.public_id, "event_id": e.event_id, "seq": e.seq, "role": e.role, "source": e.source_kind,
        "content": e.content, "occurred_at": _time(e.occurred_at), "recorded_at": _time(e.recorded_at),
        "session_id": e.session_id, "speaker": e.speaker, "metadata": e.metadata, "status": e.status,
        "redacted": e.redacted, "quarantined": e.quarantined, "flags": e.flags,
    }


def _memory_json(m: Memory) -> dict:
    return {
        "id": m.public_id, "memory_type": m.memory_type, "namespace": m.namespace, "statement": m.statement,
        "key": m.key, "status": m.status, "status_reason": m.status_reason,
        "source": {"kind": m.source_kind, "event_id": f"evt_{m.source_event_id.hex}" if m.source_event_id else None},
        "evidence_count": m.evidence_count, "confidence": m.confidence, "importance": m.importance,
        "sensitivity": m.sensitivity, "valid_from": _time(m.valid_from), "valid_to": _time(m.valid_to),
        "recorded_at": _time(m.recorded_at), "expires_at": _time(m.expires_at),
        "superseded_by": f"mem_{m.superseded_by_id.hex}" if m.superseded_by_id else None,
        "access_count": m.access_count, "last_accessed_at": _time(m.last_accessed_at),
        "metadata": m.metadata, "flags": m.flags,
        "index_versions": {"embedding": m.embedding_version, "extractor": m.extractor_version},
    }


def _audit_json(a: AuditEntry) -> dict:
    return {
        "seq": a.seq, "created_at": _time(a.created_at), "action": a.action,
        "actor": {"kind": a.actor_kind, "id": a.actor_id},
        "memory_id": f"mem_{a.memory_id.hex}" if a.memory_id else None, "target": a.target,
        "before": a.before, "after": a.after, "details": a.details, "redacted": a.redacted_at is not None,
        "entry_hash": a.entry_hash,
    }


def _read_json(r: ReadAudit, names: dict) -> dict:
    """One read of the person's memories: who (the key's name too), when, for what purpose (when
    the reader named one), which memories; the query only as the hash the read audit keeps."""
    return {
        "at": _time(r.created_at), "actor": r.actor, "key_name": names.get(r.actor), "operation": r.operation,
        "purpose": r.purpose or None, "memory_ids": [f"mem_{m.hex}" for m in r.memory_ids], "query_sha256": r.query_hash or None,
    }


def export_job_run(*, tenant: Tenant, job: Job) -> dict:
    """Build and store the export. Reads in one transaction (REPEATABLE READ would be stricter,
    but rows of one subject change rarely and every list is self-consistent by id).

    Only this person's rows: the audit trail of the Subject row, not of the id string (an id
    reused after an erasure is a new person), and nothing a pending forget is erasing (its
    memories are marked; its messages are the evidence of marked memories)."""
    subject_ref = job.subject_ref
    audit_seal(tenant=tenant)  # the trail in the file is the sealed chain, seq and hashes included
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = Subject.objects.filter(tenant=tenant, external_id=subject_ref,
                                         status=Subject.Status.ACTIVE).first()
        if subject is None:
            raise ApplicationError("subject_gone", "The subject no longer exists or is being erased.")
        events_qs = Event.objects.filter(tenant=tenant, subject=subject, erasing=False).order_by("seq")
        memories_qs = Memory.objects.filter(tenant=tenant, subject=subject, erasing=False).order_by(
            "recorded_at", "id"
        )
        total = events_qs.count() + memories_qs.count()
        job_progress(job_id=job.id, done=0, total=total)
        done = 0
        events = []
        event_ids = []
        for event in events_qs.iterator(chunk_size=BATCH_SIZE):
            events.append(_event_json(event))
            event_ids.append(event.pk)
            done += 1
            if done % BATCH_SIZE == 0:
                job_progress(job_id=job.id, done=done)
        memories = []
        memory_ids = []
        for memory in memories_qs.iterator(chunk_size=BATCH_SIZE):
            memories.append(_memory_json(memory))
            memory_ids.append(memory.pk)
            done += 1
            if done % BATCH_SIZE == 0:
                job_progress(job_id=job.id, done=done)
        evidence = [
            {"memory_id": f"mem_{m.hex}", "event_id": f"evt_{e.hex}"}
            for m, e in MemoryEvidence.objects.filter(tenant=tenant, memory__subject=subject, memory__erasing=False,
                                                      event__erasing=False)
            .order_by("id").values_list("memory_id", "event_id")
        ]
        derived_from = [
            {"derived_id": f"mem_{d.hex}", "source_id": f"mem_{s.hex}", "kind": k}
            for d, s, k in MemoryLineage.objects.filter(tenant=tenant, derived__subject=subject, derived__erasing=False,
                                                        source__erasing=False)
            .order_by("id").values_list("derived_id", "source_id", "kind")
        ]
        supersedes = [
            {"memory_id": m["id"], "superseded_by": m["superseded_by"]} for m in memories if m["superseded_by"]
        ]
        # When each version's status or valid_to changed, and what it was before (known_at).
        changes = [
            {"memory_id": f"mem_{m.hex}", "changed_at": _time(at), "status_before": st, "valid_to_before": _time(vt)}
            for m, at, st, vt in MemoryChange.objects.filter(tenant=tenant, memory__subject=subject,
                                                              memory__erasing=False)
            .order_by("changed_at", "id").values_list("memory_id", "changed_at", "status", "valid_to")
        ]
        audit = [
            _audit_json(a)
            for a in AuditEntry.objects.filter(tenant=tenant, subject_row_id=subject.pk)
            .order_by(F("seq").asc(nulls_last=True), "id").iterator(chunk_size=BATCH_SIZE)
        ]
        names = key_names(tenant=tenant, actors=set(
            ReadAudit.objects.filter(tenant=tenant, subject_row_id=subject.pk).values_list("actor", flat=True)))
        reads = [
            _read_json(r, names)
            for r in ReadAudit.objects.filter(tenant=tenant, subject_row_id=subject.pk).order_by("created_at", "id")
            .iterator(chunk_size=BATCH_SIZE)
        ]
        now = timezone.now()
        document = {
            "format": FORMAT,
            "exported_at": now.isoformat(),
            "subject": {"id": subject.external_id, "kind": subject.kind, "created_at": _time(subject.created_at)},
            "events": events,
            "memories": memories,
            "lineage": {"evidence": evidence, "derived_from": derived_from, "supersedes": supersedes,
                        "changes": changes},
            "audit": audit,
            "reads": reads,
        }
        # ensure_ascii=False: the file holds the text as written, so it is also searchable as such.
        content = json.dumps(document, ensure_ascii=False, sort_keys=False).encode("utf-8")
        _refuse_if_erased_meanwhile(tenant=tenant, subject=subject, memory_ids=memory_ids, event_ids=event_ids)
        export = ExportFile.objects.create(
            tenant=tenant, subject_ref=subject_ref, subject_row_id=subject.pk, job=job, content=content, size=len(content),
            expires_at=now + timedelta(hours=settings.MEMORY_EXPORT_TTL_HOURS),
        )
        job_progress(job_id=job.id, done=done)
        audit_record(tenant=tenant, actor=Actor("worker", "export"), action="export_created",
                     subject_ref=subject_ref, target=export.public_id, details={"size": len(content)})
    return {
        "download": f"{DOWNLOAD_PATH}{export.public_id}",
        "export": export.public_id,
        "format": FORMAT,
        "expires_at": export.expires_at.isoformat(),
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "counts": {"events": len(events), "memories": len(memories), "evidence": len(evidence),
                   "derived_from": len(derived_from), "audit": len(audit), "reads": len(reads)},
    }


def _refuse_if_erased_meanwhile(*, tenant: Tenant, subject: Subject, memory_ids: list, event_ids: list) -> None:
    """A forget or an erasure accepted while the file was being built withdraws only the files
    that exist then, and its job deletes only those committed before it runs: this file would
    escape both. Under the subject's row lock (FOR SHARE: after a forget that holds it commits,
    before one that comes next), check that everything in the file is still there and not being
    erased. (Anything else that removed a memory meanwhile also makes the file stale.)"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM memoryapp_subject WHERE id = %s AND tenant_id = %s FOR SHARE",
                       [subject.pk, tenant.pk])
        row = cursor.fetchone()
    # A forget's job may even have finished meanwhile: what it took is then gone, not marked.
    if (row is None or row[0] != Subject.Status.ACTIVE
            or Memory.objects.filter(tenant=tenant, pk__in=memory_ids, erasing=False).count() != len(memory_ids)
            or Event.objects.filter(tenant=tenant, pk__in=event_ids, erasing=False).count() != len(event_ids)):
        raise ApplicationError("erased_meanwhile", "Part of what was being exported was forgotten or erased while "
                                                   "the export was built; request a new export.")


def export_files_withdraw(*, tenant: Tenant, subject_id) -> int:
    """The subject's export files hold what a forget or an erasure is about to remove: never
    served again from now on (the deletion job deletes them). Call inside the tenant's
    transaction, holding the subject's row lock (export_job_run checks under it)."""
    return ExportFile.objects.filter(tenant=tenant, subject_row_id=subject_id, withdrawn_at__isnull=True).update(
        withdrawn_at=timezone.now()
    )


def export_purge_expired() -> int:
    """Delete expired export files in every tenant (hourly). Returns how many were removed."""
    removed = 0
    now = timezone.now()
    for tenant_id in Tenant.objects.values_list("pk", flat=True):
        with transaction.atomic():
            tenant_activate(tenant=tenant_id)
            removed += ExportFile.objects.filter(tenant_id=tenant_id, expires_at__lte=now).delete()[0]
    return removed
