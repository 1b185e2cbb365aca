"""Access counts folded in from the read audit by the worker (services/accesses.py) instead of
written by each read under the memories' row locks: a flag saying whether a read is counted yet.

The database default is true, kept in the catalogue (no rewrite of the table): every existing row
reads as counted, as it was when it was read, and so does every row a process still on the
previous release inserts meanwhile (that release counted its reads itself). The new release
writes the flag on every read: false for the reads that are counted (search, context).

The lock on the read audit is taken for milliseconds, but it waits behind any transaction using
the table, and every read's audit insert would queue behind it: give up after 10 s instead.
"""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memoryapp", "0020_tenant_id_statistics_off_the_write_path")]

    operations = [
        migrations.RunSQL("SET LOCAL lock_timeout = '10s'", migrations.RunSQL.noop),
        migrations.AddField(
            model_name="readaudit",
            name="accesses_counted",
            field=models.BooleanField(default=True, db_default=True),
        ),
    ]
