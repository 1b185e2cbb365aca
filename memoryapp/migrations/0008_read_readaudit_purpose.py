"""The read audit records the data purpose a read named (issue 15, item 5).

A column with a constant default, kept in the database so that processes still on the previous
release (which insert without the column) keep working during a deploy. PostgreSQL 11+ adds it
without rewriting the table (the default is kept in the catalogue), so on a million rows it is a
brief exclusive lock and no scan.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0007_event_erasing_audit_guards'),
    ]

    operations = [
        migrations.AddField(
            model_name='readaudit',
            name='purpose',
            field=models.CharField(blank=True, db_default='', default='', max_length=64),
        ),
    ]
