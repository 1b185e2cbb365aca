"""The audit chain: writes never wait for it, every column that means something is hashed,
every blanked payload is named by a chained redaction entry, the application's role cannot
rewrite a sealed entry, and operators can verify a tenant from the command line."""
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction

from memoryapp.actors import Actor
from memoryapp.models import AuditEntry
from memoryapp.services.audit import audit_record, audit_redact, audit_seal, audit_verify
from memoryapp.services.memories import MemoryDraft, memory_write
from tests.conftest import as_tenant

ERASER = Actor("worker", "erasure")


def write(tenant, subject, statement, actor):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement), actor=actor).memory


class owner_sql:
    """SQL as the schema owner with the append-only trigger off: what an attacker holding the
    owner's rights can do. The chain has to catch it."""

    def __enter__(self):
        self.cursor = connections["owner"].cursor()
        self.cursor.execute("ALTER TABLE memoryapp_auditentry DISABLE TRIGGER memory_audit_append_only")
        return self.cursor

    def __exit__(self, *exc):
        self.cursor.execute("ALTER TABLE memoryapp_auditentry ENABLE TRIGGER memory_audit_append_only")
        self.cursor.close()


def entry_of(tenant, action="memory_written"):
    with as_tenant(tenant):
        return AuditEntry.objects.filter(action=action).order_by("seq").first()


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_a_write_commits_while_the_chain_is_locked_and_is_sealed_afterwards(tenant_a, actor):
    """The chain head's lock used to be taken inside every write transaction, where it
    deadlocked with the subject and memory row locks those transactions hold."""
    write(tenant_a, "alice", "I like green tea.", actor)
    done = threading.Event()

    def writer():
        try:
            write(tenant_a, "alice", "I live in Lisbon.", actor)
        finally:
            connection.close()
            done.set()

    with transaction.atomic(using="owner"):
        cursor = connections["owner"].cursor()
        cursor.execute("SELECT 1 FROM memoryapp_auditchain WHERE tenant_id = %s FOR UPDATE", [tenant_a.pk])
        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 20
        committed = False
        while time.monotonic() < deadline and not committed:
            cursor.execute("SELECT count(*) FROM memoryapp_memory WHERE statement = 'I live in Lisbon.'")
            committed = cursor.fetchone()[0] == 1
            time.sleep(0.05)
        assert committed, "the write waited for the audit chain's lock"
        cursor.execute("SELECT count(*) FROM memoryapp_auditentry WHERE tenant_id = %s AND seq IS NULL "
                       "AND action = 'memory_written'", [tenant_a.pk])
        assert cursor.fetchone()[0] == 1  # its entry is there, waiting to be sealed
    thread.join(30)
    assert done.is_set()
    with as_tenant(tenant_a):
        assert not AuditEntry.objects.filter(seq__isnull=True).exists()  # sealed once the lock was free
        assert list(AuditEntry.objects.order_by("seq").values_list("seq", flat=True)) == [1, 2]
    assert audit_verify(tenant=tenant_a).ok


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_a_forged_payload_marked_redacted_is_caught(tenant_a, actor):
    """The probe's forgery: UPDATE … SET after = <anything>, redacted_at = now()."""
    write(tenant_a, "alice", "I like green tea.", actor)
    entry = entry_of(tenant_a)
    with owner_sql() as cursor:
        cursor.execute("UPDATE memoryapp_auditentry SET after = '{\"statement\": \"I like coffee.\"}', "
                       "redacted_at = now() WHERE id = %s", [entry.pk])
    result = audit_verify(tenant=tenant_a)
    assert not result.ok and f"entry {entry.seq} payload was altered" in result.problems


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_a_payload_blanked_without_a_redaction_entry_is_caught(tenant_a, actor):
    write(tenant_a, "alice", "I like green tea.", actor)
    entry = entry_of(tenant_a)
    # The application's role may blank payloads (erasure does), but only a chained
    # audit_redacted entry naming the entry makes the blank legitimate.
    with as_tenant(tenant_a):
        AuditEntry.objects.filter(pk=entry.pk).update(after=None, redacted_at=entry.created_at)
    result = audit_verify(tenant=tenant_a)
    assert not result.ok and f"entry {entry.seq} payload was altered" in result.problems


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_a_redaction_verifies_and_putting_the_payload_back_is_caught(tenant_a, actor):
    memory = write(tenant_a, "alice", "I like green tea.", actor)
    entry = entry_of(tenant_a)
    with as_tenant(tenant_a):
        assert audit_redact(tenant=tenant_a, actor=ERASER, reason="test", memory_ids=[memory.pk]) == 1
    result = audit_verify(tenant=tenant_a)
    assert result.ok and result.redacted == 1, result.problems
    with as_tenant(tenant_a):
        redaction = AuditEntry.objects.get(action="audit_redacted")
        assert redaction.seq > entry.seq and redaction.details["count"] == 1
    with owner_sql() as cursor:
        cursor.execute("UPDATE memoryapp_auditentry SET after = %s WHERE id = %s",
                       ['{"statement": "I like green tea."}', entry.pk])
    result = audit_verify(tenant=tenant_a)
    assert f"entry {entry.seq} was redacted but holds a payload again" in result.problems


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
@pytest.mark.parametrize("column, value", [("subject_row_id", "12345"), ("subject_ref", "'mallory'"),
                                           ("target", "'elsewhere'"), ("actor_id", "'someone'")])
def test_every_column_that_means_something_is_hashed(tenant_a, actor, column, value):
    write(tenant_a, "alice", "I like green tea.", actor)
    entry = entry_of(tenant_a)
    with owner_sql() as cursor:
        cursor.execute(f"UPDATE memoryapp_auditentry SET {column} = {value} WHERE id = %s", [entry.pk])
    result = audit_verify(tenant=tenant_a)
    assert f"entry {entry.seq} was altered" in result.problems


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sql", [
    "UPDATE memoryapp_auditentry SET seq = seq + 100",
    "UPDATE memoryapp_auditentry SET entry_hash = repeat('0', 64)",
    "UPDATE memoryapp_auditentry SET after = '{\"statement\": \"forged\"}'",
    "UPDATE memoryapp_auditentry SET action = 'memory_read'",
    "DELETE FROM memoryapp_auditentry",
])
def test_the_application_role_cannot_rewrite_a_sealed_entry(tenant_a, actor, sql):
    write(tenant_a, "alice", "I like green tea.", actor)
    with pytest.raises(Exception), transaction.atomic():
        with as_tenant(tenant_a), connection.cursor() as cursor:
            cursor.execute(sql)
    assert audit_verify(tenant=tenant_a).ok


@pytest.mark.django_db
def test_entries_are_sealed_in_the_order_they_were_written(tenant_a, actor):
    with as_tenant(tenant_a):
        for n in range(5):
            audit_record(tenant=tenant_a, actor=actor, action=f"step-{n}")
        assert AuditEntry.objects.filter(seq__isnull=True).count() == 5
        assert audit_seal(tenant=tenant_a) == 5
        assert audit_seal(tenant=tenant_a) == 0
        assert list(AuditEntry.objects.order_by("seq").values_list("action", flat=True)) == [
            f"step-{n}" for n in range(5)]
        assert audit_verify(tenant=tenant_a).ok


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_audit_verify_command_says_what_it_checked_and_exits_non_zero_when_broken(tenant_a, actor):
    write(tenant_a, "alice", "I like green tea.", actor)
    write(tenant_a, "alice", "I live in Lisbon.", actor)
    out = StringIO()
    call_command("audit_verify", "--tenant", tenant_a.slug, stdout=out)
    assert "checked 2 entries" in out.getvalue() and "the chain verifies" in out.getvalue()

    entry = entry_of(tenant_a)
    with owner_sql() as cursor:
        cursor.execute("UPDATE memoryapp_auditentry SET action = 'memory_read' WHERE id = %s", [entry.pk])
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("audit_verify", "--tenant", tenant_a.slug, stdout=out)
    assert exited.value.code == 1
    assert "does NOT verify" in out.getvalue() and f"entry {entry.seq} was altered" in out.getvalue()


@pytest.mark.django_db
def test_audit_verify_command_refuses_an_unknown_tenant():
    from django.core.management import CommandError

    with pytest.raises(CommandError):
        call_command("audit_verify", "--tenant", "no-such-tenant", stdout=StringIO())


@pytest.mark.django_db(transaction=True)
def test_the_application_role_cannot_move_the_chain_head_back_or_insert_a_sealed_entry(tenant_a, actor):
    from memoryapp.models import AuditChain

    write(tenant_a, "alice", "I like green tea.", actor)
    write(tenant_a, "alice", "I live in Lisbon.", actor)
    with pytest.raises(Exception), transaction.atomic():
        with as_tenant(tenant_a):
            AuditChain.objects.filter(tenant=tenant_a).update(seq=1)
    with pytest.raises(Exception), transaction.atomic():
        with as_tenant(tenant_a):
            AuditEntry.objects.create(tenant=tenant_a, seq=99, actor_kind="system", action="forged",
                                      payload_digest="x", prev_hash="x", entry_hash="x", created_at=entry_of(
                                          tenant_a).created_at)
    assert audit_verify(tenant=tenant_a).ok


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_an_edited_tail_hidden_by_moving_the_head_back_is_caught(tenant_a, actor):
    for n in range(3):
        write(tenant_a, "alice", f"Fact number {n}.", actor)
    with as_tenant(tenant_a):
        last = AuditEntry.objects.order_by("-seq").first()
        previous = AuditEntry.objects.get(seq=last.seq - 1)
    with owner_sql() as cursor:
        cursor.execute("ALTER TABLE memoryapp_auditchain DISABLE TRIGGER memory_audit_chain_forward")
        cursor.execute("UPDATE memoryapp_auditentry SET after = NULL WHERE id = %s", [last.pk])
        cursor.execute("UPDATE memoryapp_auditchain SET seq = %s, head_hash = %s WHERE tenant_id = %s",
                       [previous.seq, previous.entry_hash, tenant_a.pk])
        cursor.execute("ALTER TABLE memoryapp_auditchain ENABLE TRIGGER memory_audit_chain_forward")
    result = audit_verify(tenant=tenant_a, seal=False)
    assert any("beyond the chain's head" in p for p in result.problems), result.problems


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_an_unknown_hash_version_is_not_a_pass(tenant_a, actor):
    write(tenant_a, "alice", "I like green tea.", actor)
    entry = entry_of(tenant_a)
    with owner_sql() as cursor:
        cursor.execute("UPDATE memoryapp_auditentry SET hash_version = 9, entry_hash = '' WHERE id = %s", [entry.pk])
    result = audit_verify(tenant=tenant_a)
    assert f"entry {entry.seq} claims an unknown hash version 9" in result.problems


@pytest.mark.django_db(transaction=True)
def test_a_forged_redaction_of_a_trillion_ids_is_checked_without_expanding_it(tenant_a, actor):
    write(tenant_a, "alice", "I like green tea.", actor)
    with as_tenant(tenant_a):
        audit_record(tenant=tenant_a, actor=actor, action="audit_redacted", details={"entry_ranges": [[1, 10**12]]})
    started = time.monotonic()
    result = audit_verify(tenant=tenant_a)
    assert time.monotonic() - started < 10 and result.redacted == 10**12


@pytest.mark.django_db(transaction=True)
def test_an_erasure_committed_but_not_yet_sealed_is_no_false_alarm(tenant_a, actor, monkeypatch):
    from memoryapp.services import audit

    memory = write(tenant_a, "alice", "I like green tea.", actor)
    # The redaction commits with the blanking; its own entry waits for the seal (here: forever).
    monkeypatch.setattr(audit, "_seal_after_commit", lambda tenant_id: None)
    with as_tenant(tenant_a):
        audit_redact(tenant=tenant_a, actor=ERASER, reason="test", memory_ids=[memory.pk])
    with as_tenant(tenant_a):
        assert AuditEntry.objects.get(action="audit_redacted").seq is None
    result = audit_verify(tenant=tenant_a, seal=False)
    assert result.ok, result.problems
