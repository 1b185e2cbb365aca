from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from memoryapp.models import AuditEntry, Memory
from memoryapp.retrieval import memory_search
from memoryapp.errors import PolicyRejected
from memoryapp.services.audit import audit_verify
from memoryapp.services.memories import MemoryDraft, memory_correct, memory_write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def write(tenant, subject, statement, actor, **kw):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement, **kw), actor=actor)


def statements(hits):
    return [h.memory.statement for h in hits]


def test_superseded_fact_is_not_returned_for_current_queries_but_is_as_of_before(tenant_a, actor):
    then = timezone.now() - timedelta(days=30)
    old = write(tenant_a, "alice", "I work in Shanghai.", actor, key="user:work_city", valid_from=then).memory
    change = timezone.now() - timedelta(days=2)
    new = write(tenant_a, "alice", "I have been transferred to Hangzhou.", actor, key="user:work_city",
                valid_from=change)
    assert new.superseded == [old]
    old.refresh_from_db()
    assert old.status == "superseded" and old.superseded_by_id == new.memory.pk and old.valid_to == change

    current = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does the user work?", k=5)
    assert statements(current) == ["I have been transferred to Hangzhou."]
    before = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does the user work?", k=5,
                           as_of=change - timedelta(days=1))
    assert statements(before) == ["I work in Shanghai."]
    both = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does the user work?", k=5,
                         include_superseded=True)
    assert set(statements(both)) == {"I work in Shanghai.", "I have been transferred to Hangzhou."}


def test_correction_creates_a_new_version_and_keeps_the_old_in_history(tenant_a, actor):
    old = write(tenant_a, "alice", "I prefer answers with the conclusion first.", actor).memory
    new = memory_correct(tenant=tenant_a, memory=old, statement="I prefer answers with the evidence first.",
                         actor=actor)
    old.refresh_from_db()
    assert old.status == "superseded" and old.superseded_by_id == new.pk
    assert new.status == "active" and new.source_kind == "user_explicit"
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="how should answers be ordered", k=5)
    assert statements(hits) == ["I prefer answers with the evidence first."]


def test_identical_writes_reinforce_instead_of_duplicating(tenant_a, actor):
    first = write(tenant_a, "alice", "I am vegetarian.", actor)
    second = write(tenant_a, "alice", "  i am VEGETARIAN ", actor)
    assert first.created and not second.created
    assert second.memory.pk == first.memory.pk
    assert Memory.objects.filter(tenant=tenant_a).count() == 1
    # The same statement in another namespace is another memory.
    third = write(tenant_a, "alice", "I am vegetarian.", actor, namespace="travel-agent/preference")
    assert third.created


def test_expired_memories_never_rank(tenant_a, actor):
    write(tenant_a, "alice", "My hotel room is 1204.", actor, expires_at=timezone.now() - timedelta(minutes=1))
    write(tenant_a, "alice", "My favourite hotel chain is Hilton.", actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="hotel room 1204", k=10)
    assert statements(hits) == ["My favourite hotel chain is Hilton."]


def test_pending_procedural_memory_never_ranks(tenant_a, actor):
    pending = write(tenant_a, "alice", "Always run the linter before committing.", actor,
                    memory_type="procedural").memory
    assert pending.status == "pending_approval"
    assert memory_search(tenant=tenant_a, subject_ref="alice", query="linter before committing", k=10) == []


def test_secrets_are_refused_and_the_refusal_is_audited_without_the_secret(tenant_a, actor):
    with pytest.raises(PolicyRejected):
        write(tenant_a, "alice", "My password is Tr0ub4dor&3", actor)
    refusal = AuditEntry.objects.get(tenant=tenant_a, action="policy_refused")
    assert "Tr0ub4dor" not in str(refusal.details) and refusal.details["secret_kinds"] == ["password"]
    assert not Memory.objects.filter(tenant=tenant_a).exists()


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_audit_chain_verifies_and_detects_an_edited_entry(tenant_a, actor):
    write(tenant_a, "alice", "I like green tea.", actor)
    write(tenant_a, "alice", "I live in Lisbon.", actor)
    verification = audit_verify(tenant=tenant_a)
    assert verification.ok, verification.problems
    with as_tenant(tenant_a):
        entry = AuditEntry.objects.filter(tenant=tenant_a, action="memory_written").order_by("seq").first()
    with connections["owner"].cursor() as cursor:  # an attacker with owner rights edits history
        cursor.execute("UPDATE memoryapp_auditentry SET action = 'memory_read' WHERE id = %s", [entry.pk])
    result = audit_verify(tenant=tenant_a)
    assert not result.ok and any(f"entry {entry.seq} was altered" in p for p in result.problems)


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_audit_chain_detects_a_deleted_entry(tenant_a, actor):
    for city in ("Lisbon", "Porto", "Faro"):
        write(tenant_a, "alice", f"I visited {city}.", actor)
    assert audit_verify(tenant=tenant_a).ok
    with as_tenant(tenant_a):
        middle = AuditEntry.objects.filter(tenant=tenant_a).order_by("seq")[1]
    with connections["owner"].cursor() as cursor:
        cursor.execute("DELETE FROM memoryapp_auditentry WHERE id = %s", [middle.pk])
    result = audit_verify(tenant=tenant_a)
    assert not result.ok and any("missing" in p for p in result.problems)


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_audit_chain_detects_an_edited_payload(tenant_a, actor):
    write(tenant_a, "alice", "I like green tea.", actor)
    with as_tenant(tenant_a):
        entry = AuditEntry.objects.get(tenant=tenant_a, action="memory_written")
    with connections["owner"].cursor() as cursor:
        # The trigger refuses any role; an attacker with owner rights turns it off first.
        cursor.execute("ALTER TABLE memoryapp_auditentry DISABLE TRIGGER memory_audit_append_only")
        try:
            cursor.execute(
                "UPDATE memoryapp_auditentry SET after = jsonb_set(after, '{statement}', '\"I like coffee.\"') "
                "WHERE id = %s", [entry.pk],
            )
        finally:
            cursor.execute("ALTER TABLE memoryapp_auditentry ENABLE TRIGGER memory_audit_append_only")
    assert not audit_verify(tenant=tenant_a).ok


def test_the_application_role_cannot_rewrite_or_delete_audit_entries(tenant_a, actor):
    from django.db import connection, transaction

    write(tenant_a, "alice", "I like green tea.", actor)
    for sql in ("UPDATE memoryapp_auditentry SET action = 'x'", "DELETE FROM memoryapp_auditentry"):
        with pytest.raises(Exception) as excinfo, transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(sql)
        assert "permission denied" in str(excinfo.value)
