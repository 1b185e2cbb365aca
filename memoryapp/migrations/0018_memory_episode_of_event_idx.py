"""Indexes for "the episode of this event" and "what was drawn from this event".

The extraction's write path asks both at every supersession: which episodes state the value that
no longer holds, and whether a durable memory drawn from the same event is still current
(services/extraction._RETIRE_EPISODES). One-column indexes on the event existed (Django's, for the
foreign keys), but whenever the tables' statistics lagged their growth (a new service, a
tenant's first import: autovacuum analyzes a minute later at best) the planner preferred the
indexes that match two of the conditions, memory_scope_idx (tenant, status) and evidence_unique
(tenant, memory, event), and read the tenant's whole range of them, filtering each entry by
event. A statement that should read one row read them all: on a fresh database of 2,000 chat
events, that one UPDATE took 13 of the workers' 15 seconds in PostgreSQL, and its cost grew with
the tenant's size. These two match the event and the tenant (and, for memories, only episodes),
so they are chosen with or without statistics (docs/benchmarks.md, issue 16). The evidence's
one-column index on the event is a prefix of the new one, so it is dropped.

Built concurrently, so writes are not blocked. Not atomic (CONCURRENTLY cannot run in a
transaction); a build that failed leaves an INVALID index, which a rerun drops and builds again
(as 0014 does), so the migration can simply be run again.
"""
from django.db import migrations, models

INDEXES = [
    ("memory_episode_of_event_idx", "memoryapp_memory", "source_event_id, tenant_id",
     "WHERE memory_type = 'episodic'"),
    ("evidence_of_event_idx", "memoryapp_memoryevidence", "event_id, tenant_id", ""),
]
# Django's name for MemoryEvidence.event's own index (its foreign-key index).
EVIDENCE_EVENT_INDEX = ("memoryapp_memoryevidence_event_id_ee62a7e2", "memoryapp_memoryevidence", "event_id")


def _valid(cursor, name: str) -> bool | None:
    cursor.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
        [name],
    )
    row = cursor.fetchone()
    return row[0] if row else None


def build(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for name, table, columns, where in INDEXES:
            valid = _valid(cursor, name)
            if valid:
                continue
            if valid is not None:
                cursor.execute(f"DROP INDEX CONCURRENTLY {name}")
            cursor.execute(f"CREATE INDEX CONCURRENTLY {name} ON {table} ({columns}) {where}")
        cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {EVIDENCE_EVENT_INDEX[0]}")


def drop(apps, schema_editor):
    name, table, column = EVIDENCE_EVENT_INDEX
    with schema_editor.connection.cursor() as cursor:
        if _valid(cursor, name) is False:
            cursor.execute(f"DROP INDEX CONCURRENTLY {name}")
        cursor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} ({column})")
        for name, _, _, _ in INDEXES:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0017_drop_memory_embedding_hnsw"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="memory",
                    index=models.Index(fields=["source_event", "tenant"], name="memory_episode_of_event_idx",
                                       condition=models.Q(memory_type="episodic")),
                ),
                migrations.AddIndex(
                    model_name="memoryevidence",
                    index=models.Index(fields=["event", "tenant"], name="evidence_of_event_idx"),
                ),
                migrations.AlterField(
                    model_name="memoryevidence",
                    name="event",
                    field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=models.deletion.CASCADE,
                                            related_name="evidence_links", to="memoryapp.event"),
                ),
            ],
            database_operations=[migrations.RunPython(build, drop, atomic=False)],
        ),
    ]
