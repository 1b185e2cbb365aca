"""A key's maximum source and a tenant's acceptance of inferences. Both columns keep their default
in the database too, so processes still on the previous release can insert keys and tenants while
the new one deploys; constant defaults, so no table rewrite. The status choices change no SQL."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0009_time_known_at_and_read_subjects'),
    ]

    operations = [
        migrations.AddField(
            model_name='apikey',
            name='max_source',
            field=models.CharField(choices=[('user_explicit', 'User Explicit'), ('user', 'User'), ('assistant', 'Assistant'), ('tool', 'Tool'), ('external', 'External'), ('system', 'System')], db_default='user_explicit', default='user_explicit', max_length=20),
        ),
        migrations.AddField(
            model_name='tenant',
            name='accept_inferences',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AlterField(
            model_name='memory',
            name='status',
            field=models.CharField(choices=[('active', 'Active'), ('superseded', 'Superseded'), ('expired', 'Expired'), ('pending_approval', 'Pending Approval'), ('rejected', 'Rejected'), ('quarantined', 'Quarantined'), ('candidate', 'Candidate')], default='active', max_length=20),
        ),
    ]
