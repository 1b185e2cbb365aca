"""Indexes for "the episode of this event" and "what was drawn from this event", led by the event.

The extraction's write path asks both at every supersession: which episodes state the value that
no longer holds, and whether a durable memory drawn from the same event is still current
(services/extraction._RETIRE_EPISODES). The indexes that existed all lead with tenant_id, so
whenever the tables' statistics lagged their growth (a new service, a tenant's first import:
autovacuum analyzes a minute later at best) the planner took "tenant_id = X" for a selective
condition and read the tenant's whole range of memory_scope_idx or evidence_unique, filtering
each entry by event. A statement that should read one row read them all: measured on a fresh
database of 2,000 chat events, that one UPDATE took 13 of the workers' 15 seconds in PostgreSQL,
and its cost grew with the tenant's size. Led by the event, the condition is an index condition
on every plan, with or without statistics (docs/benchmarks.md, issue 16).

Built concurrently, so writes are not blocked while they are built.
"""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memoryapp", "0017_drop_memory_embedding_hnsw"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(fields=["source_event", "tenant"], name="memory_episode_of_event_idx",
                               condition=models.Q(memory_type="episodic")),
        ),
        AddIndexConcurrently(
            model_name="memoryevidence",
            index=models.Index(fields=["event", "tenant"], name="evidence_of_event_idx"),
        ),
    ]
