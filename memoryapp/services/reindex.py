"""Reindex and replay: rebuilding derived index data when a model changes.

- Reindex: when embeddings.EMBEDDING_VERSION changes, every memory whose `embedding_version`
  differs is re-embedded (the statement and its clauses), BATCH rows at a time, one transaction per batch. The selection is
  the work list itself (rows not yet at the current version), so a job that stops halfway
  (crash, deploy, `max_batches`) is continued by any later run without bookkeeping.
- Replay: when the extractor changes, a subject's extracted memories are rebuilt from its
  stored events: every memory not stated by the user explicitly (source_kind user_explicit,
  which includes corrections) is deleted with its links, the events are set pending again and
  an extraction job is queued for them. Explicit memories and their history stay.
"""
from django.db import transaction
from django.db.models import Q

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.clauses import statement_clauses
from memoryapp.models import Event, Job, Memory, MemoryEvidence, MemoryLineage, SourceKind, Subject, Tenant
from memoryapp.selectors.memories import subject_get
from memoryapp.services.audit import audit_record
from memoryapp.services.jobs import job_create, job_progress
from memoryapp.tenancy import tenant_activate

BATCH_SIZE = 256
WORKER = Actor("worker", "reindex")


def _stale_embeddings(tenant: Tenant, subject_ref: str = ""):
    qs = Memory.objects.filter(tenant=tenant, erasing=False).exclude(embedding_version=embeddings.EMBEDDING_VERSION)
    if subject_ref:
        qs = qs.filter(subject__external_id=subject_ref)
    return qs


def reindex_request(*, tenant: Tenant, actor: Actor, subject_ref: str = "", batch_size: int = BATCH_SIZE,
                    max_batches: int | None = None) -> Job:
    """Queue a re-embedding of the tenant's memories (or one subject's) made with another model."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        total = _stale_embeddings(tenant, subject_ref).count()
        job = job_create(
            tenant=tenant, kind=Job.Kind.REINDEX, subject_ref=subject_ref, total=total, actor=str(actor),
            params={"batch_size": batch_size, "max_batches": max_batches, "target": embeddings.EMBEDDING_VERSION},
        )
        audit_record(tenant=tenant, actor=actor, action="reindex_requested", subject_ref=subject_ref,
                     target=job.public_id, details={"memories": total, "target": embeddings.EMBEDDING_VERSION})
    return job


def reindex_job_run(*, tenant: Tenant, job: Job) -> dict:
    params = job.params or {}
    batch_size = max(1, min(int(params.get("batch_size") or BATCH_SIZE), 5000))
    max_batches = params.get("max_batches")
    version = embeddings.EMBEDDING_VERSION
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        remaining = _stale_embeddings(tenant, job.subject_ref).count()
        job_progress(job_id=job.id, done=0, total=remaining)
    done = batches = 0
    while max_batches is None or batches < int(max_batches):
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            rows = list(_stale_embeddings(tenant, job.subject_ref).order_by("id").values_list("id", "statement")[
                :batch_size
            ])
        if not rows:
            break
        # Embedding takes seconds per batch; no transaction (and no lock) is held meanwhile.
        statements = [statement for _, statement in rows]
        clauses = [statement_clauses(statement) for statement in statements]
        vectors = embeddings.stored_vectors(embeddings.embed_texts(
            statements + [clause for found in clauses for clause in found]))
        wholes, parts = vectors[:len(rows)], vectors[len(rows):]
        with transaction.atomic():
            tenant_activate(tenant=tenant)
            at = 0
            for (memory_id, statement), vector, found in zip(rows, wholes, clauses):
                clause_vectors, at = parts[at:at + len(found)] or None, at + len(found)
                # Conditional: a row erased or already re-embedded meanwhile is left alone.
                done += Memory.objects.filter(
                    tenant=tenant, pk=memory_id, statement=statement, erasing=False
                ).exclude(embedding_version=version).update(embedding=vector, clause_embeddings=clause_vectors,
                                                           embedding_version=version)
            batches += 1
            job_progress(job_id=job.id, done=done)
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        left = _stale_embeddings(tenant, job.subject_ref).count()
    return {"reembedded": done, "batches": batches, "remaining": left, "complete": left == 0,
            "embedding_version": version}


def replay_request(*, tenant: Tenant, subject_ref: str, actor: Actor) -> Job:
    """Queue a rebuild of `subject_ref`'s extracted memories from its stored events."""
    with transaction.atomic():
        subject_get(tenant=tenant, external_id=subject_ref)
        job = job_create(tenant=tenant, kind=Job.Kind.REPLAY, subject_ref=subject_ref, actor=str(actor))
        audit_record(tenant=tenant, actor=actor, action="replay_requested", subject_ref=subject_ref,
                     target=job.public_id)
    return job


def replay_job_run(*, tenant: Tenant, job: Job) -> dict:
    """One transaction under the subject lock: extraction must not write between the deletion
    and the reset, or its output would be deleted or doubled."""
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        subject = (
            Subject.objects.select_for_update()
            .filter(tenant=tenant, external_id=job.subject_ref, status=Subject.Status.ACTIVE).first()
        )
        if subject is None:
            return {"skipped": "subject_missing_or_erasing", "memories_deleted": 0, "events_reset": 0}
        derived = Memory.objects.filter(tenant=tenant, subject=subject, erasing=False).exclude(
            source_kind=SourceKind.USER_EXPLICIT
        )
        ids = list(derived.values_list("id", flat=True))
        MemoryEvidence.objects.filter(tenant=tenant, memory_id__in=ids).delete()
        MemoryLineage.objects.filter(Q(derived_id__in=ids) | Q(source_id__in=ids), tenant=tenant).delete()
        Memory.objects.filter(tenant=tenant, superseded_by_id__in=ids).exclude(pk__in=ids).update(superseded_by=None)
        deleted = Memory.objects.filter(tenant=tenant, pk__in=ids).delete()[1].get("memoryapp.Memory", 0)
        events = Event.objects.filter(tenant=tenant, subject=subject, quarantined=False, erasing=False)
        total = events.count()
        extraction = job_create(
            tenant=tenant, kind=Job.Kind.EXTRACTION, subject_ref=subject.external_id, total=total,
            actor=str(WORKER), params={"replay_of": job.public_id},
        )
        reset = events.update(status=Event.Status.PENDING, attempts=0, claimed_at=None, processed_at=None,
                              error="", job=extraction)
        audit_record(
            tenant=tenant, actor=WORKER, action="replay_started", subject_ref=subject.external_id,
            target=extraction.public_id, details={"memories_deleted": deleted, "events_reset": reset},
        )
    return {"memories_deleted": deleted, "events_reset": reset, "extraction_job": extraction.public_id}
