"""The reads the access counts' fold has not counted yet (services/accesses.py), by tenant.

Built concurrently, so reads go on being audited meanwhile. Not atomic (CONCURRENTLY cannot run in
a transaction); a build that failed leaves an INVALID index, which a rerun drops and builds
again (as 0018 does).
"""
from django.db import migrations, models

NAME = "readaudit_uncounted_idx"


def build(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
            [NAME],
        )
        row = cursor.fetchone()
        if row and row[0]:
            return
        if row:
            cursor.execute(f"DROP INDEX CONCURRENTLY {NAME}")
        cursor.execute(f"CREATE INDEX CONCURRENTLY {NAME} ON memoryapp_readaudit (tenant_id, id) "
                       "WHERE NOT accesses_counted")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memoryapp", "0021_readaudit_accesses_counted")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="readaudit",
                    index=models.Index(fields=["tenant", "id"], name=NAME, condition=models.Q(accesses_counted=False)),
                ),
            ],
            database_operations=[migrations.RunPython(build, drop, atomic=False)],
        ),
    ]
