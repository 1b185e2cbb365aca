"""The unique indexes behind the composite keys of 0015, built CONCURRENTLY (issue 18).

Every tenant table gets a unique index on (tenant_id, id), which 0015 makes its primary key, and
each unique rule that lacked tenant_id gets its composite twin, which 0015 turns into the
constraint in place of the old one. CREATE UNIQUE INDEX CONCURRENTLY takes no lock that blocks
reads or writes: on a large live table it costs time (two scans of the table and a sort), not
availability. Measured at 1M memories: docs/scaling.md, "What the migrations cost".

Not atomic (CONCURRENTLY cannot run in a transaction). A build that fails (a cancelled statement,
a lost connection) leaves an INVALID index behind; a rerun drops it and builds again, so the
migration can simply be run again.
"""
from django.db import migrations

# (index name, table, columns). The primary-key indexes are renamed <table>_pkey by 0015; the
# others take the name of the constraint they become (Django's name for it, so the model state
# and the database agree).
PRIMARY_KEYS = [
    ("memoryapp_subject_tpk", "memoryapp_subject"),
    ("memoryapp_event_tpk", "memoryapp_event"),
    ("memoryapp_memory_tpk", "memoryapp_memory"),
    ("memoryapp_memorychange_tpk", "memoryapp_memorychange"),
    ("memoryapp_memoryevidence_tpk", "memoryapp_memoryevidence"),
    ("memoryapp_memorylineage_tpk", "memoryapp_memorylineage"),
    ("memoryapp_job_tpk", "memoryapp_job"),
    ("memoryapp_auditentry_tpk", "memoryapp_auditentry"),
    ("memoryapp_apikey_tpk", "memoryapp_apikey"),
    ("memoryapp_readaudit_tpk", "memoryapp_readaudit"),
    ("memoryapp_exportfile_tpk", "memoryapp_exportfile"),
    ("memoryapp_idempotencyrecord_tpk", "memoryapp_idempotencyrecord"),
    ("memoryapp_signinlink_tpk", "memoryapp_signinlink"),
]
UNIQUES = [
    ("event_id_unique_per_subject_t", "memoryapp_event", "tenant_id, subject_id, event_id"),
    ("event_seq_unique_per_subject_t", "memoryapp_event", "tenant_id, subject_id, seq"),
    ("evidence_unique_t", "memoryapp_memoryevidence", "tenant_id, memory_id, event_id"),
    ("lineage_unique_t", "memoryapp_memorylineage", "tenant_id, derived_id, source_id"),
    ("apikey_prefix_unique_per_tenant", "memoryapp_apikey", "tenant_id, prefix"),
    ("signinlink_token_unique_per_tenant", "memoryapp_signinlink", "tenant_id, token_hash"),
]
INDEXES = [(name, table, "tenant_id, id") for name, table in PRIMARY_KEYS] + UNIQUES


def build(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for name, table, columns in INDEXES:
            cursor.execute(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
                [name],
            )
            row = cursor.fetchone()
            if row and row[0]:
                continue
            if row:
                cursor.execute(f"DROP INDEX CONCURRENTLY {name}")
            cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {name} ON {table} ({columns})")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for name, _, _ in INDEXES:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0013_tenant_route"),
    ]

    operations = [
        migrations.RunPython(build, drop, atomic=False),
    ]
