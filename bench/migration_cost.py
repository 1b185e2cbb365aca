"""What the composite-key migrations (memoryapp 0013-0016, issue 18) cost on a large live table.

Builds a database at migration 0012 holding N memories (default 1,000,000) for 100 tenants and
10,000 subjects, each memory with its source event, its evidence link and its audit entry, then
applies 0013..0016 one at a time while a writer keeps updating and inserting rows of the same
tables, and prints how long each step took and the longest the writer waited during it.

    .venv/bin/python -m memoryapp.embedded exec -- .venv/bin/python bench/migration_cost.py
    .venv/bin/python -m memoryapp.embedded exec -- .venv/bin/python bench/migration_cost.py --memories 100000

The database (bench_migration_cost) is dropped at the end unless --keep. Embeddings are random
unit-free vectors (the index builds read the heap; its size is what matters, not the values);
the HNSW index is dropped before the fill, since filling it with 1M vectors would take hours here
and no step of these migrations touches it.
"""
from __future__ import annotations

import argparse
import importlib
import os
import random
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import benchdb  # noqa: E402

DB_NAME = "bench_migration_cost"
TENANTS = 100
SUBJECTS = 10_000


def fill(cursor, memories: int) -> None:
    per_subject = max(1, memories // SUBJECTS)
    cursor.execute("DROP INDEX IF EXISTS memory_embedding_hnsw")
    cursor.execute(
        "INSERT INTO memoryapp_tenant (id, slug, name, created_at, accept_inferences) "
        "SELECT t, 'tenant-' || t, '', now(), false FROM generate_series(1, %s) t",
        [TENANTS],
    )
    cursor.execute("SELECT setval(pg_get_serial_sequence('memoryapp_tenant', 'id'), %s)", [TENANTS])
    cursor.execute(
        "INSERT INTO memoryapp_subject (id, tenant_id, external_id, kind, status, last_seq, speakers, created_at) "
        "SELECT s, 1 + (s - 1) %% %s, 'user-' || s, 'user', 'active', %s, '{}', now() "
        "FROM generate_series(1, %s) s",
        [TENANTS, per_subject, SUBJECTS],
    )
    cursor.execute("SELECT setval(pg_get_serial_sequence('memoryapp_subject', 'id'), %s)", [SUBJECTS])
    # One event per memory; n runs 1..memories, its subject is 1 + (n - 1) % SUBJECTS.
    cursor.execute(
        """
        INSERT INTO memoryapp_event (id, tenant_id, subject_id, event_id, seq, role, source_kind, content,
            occurred_at, recorded_at, session_id, speaker, metadata, status, attempts, redacted, quarantined,
            erasing, flags, error)
        SELECT md5('e' || n)::uuid, 1 + ((n - 1) %% %(subjects)s) %% %(tenants)s, 1 + (n - 1) %% %(subjects)s,
            'evt-' || n, 1 + (n - 1) / %(subjects)s, 'user', 'user',
            'I told you last week that my sister ' || md5(n::text) || ' moved to Lisbon and now works at the '
              || 'harbour office, so we talk on Sundays ' || left(md5('x' || n), 12),
            now() - make_interval(secs => n), now(), 's1', '', '{}', 'processed', 1, false, false, false, '[]', ''
        FROM generate_series(1, %(memories)s) n
        """,
        {"subjects": SUBJECTS, "tenants": TENANTS, "memories": memories},
    )
    cursor.execute(
        """
        INSERT INTO memoryapp_memory (id, tenant_id, subject_id, memory_type, namespace, statement, key,
            source_kind, source_event_id, evidence_count, confidence, importance, sensitivity, valid_from,
            recorded_at, status, status_reason, access_count, metadata, flags, erasing, content_hash,
            embedding, embedding_version, extractor_version)
        SELECT md5('m' || n)::uuid, 1 + ((n - 1) %% %(subjects)s) %% %(tenants)s, 1 + (n - 1) %% %(subjects)s,
            'semantic', '', 'The user''s sister moved to Lisbon and works at the harbour office '
              || left(md5(n::text), 10) || '; they talk on Sundays.', 'user:sister',
            'user', md5('e' || n)::uuid, 1, 0.9, 0.5, 'personal', now() - make_interval(secs => n),
            now(), 'active', '', 0, '{}', '[]', false, md5('h' || n),
            (SELECT array_agg(random()::real) FROM generate_series(1, 384) d WHERE n > 0)::vector, 'bench', 'bench'
        FROM generate_series(1, %(memories)s) n
        """,
        {"subjects": SUBJECTS, "tenants": TENANTS, "memories": memories},
    )
    cursor.execute(
        "INSERT INTO memoryapp_memoryevidence (tenant_id, memory_id, event_id, created_at) "
        "SELECT tenant_id, id, source_event_id, now() FROM memoryapp_memory"
    )
    cursor.execute(
        """
        INSERT INTO memoryapp_auditentry (tenant_id, actor_kind, actor_id, action, subject_ref, memory_id, target,
            details, payload_digest, prev_hash, entry_hash, hash_version, created_at)
        SELECT tenant_id, 'api_key', 'key-1', 'memory_created', 'user-' || subject_id, id, '', '{}',
            md5(id::text) || md5(id::text), '', '', 2, now()
        FROM memoryapp_memory
        """
    )
    cursor.execute("ANALYZE")


class Writer(threading.Thread):
    """Keeps writing while a migration runs: updates a memory's access counter and appends an
    evidence link, like a search and an extraction do. Records how long each write waited."""

    def __init__(self, memory_ids: list[tuple[int, str]]):
        super().__init__(daemon=True)
        self.memory_ids = memory_ids
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from django.db import connections

        wrapper = connections.create_connection("owner")  # this thread's own, to the bench database
        wrapper.ensure_connection()
        conn = wrapper.connection
        conn.autocommit = True
        try:
            while not self.stop.is_set():
                tenant, memory = random.choice(self.memory_ids)
                started = time.perf_counter()
                try:
                    conn.execute("UPDATE memoryapp_memory SET access_count = access_count + 1 "
                                 "WHERE tenant_id = %s AND id = %s", [tenant, memory])
                    conn.execute("INSERT INTO memoryapp_readaudit (tenant_id, actor, subject_ref, operation, "
                                 "query_hash, memory_ids, created_at, purpose) "
                                 "VALUES (%s, 'bench', 'user-1', 'search', '', ARRAY[%s]::uuid[], now(), '')",
                                 [tenant, memory])
                except Exception as exc:  # recorded: a refused write is a finding, not a crash
                    self.errors.append(type(exc).__name__)
                self.latencies.append(time.perf_counter() - started)
                time.sleep(0.02)
        finally:
            wrapper.close()

    def summary(self) -> str:
        if not self.latencies:
            return "no writes"
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (f"{len(ordered)} writes, median {statistics.median(ordered) * 1000:.1f} ms, "
                f"p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms, errors {len(self.errors)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()

    benchdb.django_setup()
    from django.core.management import call_command
    from django.db import connections

    from memoryapp.dbroles import quote_ident

    owner = connections["owner"]
    with owner.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quote_ident(DB_NAME)} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {quote_ident(DB_NAME)}")
    for alias in ("owner", "default"):
        connections[alias].close()
        connections[alias].settings_dict["NAME"] = DB_NAME
    call_command("migrate", "memoryapp", "0012", database="owner", verbosity=0)

    print(f"load average {os.getloadavg()[0]:.1f} at start; {args.memories:,} memories")
    started = time.perf_counter()
    with owner.cursor() as cursor:
        fill(cursor, args.memories)
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('memoryapp_memory')), "
                       "pg_size_pretty(pg_database_size(current_database()))")
        memory_size, db_size = cursor.fetchone()
        cursor.execute("SELECT tenant_id, id::text FROM memoryapp_memory TABLESAMPLE SYSTEM (1) LIMIT 5000")
        sample = cursor.fetchall()
    print(f"fill: {time.perf_counter() - started:.0f} s; memoryapp_memory {memory_size}, database {db_size}")
    owner.close()

    def step(label, action):
        writer = Writer(sample)
        writer.start()
        time.sleep(1)  # a baseline before the step starts
        began = time.perf_counter()
        action()
        finished = time.perf_counter()
        took = finished - began
        time.sleep(1)
        writer.stop.set()
        writer.join()
        print(f"{label}: {took:.2f} s; writer meanwhile: {writer.summary()}  (load {os.getloadavg()[0]:.1f})")
        return finished

    # 0014's indexes and 0016's validations one by one, through the migrations' own lists, so
    # each has its own figure; the migrate that follows finds them done and skips them.
    indexes = importlib.import_module("memoryapp.migrations.0014_tenant_key_indexes")
    validations = importlib.import_module("memoryapp.migrations.0016_validate_tenant_foreign_keys")

    def run_sql(sql):
        def action():
            with owner.cursor() as cursor:
                cursor.execute(sql)
        return action

    step("0013 TenantRoute, backfill, lookups", lambda: call_command(
        "migrate", "memoryapp", "0013", database="owner", verbosity=0))
    for name, table, columns in indexes.INDEXES:
        step(f"0014 CREATE UNIQUE INDEX CONCURRENTLY {name} ({table}: {columns})",
             run_sql(f"CREATE UNIQUE INDEX CONCURRENTLY {name} ON {table} ({columns})"))
    step("0014 migrate (finds them built)", lambda: call_command(
        "migrate", "memoryapp", "0014", database="owner", verbosity=0))
    # 0015's database work is its last operation, one burst of catalogue changes: timed alone,
    # with the commit after it, that is how long its locks are held.
    swap = importlib.import_module("memoryapp.migrations.0015_tenant_composite_keys").Migration.operations[-1]
    swap_code, burst = swap.code, {}

    def timed_swap(apps, schema_editor):
        burst["started"] = time.perf_counter()
        swap_code(apps, schema_editor)

    swap.code = timed_swap
    finished = step("0015 migrate (model state, then the key swap)", lambda: call_command(
        "migrate", "memoryapp", "0015", database="owner", verbosity=0))
    print(f"0015 key swap, from its first statement to the end of migrate (the commit included): "
          f"{finished - burst['started']:.3f} s: the longest any of its locks is held")
    for table, constraint in validations.CONSTRAINTS:
        step(f"0016 VALIDATE {table}.{constraint}", run_sql(f"ALTER TABLE {table} VALIDATE CONSTRAINT {constraint}"))
    step("0016 migrate (finds them valid)", lambda: call_command("migrate", database="owner", verbosity=0))

    if not args.keep:
        owner.close()
        connections["default"].close()
        for alias in ("owner", "default"):
            connections[alias].settings_dict["NAME"] = "postgres"
        with owner.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote_ident(DB_NAME)} WITH (FORCE)")


if __name__ == "__main__":
    main()
