"""An admin's decision on a quarantined event: untrusted, instruction-like or redacted input
held back from extraction until someone looks at it."""
from django.db import transaction

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import Event, Job, Memory, Tenant
from memoryapp.services.audit import audit_record
from memoryapp.services.jobs import job_create
from memoryapp.selectors.forget import memory_descendants
from memoryapp.tenancy import tenant_activate


def _quarantined_event(*, tenant: Tenant, event_id) -> Event:
    event = (
        Event.objects.select_for_update(no_key=True).select_related("subject").filter(tenant=tenant, pk=event_id).first()
    )
    if event is None:
        raise NotFound("event")
    if not event.quarantined:
        raise ApplicationError("not_quarantined", "This event is not in quarantine.", status=409)
    return event


@transaction.atomic
def event_release(*, tenant: Tenant, event_id, actor: Actor) -> Job:
    """Send a quarantined event on to extraction. It keeps its flags and gains "released", so
    the extractor can tell an admin has vouched for it."""
    tenant_activate(tenant=tenant)
    event = _quarantined_event(tenant=tenant, event_id=event_id)
    subject_ref = event.subject.external_id
    job = job_create(
        tenant=tenant, kind=Job.Kind.EXTRACTION, subject_ref=subject_ref, total=1, actor=str(actor),
        params={"event_ids": [str(event.pk)], "released": True},
    )
    event.quarantined = False
    event.status = Event.Status.PENDING
    event.flags = [*event.flags, "released"] if "released" not in event.flags else event.flags
    event.error = ""
    event.attempts = 0  # a failed event released by an admin gets a fresh set of attempts
    event.job = job
    event.save(update_fields=["quarantined", "status", "flags", "error", "attempts", "job"])
    # Its episode was held back from every agent; now it is memory like any other (still
    # labelled by its source and flags wherever it is shown).
    episodes = list(Memory.objects.filter(tenant=tenant, source_event=event, status=Memory.Status.QUARANTINED,
                                          erasing=False).values_list("pk", flat=True))
    Memory.objects.filter(tenant=tenant, pk__in=episodes).update(status=Memory.Status.ACTIVE)
    audit_record(
        tenant=tenant, actor=actor, action="event_released", subject_ref=subject_ref, target=event.public_id,
        details={"flags": event.flags, "job": job.public_id,
                 "memory_ids": [f"mem_{pk.hex}" for pk in episodes]},
    )
    return job


@transaction.atomic
def event_discard(*, tenant: Tenant, event_id, actor: Actor) -> Job | None:
    """Keep a quarantined event out of memory for good: it is marked processed and "discarded",
    and whatever was already remembered from it (and derived from that) is forgotten by a
    deletion job, marked first so it is never returned again."""
    tenant_activate(tenant=tenant)
    event = _quarantined_event(tenant=tenant, event_id=event_id)
    subject_ref = event.subject.external_id
    event.quarantined = False
    event.status = Event.Status.PROCESSED
    event.flags = [*event.flags, "discarded"] if "discarded" not in event.flags else event.flags
    event.save(update_fields=["quarantined", "status", "flags"])
    remembered = list(Memory.objects.filter(tenant=tenant, source_event=event, erasing=False))
    doomed = {m.pk: m for m in remembered}
    for memory in remembered:
        for child in memory_descendants(memory=memory):
            doomed.setdefault(child.pk, child)
    job = None
    if doomed:
        Memory.objects.filter(tenant=tenant, pk__in=list(doomed)).update(erasing=True)
        job = job_create(
            tenant=tenant, kind=Job.Kind.DELETION, subject_ref=subject_ref, total=len(doomed), actor=str(actor),
            params={"scope": "memory", "memory_ids": [str(pk) for pk in doomed]},
        )
    audit_record(
        tenant=tenant, actor=actor, action="event_discarded", subject_ref=subject_ref, target=event.public_id,
        details={"flags": event.flags, "memories": len(doomed), "job": job.public_id if job else None,
                 "memory_ids": [f"mem_{pk.hex}" for pk in doomed]},
    )
    return job
