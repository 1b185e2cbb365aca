"""Validate the composite foreign keys 0015 added NOT VALID (issue 18).

VALIDATE CONSTRAINT scans the referencing table, but under SHARE UPDATE EXCLUSIVE (and ROW SHARE
on the referenced one): reads and writes go on while it runs. Not atomic, so each validation is
its own short transaction and holds its lock only while it scans; a validation already done is
skipped, so a rerun after a failure continues where it stopped. Measured at 1M memories:
docs/scaling.md, "What the migrations cost".
"""
from django.db import migrations

# As in 0015 (table, constraint): every composite foreign key between tenant tables.
CONSTRAINTS = [
    ("memoryapp_event", "event_subject_tenant_fk"),
    ("memoryapp_event", "event_job_tenant_fk"),
    ("memoryapp_memory", "memory_subject_tenant_fk"),
    ("memoryapp_memory", "memory_source_event_tenant_fk"),
    ("memoryapp_memory", "memory_superseded_by_tenant_fk"),
    ("memoryapp_memory", "memory_proposal_for_tenant_fk"),
    ("memoryapp_memorychange", "memorychange_memory_tenant_fk"),
    ("memoryapp_memoryevidence", "memoryevidence_memory_tenant_fk"),
    ("memoryapp_memoryevidence", "memoryevidence_event_tenant_fk"),
    ("memoryapp_memorylineage", "memorylineage_derived_tenant_fk"),
    ("memoryapp_memorylineage", "memorylineage_source_tenant_fk"),
    ("memoryapp_exportfile", "exportfile_job_tenant_fk"),
]


def validate(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table, constraint in CONSTRAINTS:
            cursor.execute(
                "SELECT convalidated FROM pg_constraint WHERE conrelid = %s::regclass AND conname = %s",
                [table, constraint],
            )
            row = cursor.fetchone()
            if row is None:
                raise RuntimeError(f"{table}.{constraint} is missing: 0015 did not run?")
            if not row[0]:
                cursor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {constraint}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0015_tenant_composite_keys"),
    ]

    operations = [
        migrations.RunPython(validate, migrations.RunPython.noop, atomic=False),
    ]
