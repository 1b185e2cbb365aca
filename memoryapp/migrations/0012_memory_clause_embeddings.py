"""A memory's clause vectors (memoryapp/clauses.py). A nullable column without a default: a
catalogue change, no table rewrite, at any size. Memories written before it have none and rank
by their whole statement, as before; `manage.py reindex` fills them in, in batches (their
embedding_version is the one before "+clauses")."""
from django.db import migrations

import memoryapp.models


class Migration(migrations.Migration):

    dependencies = [
        ("memoryapp", "0011_readaudit_subject_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="clause_embeddings",
            field=memoryapp.models.VectorArrayField(blank=True, dimensions=384, null=True),
        ),
    ]
