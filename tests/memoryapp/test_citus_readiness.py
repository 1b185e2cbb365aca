"""The schema stays ready for Citus (docs/scaling.md), read from pg_catalog, not from the models.

Citus distributes the tenant tables by tenant_id, and can then enforce only the primary keys,
unique constraints and foreign keys that include it. The tenant tables are found in the catalog
(every table with a tenant_id column), so a new one is checked the day it is created: it is
either distributed, and then obeys every rule here, or one of the few routing tables that are
replicated to every node (memoryapp/citus.py ROUTING_TABLES), named on purpose.
"""
import io

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import IntegrityError, connection, connections, transaction
from django.db.models import Count

from memoryapp import citus
from memoryapp.models import Subject, TenantRoute
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.services.signin import signin_link_consume, signin_link_create, token_hash
from memoryapp.services.tenants import api_key_authenticate, api_key_create

from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db

TENANT = citus.DISTRIBUTION_COLUMN


def _rows(sql: str, params=None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.fetchall()


def _tables_with_tenant_id() -> set[str]:
    return {name for (name,) in _rows(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attname = %s AND NOT a.attisdropped",
        [TENANT],
    )}


def _distributed_tables() -> set[str]:
    return _tables_with_tenant_id() - set(citus.ROUTING_TABLES)


# The columns of an index in order; NULL for an expression.
INDEX_COLUMNS = """
    ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
          LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord)
"""


def test_every_table_with_a_tenant_id_is_distributed_or_a_named_routing_table():
    plan = citus.layout()
    found = _tables_with_tenant_id()
    expected = set(plan.distributed) | (set(citus.ROUTING_TABLES) & set(plan.reference))
    assert found == expected, (
        f"in the database, not the layout: {sorted(found - expected)}; "
        f"in the layout, not the database: {sorted(expected - found)}"
    )
    assert len(plan.distributed) >= 13


def test_every_primary_key_and_unique_index_of_a_tenant_table_starts_with_tenant_id():
    violations = []
    for table in sorted(_distributed_tables()):
        indexes = _rows(
            f"SELECT i.indexrelid::regclass::text, i.indisprimary, {INDEX_COLUMNS} "
            "FROM pg_index i WHERE i.indrelid = %s::regclass AND i.indisunique",
            [table],
        )
        if not any(primary for _, primary, _ in indexes):
            violations.append(f"{table}: no primary key")
        for name, primary, columns in indexes:
            if not columns or columns[0] != TENANT:
                kind = "primary key" if primary else "unique index"
                violations.append(f"{table}: {kind} {name} on {columns}")
    assert not violations, "keys Citus could not enforce:\n" + "\n".join(violations)


def test_every_foreign_key_of_a_tenant_table_pairs_tenant_id_with_tenant_id():
    distributed = _distributed_tables()
    violations = []
    for name, table, target, columns, target_columns in _rows(
        "SELECT con.conname, con.conrelid::regclass::text, con.confrelid::regclass::text, "
        "  ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a "
        "        ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.o), "
        "  ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a "
        "        ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.o) "
        "FROM pg_constraint con JOIN pg_namespace n ON n.oid = con.connamespace "
        "WHERE con.contype = 'f' AND n.nspname = current_schema()"
    ):
        if table in distributed:
            if columns[0] != TENANT:
                violations.append(f"{table}.{name}: {columns} -> {target}{target_columns}")
            elif target in distributed and target_columns[0] != TENANT:
                violations.append(f"{table}.{name}: {columns} -> {target}{target_columns}")
        elif target in distributed:
            # A replicated or local row cannot point at a row that lives on one node.
            violations.append(f"{table}.{name}: a table that is not distributed references {target}")
    assert not violations, "foreign keys Citus could not enforce:\n" + "\n".join(violations)


def test_the_foreign_keys_between_tenant_tables_are_all_there():
    """db_constraint=False on the model fields must not mean no constraint: each one the ORM
    relies on is in the database, composite (0015), and validated (0016)."""
    constraints = {
        (table, tuple(columns)): validated
        for table, columns, validated in _rows(
            "SELECT conrelid::regclass::text, ARRAY(SELECT a.attname FROM unnest(conkey) WITH ORDINALITY k(n, o) "
            "JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k.n ORDER BY k.o), convalidated "
            "FROM pg_constraint WHERE contype = 'f'"
        )
    }
    from django.apps import apps

    distributed = _distributed_tables()
    missing = []
    for model in apps.get_models():
        table = model._meta.db_table
        for field in model._meta.concrete_fields:
            if field.is_relation and field.related_model._meta.db_table in distributed and table in distributed:
                key = (table, (TENANT, field.column))
                if not constraints.get(key):
                    missing.append(f"{table}({TENANT}, {field.column}): {'not validated' if key in constraints else 'missing'}")
    assert not missing, "\n".join(missing)


def test_every_tenant_table_has_row_level_security_on_tenant_id():
    violations = []
    for table in sorted(_distributed_tables()):
        [(enabled,)] = _rows("SELECT relrowsecurity FROM pg_class WHERE oid = %s::regclass", [table])
        policies = _rows(
            "SELECT polcmd, polpermissive, pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid) "
            "FROM pg_policy WHERE polrelid = %s::regclass",
            [table],
        )
        isolating = [
            p for p in policies
            if p[0] == "*" and p[1] and all(e and TENANT in e and "app.tenant_id" in e for e in p[2:])
        ]
        if not enabled:
            violations.append(f"{table}: row-level security is not enabled")
        if not isolating:
            violations.append(f"{table}: no policy for every command on tenant_id = app.tenant_id")
    assert not violations, "\n".join(violations)


def test_the_application_role_is_bound_by_row_level_security_on_every_tenant_table():
    """RLS is enabled, not forced: the schema owner bypasses it on purpose (migrations, and the
    SECURITY DEFINER lookups of 0002/0013 that run before a tenant is known). So what binds the
    application is that its role neither owns a tenant table nor bypasses RLS."""
    [(is_super, bypasses)] = _rows(
        "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", [settings.DB_APP_USER]
    )
    owned = [t for (t,) in _rows(
        "SELECT c.relname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
        "WHERE r.rolname = %s AND c.relname = ANY(%s)", [settings.DB_APP_USER, sorted(_distributed_tables())]
    )]
    assert (is_super, bypasses, owned) == (False, False, [])


def test_the_layout_command_distributes_every_tenant_table_colocated_by_tenant_id():
    out = io.StringIO()
    call_command("citus_layout", stdout=out)
    statements = [line for line in out.getvalue().splitlines() if line.startswith("SELECT create_")]
    plan = citus.layout()
    distributed = _distributed_tables()
    anchor = plan.colocation_anchor
    assert f"SELECT create_distributed_table('{anchor}', 'tenant_id', colocate_with => 'none');" in statements
    for table in distributed - {anchor}:
        assert (f"SELECT create_distributed_table('{table}', 'tenant_id', colocate_with => '{anchor}');"
                in statements), table
    for table in [citus.TENANT_TABLE, *citus.ROUTING_TABLES, "auth_user"]:
        assert f"SELECT create_reference_table('{table}');" in statements
    # Each table once, and after every table it references (Citus refuses it otherwise).
    order = [s.split("'")[1] for s in statements]
    assert len(order) == len(set(order))
    assert set(order) == set(plan.distributed) | set(plan.reference)
    for name, table, target in _rows(
        "SELECT conname, conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint "
        "WHERE contype = 'f' AND conrelid <> confrelid"
    ):
        if table in order:
            assert target in order and order.index(target) < order.index(table), (name, table, target)


def test_a_row_cannot_reference_another_tenants_row(tenant_a, tenant_b, actor):
    """What the composite keys add beyond Citus: the database itself refuses an event of tenant B
    filed under tenant A's subject, which a single-column foreign key allowed."""
    memory_write(tenant=tenant_a, subject_ref="alice", draft=MemoryDraft(statement="I like tea."), actor=actor)
    event_append(tenant=tenant_b, subject_ref="alice", events=[EventInput("e1", "user", "hello")], actor=actor)
    with as_tenant(tenant_a):
        alice_a = Subject.objects.get(tenant=tenant_a, external_id="alice").pk
    # As tenant B, which row-level security allows (the event is B's, tenant_id stays B's);
    # foreign-key checks do not see through row-level security, so only the key can refuse.
    with pytest.raises(IntegrityError), as_tenant(tenant_b), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("UPDATE memoryapp_event SET subject_id = %s", [alice_a])


def test_the_orm_groups_tenant_rows_although_their_database_primary_key_is_composite(tenant_a, actor):
    """Django groups a whole row by its `id` alone, which PostgreSQL allows only when `id` is the
    primary key: memoryapp.dbbackend turns that off for the tenant tables."""
    for statement in ("I like tea.", "I live in Porto."):
        memory_write(tenant=tenant_a, subject_ref="alice", draft=MemoryDraft(statement=statement), actor=actor)
    memory_write(tenant=tenant_a, subject_ref="bob", draft=MemoryDraft(statement="I like maps."), actor=actor)
    with as_tenant(tenant_a):
        counted = sorted((s.external_id, s.n) for s in Subject.objects.annotate(n=Count("memories")))
    assert counted == [("alice", 2), ("bob", 1)]


class _Rollback(Exception):
    pass


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_credentials_are_found_through_their_route_before_the_tenant_is_known(tenant_a, tenant_b, actor):
    key_a, raw_a = api_key_create(tenant=tenant_a, name="a", actor=actor)
    api_key_create(tenant=tenant_b, name="b", actor=actor)
    url, _ = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=actor)
    link_hash = token_hash(url.rsplit("/", 1)[-1])
    assert set(TenantRoute.objects.filter(tenant=tenant_a).values_list("kind", "lookup")) == {
        ("api_key", key_a.prefix), ("signin_link", link_hash),
    }
    # The lookups citus_layout installs before distributing (route only, no fallback): tried in
    # a transaction of the schema owner that is rolled back, so the migration's stay for the rest.
    with pytest.raises(_Rollback), transaction.atomic(using="owner"), connections["owner"].cursor() as cursor:
        cursor.execute(citus.ROUTE_BACKFILL_SQL)
        cursor.execute(citus.ROUTED_LOOKUPS_SQL)
        cursor.execute("SELECT id, tenant_id FROM memory_api_key_lookup(%s)", [key_a.prefix])
        assert cursor.fetchall() == [(key_a.id, tenant_a.pk)]
        cursor.execute("SELECT tenant_id, subject_ref FROM memory_signin_link_consume(%s)", [link_hash])
        assert cursor.fetchall() == [(tenant_a.pk, "alice")]
        cursor.execute("DELETE FROM memoryapp_tenantroute WHERE kind = 'api_key'")
        cursor.execute("SELECT id FROM memory_api_key_lookup(%s)", [key_a.prefix])
        assert cursor.fetchall() == []
        raise _Rollback
    # The migration's lookups also find a key a process of the previous release made without a
    # route (rolling deploy).
    TenantRoute.objects.filter(kind="api_key").delete()
    with transaction.atomic():
        assert api_key_authenticate(raw_a).id == key_a.id
    with transaction.atomic():
        assert signin_link_consume(url.rsplit("/", 1)[-1]) == (tenant_a.pk, "alice")
