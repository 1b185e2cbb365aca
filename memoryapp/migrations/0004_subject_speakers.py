"""Subjects remember who speaks in their events (Subject.speakers), filled in for existing
subjects from their trusted events. Runs as the schema owner, which row-level security does not
filter. The column keeps a database default too, so a process still running the previous code
can go on creating subjects while this deploys. The backfill reads every event once inside the
migration's transaction (the subject table is locked meanwhile): fine at this project's sizes;
a very large deployment would backfill in batches instead."""
import django.contrib.postgres.fields
from django.db import migrations, models

BACKFILL = """
UPDATE memoryapp_subject s SET speakers = sp.names
FROM (
    SELECT subject_id, array_agg(DISTINCT speaker ORDER BY speaker) AS names
    FROM memoryapp_event WHERE speaker <> '' AND source_kind <> 'external' GROUP BY subject_id
) sp
WHERE sp.subject_id = s.id
"""


class Migration(migrations.Migration):
    dependencies = [("memoryapp", "0003_memory_fillfactor")]

    operations = [
        migrations.AddField(
            model_name="subject",
            name="speakers",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=200), blank=True, default=list, size=None
            ),
        ),
        migrations.RunSQL("ALTER TABLE memoryapp_subject ALTER COLUMN speakers SET DEFAULT '{}'",
                          "ALTER TABLE memoryapp_subject ALTER COLUMN speakers DROP DEFAULT"),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
