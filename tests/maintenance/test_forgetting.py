"""Forgetting: TTL expiry and the per-subject cap change status (never delete), are audited,
spare explicit semantic memories until last, and stay inside their tenant."""
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.models import AuditEntry, Memory
from memoryapp.services.forgetting import decay_score, forgetting_apply, forgetting_request, forgetting_sweep
from tests.conftest import as_tenant
from tests.maintenance.conftest import run, write

pytestmark = pytest.mark.django_db


def test_ttl_expiry_marks_passed_memories_expired_and_audits_each(tenant_a, tenant_b, actor):
    past = timezone.now() - timedelta(minutes=5)
    gone = write(tenant_a, "alice", "My gate number is B12.", actor, expires_at=past)
    later = write(tenant_a, "alice", "My flight lands at 18:40.", actor, expires_at=timezone.now() + timedelta(days=1))
    forever = write(tenant_a, "alice", "I am vegetarian.", actor)
    other_tenant = write(tenant_b, "alice", "Tenant B's gate is C3.", actor, expires_at=past)

    job = run(tenant_a, forgetting_request(tenant=tenant_a, subject_ref="alice", actor=actor))

    assert job.status == "succeeded" and job.result["expired"] == 1
    with as_tenant(tenant_a):
        assert {m.pk: (m.status, m.status_reason) for m in Memory.objects.all()} == {
            gone.pk: ("expired", "ttl"), later.pk: ("active", ""), forever.pk: ("active", ""),
        }
        entry = AuditEntry.objects.get(memory_id=gone.pk, action="memory_expired")
        assert entry.details["reason"] == "ttl" and entry.actor_kind == "worker"
    with as_tenant(tenant_b):
        assert Memory.objects.get(pk=other_tenant.pk).status == "active"


def test_sweep_expires_in_every_tenant_and_a_second_sweep_does_nothing(tenant_a, tenant_b, actor):
    past = timezone.now() - timedelta(seconds=1)
    write(tenant_a, "alice", "Temporary note: the parcel is with the neighbour at 14.", actor, expires_at=past)
    write(tenant_b, "carol", "Temporary note: the parcel is with the porter.", actor, expires_at=past)
    assert forgetting_sweep() == {"expired": 2, "archived": 0}
    assert forgetting_sweep() == {"expired": 0, "archived": 0}


def test_cap_archives_the_lowest_scoring_and_explicit_semantic_last(tenant_a, actor):
    old = timezone.now() - timedelta(days=400)
    # Explicit but weak and old: still kept while anything else can go.
    explicit_weak = write(tenant_a, "alice", "I once said I like jazz.", actor, importance=0.0, confidence=0.1,
                          valid_from=old)
    weak = write(tenant_a, "alice", "The assistant guessed Alice likes opera.", actor, source_kind="assistant",
                 importance=0.1, confidence=0.3, valid_from=old)
    medium = write(tenant_a, "alice", "Alice mentioned a cat.", actor, source_kind="user", importance=0.4,
                   confidence=0.6, valid_from=old)
    strong = write(tenant_a, "alice", "Alice is a nurse.", actor, importance=0.9, confidence=0.9)
    write(tenant_a, "bob", "Bob's only memory.", actor, source_kind="user", importance=0.0, confidence=0.0,
          valid_from=old)

    result = forgetting_apply(tenant=tenant_a, cap=2)

    assert result["archived"] == 2
    with as_tenant(tenant_a):
        status = {m.pk: (m.status, m.status_reason) for m in Memory.objects.filter(subject__external_id="alice")}
        assert status[weak.pk] == ("expired", "archived_by_cap")
        assert status[medium.pk] == ("expired", "archived_by_cap")
        assert status[explicit_weak.pk] == ("active", "") and status[strong.pk] == ("active", "")
        assert Memory.objects.filter(subject__external_id="bob", status="active").count() == 1  # under the cap
        archived = AuditEntry.objects.filter(action="memory_archived")
        assert set(archived.values_list("memory_id", flat=True)) == {weak.pk, medium.pk}
        assert all("decay_score" in e.details for e in archived)
    # Over the cap with only explicit ones left, they go too, lowest first.
    forgetting_apply(tenant=tenant_a, cap=1)
    with as_tenant(tenant_a):
        assert Memory.objects.get(pk=explicit_weak.pk).status == "expired"
        assert Memory.objects.get(pk=strong.pk).status == "active"


def test_cap_uses_the_setting_and_never_touches_another_tenant(tenant_a, tenant_b, actor, settings):
    settings.MEMORY_SUBJECT_CAP = 1
    for tenant in (tenant_a, tenant_b):
        write(tenant, "alice", "First thing.", actor, source_kind="user")
        write(tenant, "alice", "Second thing.", actor, source_kind="user")
    run(tenant_a, forgetting_request(tenant=tenant_a, actor=actor))
    with as_tenant(tenant_a):
        assert Memory.objects.filter(status="active").count() == 1
    with as_tenant(tenant_b):
        assert Memory.objects.filter(status="active").count() == 2


def test_decay_score_rises_with_recency_use_confidence_and_importance(tenant_a, actor):
    now = timezone.now()
    base = Memory(valid_from=now - timedelta(days=90), confidence=0.5, importance=0.5, access_count=0)
    fresher = Memory(valid_from=now, confidence=0.5, importance=0.5, access_count=0)
    used = Memory(valid_from=now - timedelta(days=90), confidence=0.5, importance=0.5, access_count=10,
                  last_accessed_at=now - timedelta(days=90))
    surer = Memory(valid_from=now - timedelta(days=90), confidence=0.9, importance=0.5, access_count=0)
    weightier = Memory(valid_from=now - timedelta(days=90), confidence=0.5, importance=0.9, access_count=0)
    b = decay_score(base, now)
    assert all(decay_score(m, now) > b for m in (fresher, used, surer, weightier))
    assert 0.0 <= b <= 1.0
    # Half-life: 90 days halves the recency part.
    assert decay_score(fresher, now) - b == pytest.approx(0.35 * 0.5, abs=1e-4)
