import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryapp.errors import ApplicationError
from memoryapp.models import AuditEntry, Event, Job
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import subject_erase_request

pytestmark = pytest.mark.django_db


def test_resending_an_event_id_changes_nothing_and_says_duplicate(tenant_a, actor):
    first, job = event_append(tenant=tenant_a, subject_ref="alice", actor=actor,
                              events=[EventInput("e1", "user", "I adopted a cat called Miso.")])
    again, job_again = event_append(tenant=tenant_a, subject_ref="alice", actor=actor,
                                    events=[EventInput("e1", "user", "Different text, same id.")])
    assert [r.duplicate for r in first] == [False] and [r.duplicate for r in again] == [True]
    assert job is not None and job_again is None
    assert Event.objects.filter(tenant=tenant_a).count() == 1
    assert Event.objects.get(tenant=tenant_a).content == "I adopted a cat called Miso."


def test_a_repeat_inside_one_batch_is_stored_once(tenant_a, actor):
    results, job = event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[
        EventInput("e1", "user", "one"), EventInput("e1", "user", "one again"), EventInput("e2", "user", "two"),
    ])
    assert [r.duplicate for r in results] == [False, True, False]
    assert Event.objects.filter(tenant=tenant_a).count() == 2
    assert Job.objects.get(pk=job.pk).progress_total == 2


def test_sequence_numbers_are_monotonic_per_subject(tenant_a, actor):
    for i in range(3):
        event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[EventInput(f"a{i}", "user", "x")])
    event_append(tenant=tenant_a, subject_ref="bob", actor=actor, events=[EventInput("b0", "user", "y")])
    alice = list(Event.objects.filter(subject__external_id="alice").order_by("recorded_at").values_list("seq", flat=True))
    assert alice == [1, 2, 3]
    assert Event.objects.get(subject__external_id="bob").seq == 1


def test_events_default_their_source_from_the_role_and_start_pending(tenant_a, actor):
    results, _ = event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[
        EventInput("e1", "assistant", "You said you like tea."), EventInput("e2", "tool", "weather: sunny", source_kind="external"),
    ])
    assert [(r.event.source_kind, r.event.status) for r in results] == [("assistant", "pending"), ("external", "pending")]


def test_a_subject_being_erased_accepts_no_new_events(tenant_a, actor):
    event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[EventInput("e1", "user", "hello")])
    subject_erase_request(tenant=tenant_a, subject_ref="alice", actor=actor)
    with pytest.raises(ApplicationError) as excinfo:
        event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[EventInput("e2", "user", "more")])
    assert excinfo.value.code == "subject_erasing"


def test_an_append_for_a_known_subject_finds_and_locks_it_in_one_statement(tenant_a, actor):
    event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[EventInput("e1", "user", "hello")])
    with CaptureQueriesContext(connection) as ctx:
        _, job = event_append(tenant=tenant_a, subject_ref="alice", actor=actor,
                              events=[EventInput("e2", "user", "I adopted a cat called Miso.")])
    about_subject = [q["sql"] for q in ctx.captured_queries if 'FROM "memoryapp_subject"' in q["sql"]]
    assert len(about_subject) == 1 and "FOR UPDATE" in about_subject[0], about_subject
    # nor looked up again for the job's and the audit entry's subject row, which still name it
    subject_id = Event.objects.get(tenant=tenant_a, event_id="e2").subject_id
    assert Job.objects.get(pk=job.pk).subject_row_id == subject_id
    assert AuditEntry.objects.filter(tenant=tenant_a, action="events_appended").latest("id").subject_row_id == subject_id

