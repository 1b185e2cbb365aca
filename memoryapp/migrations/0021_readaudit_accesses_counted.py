"""Access counts folded in from the read audit by the worker (services/accesses.py) instead of
written by each read under the memories' row locks.

The column is added with DEFAULT true, which PostgreSQL keeps in the catalogue (no rewrite of the
table): every existing row reads as counted, as it was when it was read. The default then becomes
false for new rows. The partial index over uncounted rows is built concurrently (no lock that
stops reads being audited meanwhile), so this migration runs outside a transaction.
"""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memoryapp", "0020_tenant_id_statistics_off_the_write_path")]

    operations = [
        migrations.AddField(
            model_name="readaudit",
            name="accesses_counted",
            field=models.BooleanField(default=True, db_default=True),
        ),
        migrations.AlterField(
            model_name="readaudit",
            name="accesses_counted",
            field=models.BooleanField(default=False, db_default=False),
        ),
        AddIndexConcurrently(
            model_name="readaudit",
            index=models.Index(fields=["tenant", "id"], name="readaudit_uncounted_idx",
                               condition=models.Q(accesses_counted=False)),
        ),
    ]
