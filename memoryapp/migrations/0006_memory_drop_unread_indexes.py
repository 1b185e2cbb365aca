"""Drop the memory indexes no query reads: the HNSW index on `embedding` and the GIN index on
`search_vector`. Search ranks one subject's rows exactly (retrieval.py), by the scope index;
BM25 unnests each row's tsvector rather than matching it with @@. Both indexes were paid for on
every insert and every update that could not stay on its page. Reversible (RemoveIndex); on a
large table, rebuilding the HNSW index takes minutes."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0005_memory_has_time_reference'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='memory',
            name='memory_embedding_hnsw',
        ),
        migrations.RemoveIndex(
            model_name='memory',
            name='memory_search_vector_gin',
        ),
    ]
