from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.models import Event, Job, Tenant
from memoryapp.policy import DEFAULT_SOURCE_FOR_ROLE, durable_types_allowed
from memoryapp.safety import follows_credential, redact_secrets, redact_value
from memoryapp.services.audit import audit_record
from memoryapp.services.jobs import job_create
from memoryapp.services.tenants import subject_locked_for_write


# Search drops the subject's speakers' names from a query (retrieval.search_terms). Only trusted
# events name them (a web page's "speaker" must not change how the user's queries match), and a
# client that sends a new speaker per message stops adding names here.
MAX_SPEAKERS = 50


@dataclass
class EventInput:
    event_id: str
    role: str
    content: str
    source_kind: str | None = None
    occurred_at: datetime | None = None
    session_id: str = ""
    speaker: str = ""
    metadata: dict | None = None


@dataclass
class AppendedEvent:
    event: Event
    duplicate: bool


@transaction.atomic
def event_append(
    *, tenant: Tenant, subject_ref: str, events: list[EventInput], actor: Actor
) -> tuple[list[AppendedEvent], Job | None]:
    """Append raw events idempotently (by `event_id`, per subject) and queue their extraction.

    New events are stored as pending in this transaction (the outbox); the extraction job is
    published after commit, and the sweeper re-publishes whatever is still pending. The
    subject row lock orders concurrent appends, so a concurrent duplicate is seen as one.
    """
    subject = subject_locked_for_write(tenant=tenant, external_id=subject_ref)
    wanted = [e.event_id for e in events]
    existing = {
        e.event_id: e for e in Event.objects.filter(subject=subject, event_id__in=wanted)
    }
    now = timezone.now()
    fresh: list[Event] = []
    results: list[AppendedEvent] = []
    # The subject's last two messages (session, role, content as stored): a credential's value
    # may come in the message after the one that names it ("my door code is" / "6 6 1 9").
    recent = list(Event.objects.filter(subject=subject, seq__gt=subject.last_seq - 2).order_by("seq")
                  .values_list("session_id", "role", "content"))
    for item in events:
        if item.event_id in existing:
            results.append(AppendedEvent(existing[item.event_id], duplicate=True))
            continue
        subject.last_seq += 1
        # Nothing is stored with a secret in it, not even until the worker comes: the content
        # is redacted here (extraction looks again with the same rules, and audits what was cut
        # in its place in the trail, from the markers), and so are the labels around it, which
        # are copied into episodes and onto the subject.
        speaker, session_id, metadata = (redact_value(item.speaker or ""), redact_value(item.session_id or ""),
                                         redact_value(item.metadata or {}))
        continues, carried = _follows_credential(recent, session_id=session_id, role=item.role)
        content, findings = redact_secrets(item.content, continues=continues, carried=carried)
        recent.append((session_id, item.role, content))
        labels_redacted = (speaker, session_id, metadata) != (item.speaker or "", item.session_id or "",
                                                              item.metadata or {})
        event = Event(
            tenant=tenant,
            subject=subject,
            event_id=item.event_id,
            seq=subject.last_seq,
            role=item.role,
            source_kind=item.source_kind or DEFAULT_SOURCE_FOR_ROLE.get(item.role, "user"),
            content=content,
            occurred_at=item.occurred_at or now,
            session_id=session_id,
            speaker=speaker,
            metadata=metadata,
            redacted=bool(findings),
            flags=["secret_redacted"] if labels_redacted or findings else [],
        )
        existing[item.event_id] = event  # a repeat inside the same batch is a duplicate too
        fresh.append(event)
        results.append(AppendedEvent(event, duplicate=False))
    if not fresh:
        return results, None
    update = ["last_seq"]
    new_speakers = sorted({e.speaker for e in fresh if e.speaker and durable_types_allowed(e.source_kind)}
                          - set(subject.speakers))
    room = MAX_SPEAKERS - len(subject.speakers)
    if new_speakers and room > 0:
        subject.speakers = [*subject.speakers, *new_speakers[:room]]
        update.append("speakers")
    subject.save(update_fields=update)
    job = job_create(
        tenant=tenant, kind=Job.Kind.EXTRACTION, subject_ref=subject_ref, total=len(fresh), actor=str(actor),
        enqueue=False, subject_row_id=subject.pk,
    )
    for event in fresh:
        event.job = job
    Event.objects.bulk_create(fresh)
    audit_record(
        tenant=tenant, actor=actor, action="events_appended", subject_ref=subject_ref, subject_row_id=subject.pk,
        target=job.public_id,
        details={"count": len(fresh), "event_ids": [e.event_id for e in fresh][:100]},
    )
    from memoryapp.dispatch import job_enqueue_on_commit

    job_enqueue_on_commit(job)
    return results, job


def _follows_credential(recent: list[tuple], *, session_id: str, role: str) -> tuple[bool, bool]:
    """(continues, carried) from the sender's own previous message, one or two messages back in
    the same session (as extraction's _continuing_credentials reads it)."""
    for previous_session, previous_role, previous_content in reversed(recent[-2:]):
        if previous_session == session_id and previous_role == role:
            return follows_credential(previous_content)
    return False, False
