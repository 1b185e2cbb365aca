"""Drop the HNSW index on memory embeddings: no query reads it. Search ranks one subject's
memories exactly (retrieval.py); an index over every tenant's rows, filtered to one subject after
the fact, finds too few of them unless the subject is most of the table, and pgvector before 0.8
(the embedded default has 0.6) cannot scan on until enough pass the filter. Every memory write
paid for it (docs/benchmarks.md, ingestion). Measured for one subject of 1,000-30,000
memories in docs/benchmarks.md (issue 16): at 10,000 the index's recall@10 was 0.90 against the
exact scan, and BM25's statistics need the scope scanned anyway. Dropped concurrently, so writes
are not blocked while it goes."""
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0016_validate_tenant_foreign_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw")],
            database_operations=[migrations.RunSQL(
                "DROP INDEX CONCURRENTLY IF EXISTS memory_embedding_hnsw",
                reverse_sql="CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_embedding_hnsw ON memoryapp_memory"
                            " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)",
            )],
        ),
    ]
