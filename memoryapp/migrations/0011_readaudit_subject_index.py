"""The index behind a person's Reads page and export (0009 added its column): built
CONCURRENTLY, so reads, which are audited, are never blocked while it builds on a large table.
Not atomic (CREATE INDEX CONCURRENTLY cannot run in a transaction); alone in its migration, so a
failed build is simply retried."""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0010_write_authority_candidates"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="readaudit",
            index=models.Index(fields=["tenant", "subject_row_id", "created_at"], name="readaudit_subject_idx"),
        ),
    ]
