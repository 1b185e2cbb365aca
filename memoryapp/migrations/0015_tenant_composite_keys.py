"""Every key of a tenant table includes tenant_id, first (issue 18, docs/scaling.md).

In the database:
- primary keys become (tenant_id, id), from the unique indexes 0014 built concurrently
  (ADD PRIMARY KEY USING INDEX: both columns are already NOT NULL, so no scan);
- each unique rule that lacked tenant_id is replaced by its composite twin, also from 0014
  (event_id and seq per subject, evidence and lineage pairs, an API key's prefix and a sign-in
  link's token hash per tenant; across tenants those two are unique in TenantRoute, 0013);
- each foreign key between tenant tables becomes (tenant_id, x_id) -> (tenant_id, id), added
  NOT VALID (no scan, a brief lock) and validated by 0016 without blocking writes. They are
  DEFERRABLE INITIALLY DEFERRED and NO ACTION, like the constraints Django made: deletes and SET
  NULL are done by the application (Django's collector; the erasure's own set-based statements
  in services/erasure.py since 2026-12-03), and only the state at commit must be consistent.

In the ORM: `id` stays the primary key of each model and the foreign keys keep their single
column; they become db_constraint=False, which drops Django's single-column constraint (it needs
`id` alone to be unique, which a distributed table cannot promise). Django 5.2's
CompositePrimaryKey cannot be the target of a ForeignKey, and django-multitenant's
TenantForeignKey rewrites queries at run time; neither is needed for what counts here, the
constraints in the database.

Every statement here changes the catalogue only, and they all run in one burst at the end (the
model-state changes before it touch no table): atomic, so the locks taken are held until the
commit that follows the burst, which does not grow with the tables (at 1M memories, on a busy
machine: at most 1.25 s, the end of the migrate command included; docs/scaling.md). A lock that cannot be had in 10 s (behind a long transaction) fails the
migration instead of queueing every query behind it: run it again.
"""
from django.db import migrations, models
from django.db.models import deletion

# (table, constraint, the 0014 index that becomes it, its columns for the way back)
UNIQUES = [
    ("memoryapp_event", "event_id_unique_per_subject", "event_id_unique_per_subject_t", "subject_id, event_id"),
    ("memoryapp_event", "event_seq_unique_per_subject", "event_seq_unique_per_subject_t", "subject_id, seq"),
    ("memoryapp_memoryevidence", "evidence_unique", "evidence_unique_t", "memory_id, event_id"),
    ("memoryapp_memorylineage", "lineage_unique", "lineage_unique_t", "derived_id, source_id"),
]
NEW_UNIQUES = [
    ("memoryapp_apikey", "apikey_prefix_unique_per_tenant"),
    ("memoryapp_signinlink", "signinlink_token_unique_per_tenant"),
]
PRIMARY_KEYS = [
    "memoryapp_subject", "memoryapp_event", "memoryapp_memory", "memoryapp_memorychange",
    "memoryapp_memoryevidence", "memoryapp_memorylineage", "memoryapp_job", "memoryapp_auditentry",
    "memoryapp_apikey", "memoryapp_readaudit", "memoryapp_exportfile", "memoryapp_idempotencyrecord",
    "memoryapp_signinlink",
]
# (table, column, referenced table): every foreign key between two tenant tables.
FOREIGN_KEYS = [
    ("memoryapp_event", "subject_id", "memoryapp_subject"),
    ("memoryapp_event", "job_id", "memoryapp_job"),
    ("memoryapp_memory", "subject_id", "memoryapp_subject"),
    ("memoryapp_memory", "source_event_id", "memoryapp_event"),
    ("memoryapp_memory", "superseded_by_id", "memoryapp_memory"),
    ("memoryapp_memory", "proposal_for_id", "memoryapp_memory"),
    ("memoryapp_memorychange", "memory_id", "memoryapp_memory"),
    ("memoryapp_memoryevidence", "memory_id", "memoryapp_memory"),
    ("memoryapp_memoryevidence", "event_id", "memoryapp_event"),
    ("memoryapp_memorylineage", "derived_id", "memoryapp_memory"),
    ("memoryapp_memorylineage", "source_id", "memoryapp_memory"),
    ("memoryapp_exportfile", "job_id", "memoryapp_job"),
]


def fk_name(table: str, column: str) -> str:
    return f"{table.removeprefix('memoryapp_')}_{column.removesuffix('_id')}_tenant_fk"


def keys_sql() -> list[str]:
    statements = []
    for table, constraint, index, _ in UNIQUES:
        statements.append(f"ALTER TABLE {table} DROP CONSTRAINT {constraint}")
        statements.append(f"ALTER TABLE {table} ADD CONSTRAINT {constraint} UNIQUE USING INDEX {index}")
    for table, constraint in NEW_UNIQUES:
        statements.append(f"ALTER TABLE {table} ADD CONSTRAINT {constraint} UNIQUE USING INDEX {constraint}")
    for table in PRIMARY_KEYS:
        statements.append(
            f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, "
            f"ADD CONSTRAINT {table}_pkey PRIMARY KEY USING INDEX {table}_tpk"
        )
    for table, column, target in FOREIGN_KEYS:
        statements.append(
            f"ALTER TABLE {table} ADD CONSTRAINT {fk_name(table, column)} FOREIGN KEY (tenant_id, {column}) "
            f"REFERENCES {target} (tenant_id, id) DEFERRABLE INITIALLY DEFERRED NOT VALID"
        )
    return statements


def reverse_keys_sql() -> list[str]:
    """Back to single-column keys (plain builds under lock: going back is not the path a large
    live table takes). 0014's reverse drops nothing that is still in use."""
    statements = [f"ALTER TABLE {t} DROP CONSTRAINT {fk_name(t, c)}" for t, c, _ in FOREIGN_KEYS]
    for table in PRIMARY_KEYS:
        statements.append(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, ADD PRIMARY KEY (id)")
    for table, constraint in NEW_UNIQUES:
        statements.append(f"ALTER TABLE {table} DROP CONSTRAINT {constraint}")
    for table, constraint, _, columns in UNIQUES:
        statements.append(f"ALTER TABLE {table} DROP CONSTRAINT {constraint}")
        statements.append(f"ALTER TABLE {table} ADD CONSTRAINT {constraint} UNIQUE ({columns})")
    return statements


# Django's own constraints and indexes on one column, found by what they are (their names carry
# hashes): the foreign keys to a tenant table's single-column id, and the unique constraints (with
# their varchar_pattern_ops "_like" indexes) on the two credential columns.
DJANGO_SINGLE_COLUMN_FKS = """
SELECT con.conrelid::regclass::text, con.conname FROM pg_constraint con
JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
WHERE con.contype = 'f' AND cardinality(con.conkey) = 1 AND con.conrelid::regclass::text = %s AND a.attname = %s
"""
DJANGO_SINGLE_COLUMN_UNIQUES = """
SELECT con.conname FROM pg_constraint con
JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
WHERE con.contype = 'u' AND cardinality(con.conkey) = 1 AND con.conrelid::regclass::text = %s AND a.attname = %s
"""
DJANGO_LIKE_INDEXES = """
SELECT i.indexrelid::regclass::text FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
WHERE i.indrelid::regclass::text = %s AND a.attname = %s AND i.indnatts = 1 AND NOT i.indisunique
  AND i.indexrelid::regclass::text LIKE '%%\\_like'
"""
CREDENTIAL_COLUMNS = [("memoryapp_apikey", "prefix"), ("memoryapp_signinlink", "token_hash")]


def swap_keys(apps, schema_editor):
    """Everything this migration does to the database, in one burst of catalogue changes."""
    statements = []
    with schema_editor.connection.cursor() as cursor:
        for table, column, _ in FOREIGN_KEYS:
            cursor.execute(DJANGO_SINGLE_COLUMN_FKS, [table, column])
            statements += [f'ALTER TABLE {t} DROP CONSTRAINT "{name}"' for t, name in cursor.fetchall()]
        for table, column in CREDENTIAL_COLUMNS:
            cursor.execute(DJANGO_SINGLE_COLUMN_UNIQUES, [table, column])
            statements += [f'ALTER TABLE {table} DROP CONSTRAINT "{name}"' for (name,) in cursor.fetchall()]
            cursor.execute(DJANGO_LIKE_INDEXES, [table, column])
            statements += [f"DROP INDEX {name}" for (name,) in cursor.fetchall()]
        for statement in statements + keys_sql():
            cursor.execute(statement)


def unswap_keys(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in reverse_keys_sql():
            cursor.execute(statement)
        for table, column, target in FOREIGN_KEYS:
            cursor.execute(f"ALTER TABLE {table} ADD FOREIGN KEY ({column}) REFERENCES {target} (id) "
                           "DEFERRABLE INITIALLY DEFERRED")
        for table, column in CREDENTIAL_COLUMNS:
            cursor.execute(f"ALTER TABLE {table} ADD UNIQUE ({column})")


class Migration(migrations.Migration):

    dependencies = [
        ("memoryapp", "0014_tenant_key_indexes"),
    ]

    operations = [
        migrations.RunSQL("SET LOCAL lock_timeout = '10s'", migrations.RunSQL.noop),
        # Django's single-column foreign keys and credential uniques: state only here, the
        # database changes are all in swap_keys.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name="event", name="subject",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="events",
                                        to="memoryapp.subject"),
            ),
            migrations.AlterField(
                model_name="event", name="job",
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=deletion.SET_NULL,
                                        related_name="+", to="memoryapp.job"),
            ),
            migrations.AlterField(
                model_name="memory", name="subject",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="memories",
                                        to="memoryapp.subject"),
            ),
            migrations.AlterField(
                model_name="memory", name="source_event",
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=deletion.SET_NULL,
                                        related_name="+", to="memoryapp.event"),
            ),
            migrations.AlterField(
                model_name="memory", name="superseded_by",
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=deletion.SET_NULL,
                                        related_name="supersedes", to="memoryapp.memory"),
            ),
            migrations.AlterField(
                model_name="memory", name="proposal_for",
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=deletion.SET_NULL,
                                        related_name="proposals", to="memoryapp.memory"),
            ),
            migrations.AlterField(
                model_name="memorychange", name="memory",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="changes",
                                        to="memoryapp.memory"),
            ),
            migrations.AlterField(
                model_name="memoryevidence", name="memory",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="evidence_links",
                                        to="memoryapp.memory"),
            ),
            migrations.AlterField(
                model_name="memoryevidence", name="event",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="evidence_links",
                                        to="memoryapp.event"),
            ),
            migrations.AlterField(
                model_name="memorylineage", name="derived",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="source_links",
                                        to="memoryapp.memory"),
            ),
            migrations.AlterField(
                model_name="memorylineage", name="source",
                field=models.ForeignKey(db_constraint=False, on_delete=deletion.CASCADE, related_name="derived_links",
                                        to="memoryapp.memory"),
            ),
            migrations.AlterField(
                model_name="exportfile", name="job",
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=deletion.SET_NULL,
                                        related_name="+", to="memoryapp.job"),
            ),
            # Unique across tenants no more (TenantRoute is).
            migrations.AlterField(model_name="apikey", name="prefix", field=models.CharField(max_length=16)),
            migrations.AlterField(model_name="signinlink", name="token_hash", field=models.CharField(max_length=64)),
            migrations.RemoveConstraint(model_name="event", name="event_id_unique_per_subject"),
            migrations.RemoveConstraint(model_name="event", name="event_seq_unique_per_subject"),
            migrations.RemoveConstraint(model_name="memoryevidence", name="evidence_unique"),
            migrations.RemoveConstraint(model_name="memorylineage", name="lineage_unique"),
            migrations.AddConstraint(
                model_name="event",
                constraint=models.UniqueConstraint(fields=("tenant", "subject", "event_id"),
                                                   name="event_id_unique_per_subject"),
            ),
            migrations.AddConstraint(
                model_name="event",
                constraint=models.UniqueConstraint(fields=("tenant", "subject", "seq"),
                                                   name="event_seq_unique_per_subject"),
            ),
            migrations.AddConstraint(
                model_name="memoryevidence",
                constraint=models.UniqueConstraint(fields=("tenant", "memory", "event"), name="evidence_unique"),
            ),
            migrations.AddConstraint(
                model_name="memorylineage",
                constraint=models.UniqueConstraint(fields=("tenant", "derived", "source"), name="lineage_unique"),
            ),
            migrations.AddConstraint(
                model_name="apikey",
                constraint=models.UniqueConstraint(fields=("tenant", "prefix"),
                                                   name="apikey_prefix_unique_per_tenant"),
            ),
            migrations.AddConstraint(
                model_name="signinlink",
                constraint=models.UniqueConstraint(fields=("tenant", "token_hash"),
                                                   name="signinlink_token_unique_per_tenant"),
            ),
        ]),
        migrations.RunPython(swap_keys, unswap_keys),
    ]
