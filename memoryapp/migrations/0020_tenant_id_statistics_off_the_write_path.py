"""No planner statistics on tenant_id outside memoryapp_memory: a tenant is estimated alike
whether or not ANALYZE has seen it.

ANALYZE samples a table's tenant_id into a list of the most common values. With up to a hundred
tenants the list holds them all, so a tenant whose rows arrived after the last ANALYZE (a new
tenant importing its history beside older ones; autovacuum analyzes a large table only after
10 % of it changed) is estimated at about no rows. PostgreSQL folds the row-level security
policy's current_setting() into a constant for that estimate too, so every query is affected.
Every index led by tenant_id then looks as cheap as the one a statement needs: the extraction's
event claims and counts by job read the tenant's whole range of event_seq_unique_per_subject
(each a few hundred rows per call in tests/workers/test_unknown_tenant_plans.py, and each such
read grows with the tenant, so an import's cost grows with its square).

Without statistics the planner takes a tenant as 1/200 of a table: never "no rows", and a small
share of a large table, so a selective index (by id, by job, by event) wins whenever there is
one. The other columns keep their statistics.

memoryapp_memory keeps them: search plans a subject's candidates on them. Without them (tried
with this migration covering memories too) a search at a subject's cap of 10,000 chose a bitmap
scan and nested loops over a sequential scan and hash joins: slower in each of three alternating
pairs, by 0.2-3.1 ms at p50 (2-16 ms on a slower machine); with them kept, its plans are the same
as before node for node (docs/benchmarks.md). The write path's statements on memories by event or
by id give the tenant as a parameter instead (services/extraction.py, services/memories.py).

A column's statistics are not removed by ANALYZE once its target is 0, only no longer updated,
so the stale sample (the very one that misleads) would stay for good. Deleting it from
pg_statistic needs a superuser: when the migrating role is one (the embedded default, a fresh
PostgreSQL with trust auth) it is deleted here. Otherwise a table already sampled keeps its
statistics as before (no worse than without this migration) and the migration prints the
statements a superuser must run once; a table never sampled (a fresh database) has nothing to
delete and loses its statistics here. Reversed, the targets return to the default, and the
statistics with the next ANALYZE.
"""
import sys

from django.db import migrations

# Every table whose primary key is (tenant_id, id) (migration 0015) but the memories.
TABLES = [
    "memoryapp_subject", "memoryapp_event", "memoryapp_memorychange",
    "memoryapp_memoryevidence", "memoryapp_memorylineage", "memoryapp_job", "memoryapp_auditentry",
    "memoryapp_apikey", "memoryapp_readaudit", "memoryapp_exportfile", "memoryapp_idempotencyrecord",
    "memoryapp_signinlink",
]

DELETE_STALE = (
    "DELETE FROM pg_statistic s USING pg_attribute a "
    "WHERE s.starelid = a.attrelid AND s.staattnum = a.attnum AND a.attname = 'tenant_id' "
    "AND a.attrelid IN ({tables})"
)


def _regclasses() -> str:
    return ", ".join(f"'{table}'::regclass" for table in TABLES)


def forget(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        superuser = cursor.fetchone()[0]
        cursor.execute(
            "SELECT DISTINCT tablename FROM pg_stats WHERE attname = 'tenant_id' "
            "AND schemaname = current_schema() AND tablename = ANY(%s)",
            [TABLES],
        )
        analyzed = {row[0] for row in cursor.fetchall()}
        # A table whose stale sample cannot be deleted keeps its target (ANALYZE keeps refreshing
        # that sample, as before this migration) rather than freeze the sample that misleads.
        stuck = [] if superuser else sorted(analyzed)
        for table in TABLES:
            if table not in stuck:
                cursor.execute(f"ALTER TABLE {table} ALTER COLUMN tenant_id SET STATISTICS 0")
        if superuser and analyzed:
            cursor.execute(DELETE_STALE.format(tables=_regclasses()))
        if stuck:
            statements = [f"ALTER TABLE {table} ALTER COLUMN tenant_id SET STATISTICS 0;" for table in stuck]
            statements.append(DELETE_STALE.format(tables=_regclasses()) + ";")
            sys.stderr.write(
                "\nmemoryapp 0020: tenant_id keeps its statistics on tables ANALYZE has sampled, "
                "since deleting a sample needs a superuser. As one, run once in this database:\n  "
                + "\n  ".join(statements) + "\n"
            )


def restore(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN tenant_id SET STATISTICS -1")


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0019_tenant_id_served_by_primary_key"),
    ]

    operations = [migrations.RunPython(forget, restore)]
