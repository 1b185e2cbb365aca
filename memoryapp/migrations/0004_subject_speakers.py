"""Subjects remember who speaks in their events (Subject.speakers), filled in for existing
subjects from their events. Runs as the schema owner, which row-level security does not filter."""
import django.contrib.postgres.fields
from django.db import migrations, models

BACKFILL = """
UPDATE memoryapp_subject s SET speakers = sp.names
FROM (
    SELECT subject_id, array_agg(DISTINCT speaker ORDER BY speaker) AS names
    FROM memoryapp_event WHERE speaker <> '' GROUP BY subject_id
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
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
