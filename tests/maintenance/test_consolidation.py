"""Consolidation merges near-duplicates into one memory with their evidence, derives one
summary per session, replaces summaries on rerun, and never deletes a source."""
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest

from memoryapp.errors import NotFound
from memoryapp.models import AuditEntry, Event, Job, Memory, MemoryLineage
from memoryapp.retrieval import memory_search
from memoryapp.services.consolidation import (
    consolidation_request, consolidation_sweep, near_duplicate_groups, session_summary_text,
)
from memoryapp.services.events import EventInput, event_append
from tests.conftest import as_tenant
from tests.maintenance.conftest import run, write

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=dt_timezone.utc)


def events_in_session(tenant, subject, actor, session, *items):
    inputs = [EventInput(event_id=f"{session}-{i}", role=role, content=text, session_id=session,
                         occurred_at=T0 + timedelta(minutes=i)) for i, (role, text) in enumerate(items)]
    results, _ = event_append(tenant=tenant, subject_ref=subject, events=inputs, actor=actor)
    with as_tenant(tenant):
        # As extraction leaves them (summaries read processed events only); these tests are about
        # consolidation, so the memories extraction would add are left out.
        Event.objects.filter(pk__in=[r.event.pk for r in results]).update(status=Event.Status.PROCESSED)
        return [Event.objects.get(pk=r.event.pk) for r in results]


def test_a_message_extraction_has_not_looked_at_is_not_summarised(tenant_a, actor):
    """Extraction may still withhold it (the second opinion on credentials runs there)."""
    inputs = [EventInput(event_id="p-0", role="user", content="the garage code is two bits, first Harbour9",
                         session_id="pending", occurred_at=T0)]
    event_append(tenant=tenant_a, subject_ref="alice", events=inputs, actor=actor)
    assert consolidate(tenant_a, "alice", actor).result["summaries_created"] == 0
    with as_tenant(tenant_a):
        Event.objects.filter(event_id="p-0").update(status=Event.Status.PROCESSED)
    assert consolidate(tenant_a, "alice", actor).result["summaries_created"] == 1


def consolidate(tenant, subject, actor) -> Job:
    job = run(tenant, consolidation_request(tenant=tenant, subject_ref=subject, actor=actor))
    assert job.status == "succeeded", job.error
    return job


def test_near_duplicates_merge_into_one_memory_and_the_sources_stay_superseded(tenant_a, actor):
    events = events_in_session(tenant_a, "alice", actor, "s-1", ("user", "I'm allergic to peanuts."),
                               ("user", "Remember: I am allergic to peanuts!"))
    first = write(tenant_a, "alice", "I am allergic to peanuts.", actor, source_kind="user", source_event=events[0],
                  confidence=0.7, valid_from=T0)
    second = write(tenant_a, "alice", "I'm allergic to peanuts.", actor, source_kind="user_explicit",
                   source_event=events[1], confidence=0.9, valid_from=T0 + timedelta(days=1))
    unrelated = write(tenant_a, "alice", "I live in Paris.", actor)

    job = consolidate(tenant_a, "alice", actor)

    assert job.result["merged_groups"] == 1 and job.result["merged_sources"] == 2
    with as_tenant(tenant_a):
        merged = Memory.objects.get(status="active", metadata__consolidated_from=2)
        # The explicit statement wins, but the merge claims only its weakest source's trust and
        # confidence (seed 001 §12); evidence and counts are the union of both.
        assert merged.statement == "I'm allergic to peanuts." and merged.source_kind == "user"
        assert merged.evidence_count == 2 and merged.confidence == 0.7
        assert set(merged.evidence.values_list("pk", flat=True)) == {events[0].pk, events[1].pk}
        assert set(merged.derived_from.values_list("pk", flat=True)) == {first.pk, second.pk}
        assert set(MemoryLineage.objects.filter(derived=merged).values_list("kind", flat=True)) == {"consolidated"}
        assert merged.valid_from == T0
        for source in (first, second):
            source.refresh_from_db()  # never deleted
            assert source.status == "superseded" and source.status_reason == "consolidated"
            assert source.superseded_by_id == merged.pk
            assert AuditEntry.objects.filter(memory_id=source.pk, action="memory_superseded").exists()
        assert AuditEntry.objects.filter(memory_id=merged.pk, action="memory_consolidated").exists()
        unrelated.refresh_from_db()
        assert unrelated.status == "active"
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="peanut allergy", k=5,
                         memory_types=["semantic"])
    assert [h.memory.pk for h in hits if "peanut" in h.memory.statement] == [merged.pk]
    # In the past too, only the merged memory answers: the duplicates never show again.
    past = memory_search(tenant=tenant_a, subject_ref="alice", query="peanut allergy", k=5,
                         as_of=T0 + timedelta(days=2), memory_types=["semantic"])
    assert [h.memory.pk for h in past] == [merged.pk]


def test_consolidation_rerun_merges_nothing_more(tenant_a, actor):
    write(tenant_a, "alice", "My favourite colour is green.", actor)
    write(tenant_a, "alice", "My favorite color is green.", actor)
    assert consolidate(tenant_a, "alice", actor).result["merged_groups"] == 1
    again = consolidate(tenant_a, "alice", actor)
    assert again.result["merged_groups"] == 0
    with as_tenant(tenant_a):
        assert Memory.objects.filter(status="active").count() == 1
        assert Memory.objects.count() == 3


def test_near_duplicates_in_other_namespaces_or_subjects_are_not_merged(tenant_a, actor):
    write(tenant_a, "alice", "My favourite colour is green.", actor, namespace="a")
    write(tenant_a, "alice", "My favorite color is green.", actor, namespace="b")
    write(tenant_a, "bob", "My favorite color is green.", actor, namespace="a")
    assert consolidate(tenant_a, "alice", actor).result["merged_groups"] == 0
    with as_tenant(tenant_a):
        assert Memory.objects.filter(status="active").count() == 3


def test_different_facts_are_not_merged(tenant_a, actor):
    write(tenant_a, "alice", "I live in Paris.", actor)
    write(tenant_a, "alice", "I live in Lyon.", actor)
    assert consolidate(tenant_a, "alice", actor).result["merged_groups"] == 0


def test_near_duplicate_groups_are_transitive_and_threshold_bound():
    import numpy as np

    a = np.array([1.0, 0.0]); b = np.array([np.cos(0.3), np.sin(0.3)]); c = np.array([np.cos(0.6), np.sin(0.6)])
    far = np.array([0.0, 1.0])
    vectors = np.array([a, b, c, far])
    # cos(0.3) = 0.955: a~b and b~c, so a, b, c are one group even though cos(a, c) = 0.825.
    assert near_duplicate_groups(vectors, threshold=0.92) == [[0, 1, 2]]
    assert near_duplicate_groups(vectors, threshold=0.99) == []


def test_each_session_gets_one_dated_summary_derived_from_its_memories(tenant_a, actor):
    events = events_in_session(
        tenant_a, "alice", actor, "trip-42",
        ("user", "We are planning a trip to Kyoto in April. Budget is tight."),
        ("assistant", "Kyoto in April is cherry blossom season."),
        ("user", "I want a ryokan with an onsen."),
    )
    events_in_session(tenant_a, "alice", actor, "other", ("user", "Unrelated chat about chess openings."))
    fact = write(tenant_a, "alice", "Alice wants a ryokan with an onsen.", actor, source_kind="user",
                 source_event=events[2])

    job = consolidate(tenant_a, "alice", actor)

    assert job.result["summaries_created"] == 2
    with as_tenant(tenant_a):
        summary = Memory.objects.get(metadata__kind="session_summary", metadata__session_id="trip-42")
        assert summary.memory_type == "episodic" and summary.status == "active"
        assert summary.statement == (
            "Session trip-42 (2026-03-02, 3 messages): We are planning a trip to Kyoto in April. "
            "I want a ryokan with an onsen. Kyoto in April is cherry blossom season."
        )
        assert set(summary.evidence.values_list("pk", flat=True)) == {e.pk for e in events}
        assert list(summary.derived_from.values_list("pk", flat=True)) == [fact.pk]
        assert summary.valid_from == T0
        # It speaks for its weakest message (the assistant's turn), never as "system" (seed 001 §12).
        assert summary.source_kind == "assistant" and summary.confidence <= fact.confidence
        other = Memory.objects.get(metadata__kind="session_summary", metadata__session_id="other")
        assert other.source_kind == "user"


def test_summary_rerun_keeps_unchanged_and_replaces_changed_summaries(tenant_a, actor):
    events_in_session(tenant_a, "alice", actor, "s-1", ("user", "First we talked about gardening."))
    events_in_session(tenant_a, "alice", actor, "s-2", ("user", "Then about sourdough starters."))
    consolidate(tenant_a, "alice", actor)
    with as_tenant(tenant_a):
        before = {m.metadata["session_id"]: m.pk for m in Memory.objects.filter(metadata__kind="session_summary")}

    unchanged = consolidate(tenant_a, "alice", actor)
    assert unchanged.result["summaries_created"] == 0 and unchanged.result["summaries_kept"] == 2
    # A new message in s-2 changes its summary: replaced, not duplicated.
    event_append(tenant=tenant_a, subject_ref="alice", actor=actor, events=[
        EventInput(event_id="s-2-late", role="user", content="Rye flour works best.", session_id="s-2",
                   occurred_at=T0 + timedelta(hours=1))])
    with as_tenant(tenant_a):
        Event.objects.filter(event_id="s-2-late").update(status=Event.Status.PROCESSED)
    changed = consolidate(tenant_a, "alice", actor)

    assert changed.result["summaries_created"] == 1 and changed.result["summaries_removed"] == 1
    with as_tenant(tenant_a):
        after = {m.metadata["session_id"]: m for m in Memory.objects.filter(metadata__kind="session_summary")}
        assert set(after) == {"s-1", "s-2"}
        assert after["s-1"].pk == before["s-1"] and after["s-2"].pk != before["s-2"]
        assert "Rye flour works best." in after["s-2"].statement
        assert Event.objects.count() == 3  # sources are never deleted


def test_summary_text_is_deterministic_and_redacts_secrets():
    events = [Event(role="user", content="My api key is sk-abcdefghijklmnopqrstuvwxyz123456 please keep it.",
                    occurred_at=T0, seq=1)]
    text = session_summary_text("s", events)
    assert text == session_summary_text("s", events)
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in text


def test_consolidation_request_for_another_tenants_subject_is_not_found(tenant_a, tenant_b, actor):
    write(tenant_b, "carol", "Carol's fact.", actor)
    with pytest.raises(NotFound):
        consolidation_request(tenant=tenant_a, subject_ref="carol", actor=actor)


def test_consolidation_touches_only_its_own_tenant(tenant_a, tenant_b, actor):
    for tenant in (tenant_a, tenant_b):
        write(tenant, "alice", "My favourite colour is green.", actor)
        write(tenant, "alice", "My favorite color is green.", actor)
    consolidate(tenant_a, "alice", actor)
    with as_tenant(tenant_b):
        assert Memory.objects.filter(status="active").count() == 2


def test_sweep_queues_one_job_per_active_subject_and_none_twice(tenant_a, tenant_b, actor):
    write(tenant_a, "alice", "A fact.", actor)
    write(tenant_a, "bob", "B fact.", actor)
    write(tenant_b, "carol", "C fact.", actor)
    assert consolidation_sweep() == 3
    assert consolidation_sweep() == 0  # the queued ones are still waiting
    with as_tenant(tenant_a):
        assert set(Job.objects.filter(kind="consolidation").values_list("subject_ref", flat=True)) == {"alice", "bob"}


def test_near_duplicates_filed_under_different_keys_are_not_merged(tenant_a, actor):
    # A key-value client (the LangGraph store) may hold the same text under two keys: merging
    # them would take one key's item away.
    write(tenant_a, "alice", "My favourite colour is green.", actor, key="store:a")
    write(tenant_a, "alice", "My favorite color is green.", actor, key="store:b")
    assert consolidate(tenant_a, "alice", actor).result["merged_groups"] == 0
    with as_tenant(tenant_a):
        active = Memory.objects.filter(subject__external_id="alice", status="active")
        assert sorted(active.values_list("key", flat=True)) == ["store:a", "store:b"]
