"""Both times, queryable; reads shown to the subject they were about.

- MemoryChange: a memory version's status and valid_to before each change to either, with the
  recorded time of the change, written by a trigger so that every path that supersedes, corrects,
  approves, rejects or expires a version keeps what was believed before (search's `known_at`).
  A new table with row-level security like every tenant table.
- ReadAudit.subject_row_id: nullable, no default, so adding it rewrites nothing. Its index is
  built CONCURRENTLY by 0011 (a migration of its own, not atomic): reads are audited, and a plain
  CREATE INDEX would block them for as long as the build takes on a large table.

Atomic, so a failure leaves nothing half-made to trip a rerun. The foreign key to memories and the
trigger each take a brief SHARE ROW EXCLUSIVE lock on memoryapp_memory: behind a long worker
transaction that lock would queue every write, so it is given up after 10 s (rerun the migrate).
The application role is granted the new table before the trigger exists: from then on every
status change by that role inserts into it.
"""
import django.db.models.deletion
from django.db import migrations, models

from memoryapp.dbroles import grant_app_role

CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"

TRIGGER = f"""
ALTER TABLE memoryapp_memorychange ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memoryapp_memorychange
    USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT});

CREATE OR REPLACE FUNCTION memory_record_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- clock_timestamp(): after the successor's recorded_at, which the same transaction set before.
    INSERT INTO memoryapp_memorychange (tenant_id, memory_id, changed_at, status, valid_to)
    VALUES (OLD.tenant_id, OLD.id, clock_timestamp(), OLD.status, OLD.valid_to);
    RETURN NULL;
END $$;
CREATE TRIGGER memory_record_change AFTER UPDATE OF status, valid_to ON memoryapp_memory
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.valid_to IS DISTINCT FROM NEW.valid_to)
    EXECUTE FUNCTION memory_record_change();
"""

DROP_TRIGGER = """
DROP TRIGGER IF EXISTS memory_record_change ON memoryapp_memory;
DROP FUNCTION IF EXISTS memory_record_change();
DROP POLICY IF EXISTS tenant_isolation ON memoryapp_memorychange;
"""


def grant(apps, schema_editor):
    grant_app_role(using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0008_read_readaudit_purpose'),
    ]

    operations = [
        migrations.RunSQL("SET LOCAL lock_timeout = '10s'", migrations.RunSQL.noop),
        migrations.CreateModel(
            name='MemoryChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('changed_at', models.DateTimeField()),
                ('status', models.CharField(max_length=20)),
                ('valid_to', models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.AddField(
            model_name='readaudit',
            name='subject_row_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='memorychange',
            name='memory',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='changes',
                                    to='memoryapp.memory'),
        ),
        migrations.AddField(
            model_name='memorychange',
            name='tenant',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='memoryapp.tenant'),
        ),
        migrations.AddIndex(
            model_name='memorychange',
            index=models.Index(fields=['memory', 'changed_at'], name='memorychange_memory_idx'),
        ),
        migrations.RunPython(grant, migrations.RunPython.noop),
        migrations.RunSQL(TRIGGER, DROP_TRIGGER),
    ]
