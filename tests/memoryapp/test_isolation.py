"""Tenant isolation is enforced by PostgreSQL itself, not by the queries we remember to write."""
import pytest
from django.db import connection, connections, transaction

from memoryapp import citus
from memoryapp.models import Event, Memory
from memoryapp.retrieval import memory_search
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.tenancy import tenant_activate

pytestmark = pytest.mark.django_db


def write(tenant, subject, statement, actor, **kw):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement, **kw), actor=actor)


def test_raw_sql_without_tenant_filter_returns_no_foreign_row(tenant_a, tenant_b, actor):
    write(tenant_a, "alice", "Alice's account number ends in 4417.", actor)
    write(tenant_b, "alice", "Tenant B's Alice prefers tea.", actor)
    event_append(tenant=tenant_b, subject_ref="alice", events=[EventInput("e1", "user", "hello from B")], actor=actor)

    tenant_activate(tenant=tenant_a)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, tenant_id FROM memoryapp_memory")
        rows = cursor.fetchall()
        cursor.execute("SELECT count(*) FROM memoryapp_event")
        events = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM memoryapp_auditentry WHERE tenant_id = %s", [tenant_b.pk])
        foreign_audit = cursor.fetchone()[0]
    assert rows == [("Alice's account number ends in 4417.", tenant_a.pk)]
    assert events == 0
    assert foreign_audit == 0


def test_application_role_is_neither_owner_nor_superuser():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.rolsuper, r.rolbypassrls, c.relowner = r.oid FROM pg_roles r, pg_class c "
            "WHERE r.rolname = current_user AND c.relname = 'memoryapp_memory'"
        )
        is_super, bypasses_rls, owns_table = cursor.fetchone()
    assert (is_super, bypasses_rls, owns_table) == (False, False, False)


def test_with_no_tenant_set_the_application_sees_nothing(tenant_a, actor):
    write(tenant_a, "alice", "I like hiking.", actor)
    # A fresh connection (autocommit, no transaction) has no tenant: every tenant table is empty.
    other = connections.create_connection("default")
    try:
        other.connect()
        with other.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memoryapp_memory")
            assert cursor.fetchone()[0] == 0
    finally:
        other.close()


def test_writing_a_row_for_another_tenant_is_refused_by_the_database(tenant_a, tenant_b, actor):
    memory = write(tenant_a, "alice", "I like hiking.", actor).memory
    tenant_activate(tenant=tenant_a)
    with pytest.raises(Exception) as excinfo, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE memoryapp_memory SET tenant_id = %s WHERE id = %s", [tenant_b.pk, memory.pk])
    assert "row-level security" in str(excinfo.value)


def test_search_never_returns_another_tenants_memory_for_the_same_subject_id(tenant_a, tenant_b, actor):
    write(tenant_a, "alice", "I am allergic to peanuts.", actor)
    write(tenant_b, "alice", "I am allergic to shellfish.", actor)
    hits_a = memory_search(tenant=tenant_a, subject_ref="alice", query="what allergies?", k=10)
    hits_b = memory_search(tenant=tenant_b, subject_ref="alice", query="what allergies?", k=10)
    assert [h.memory.statement for h in hits_a] == ["I am allergic to peanuts."]
    assert [h.memory.statement for h in hits_b] == ["I am allergic to shellfish."]


def test_search_never_returns_another_subjects_memory(tenant_a, actor):
    write(tenant_a, "alice", "I am allergic to peanuts.", actor)
    write(tenant_a, "bob", "I am allergic to penicillin.", actor)
    hits = memory_search(tenant=tenant_a, subject_ref="bob", query="allergic", k=10)
    assert [h.memory.statement for h in hits] == ["I am allergic to penicillin."]
    assert all(h.memory.subject.external_id == "bob" for h in hits)
    assert Memory.objects.filter(tenant=tenant_a).count() == 2
    assert Event.objects.count() == 0


def test_every_table_with_a_tenant_column_has_row_level_security():
    # Read from the catalogue, so a new tenant table without its policy cannot slip in unnoticed.
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, c.relrowsecurity,
                      EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'tenant_isolation')
               FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
               WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
                 AND a.attname = 'tenant_id' AND NOT a.attisdropped"""
        )
        tables = cursor.fetchall()
    assert len(tables) >= 10
    # Identity and routing read before any tenant is known (models.ConsoleAccount, TenantRoute say
    # why): the only exceptions, named in one place (on Citus they are reference tables).
    identity = set(citus.ROUTING_TABLES)
    assert identity == {"memoryapp_consoleaccount", "memoryapp_tenantroute"}
    unprotected = [name for name, secured, has_policy in tables if not (secured and has_policy)]
    assert sorted(unprotected) == sorted(identity)
