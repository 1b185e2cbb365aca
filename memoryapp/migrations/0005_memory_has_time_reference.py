"""Memories store whether their statement says when something happened (a generated column,
computed on write), so a "when" search reads a flag instead of running a regex over every
memory of the subject (~15 ms at 700 memories).

Adding a stored generated column rewrites the memory table and its indexes under an exclusive
lock: seconds here, a maintenance window on a large deployment. Changing the regex later means
dropping and re-adding the column (another rewrite), so it lives in models.TIME_REFERENCE_REGEX
and changes only with a migration like this one."""

import django.db.models.lookups
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0004_subject_speakers'),
    ]

    operations = [
        migrations.AddField(
            model_name='memory',
            name='has_time_reference',
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.lookups.IRegex(models.F('statement'), models.Value(
                    '\\m(yesterday|today|tonight|tomorrow|ago|last|next|recently|weekend|since|until|'
                    'monday|tuesday|wednesday|thursday|friday|saturday|sunday|'
                    'january|february|march|april|may|june|july|august|september|october|november|december|'
                    'week|month|year|years|months|weeks|days|morning|evening|night|\\d{4})\\M')),
                output_field=models.BooleanField(),
            ),
        ),
    ]
