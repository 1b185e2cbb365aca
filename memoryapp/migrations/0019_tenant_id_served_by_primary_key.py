"""No one-column index on tenant_id where the primary key is (tenant_id, id) (migration 0015).

That key serves every read by tenant (a tenant's rows, a cascade on deleting it), so the index was
a second copy to write on every insert. It also misled the planner: as the smallest index led by
tenant_id it won whenever the tenant's range was estimated at about no rows (statistics taken
before the tenant had rows, migration 0020), and a memory's evidence, the audit chain's sealing
and `UPDATE memory ... WHERE id = X` read the tenant's whole range through it instead of the
primary key or the index made for them (tests/workers/test_unknown_tenant_plans.py; the last
could still tie the primary key with memory_scope_idx: services/memories.py, _this_memory).

Dropped concurrently, outside a transaction, by catalogue lookup (Django names the index with a
hash): AlterField alone would also drop and re-add each table's foreign key to the tenant, a
lock on the busiest tables held while every row is checked again. In the ORM the fields only
gain db_index=False.
"""
from django.db import migrations, models
from django.db.models import deletion

TABLES = [
    "memoryapp_subject", "memoryapp_event", "memoryapp_memory", "memoryapp_memorychange",
    "memoryapp_memoryevidence", "memoryapp_memorylineage", "memoryapp_job", "memoryapp_auditentry",
    "memoryapp_apikey", "memoryapp_readaudit", "memoryapp_exportfile", "memoryapp_idempotencyrecord",
    "memoryapp_signinlink",
]

# The non-unique, one-column btree indexes on a table's tenant_id.
TENANT_ONLY_INDEXES = """
SELECT i.relname FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_am am ON am.oid = i.relam
JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
WHERE x.indrelid = %s::regclass AND x.indnatts = 1 AND NOT x.indisunique AND x.indpred IS NULL
  AND am.amname = 'btree' AND a.attname = 'tenant_id'
"""


def drop_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(TENANT_ONLY_INDEXES, [table])
            for (name,) in cursor.fetchall():
                cursor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')


def create_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {table}_tenant_id ON {table} (tenant_id)")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0018_memory_episode_of_event_idx"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=table.removeprefix("memoryapp_"), name="tenant",
                    field=models.ForeignKey(db_index=False, on_delete=deletion.CASCADE, to="memoryapp.tenant"),
                )
                for table in TABLES
            ],
            database_operations=[migrations.RunPython(drop_indexes, create_indexes, atomic=False)],
        ),
    ]
