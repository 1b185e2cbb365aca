"""Access counts (what forgetting reads: how often and how lately a memory was recalled), folded
in from the read audit by the worker.

A search used to add one to each returned memory's count in its own transaction. That UPDATE
took the memories' row locks, so a read waited behind whatever held them: an extraction's chunk
(seconds), another read of the same memories until its request committed. Under 32 clients it
waited up to 3.7 s, and past the lock timeout the read failed. A read now only inserts its read
audit row (it always did; it lists the memories returned), and `accesses_fold` adds the
uncounted rows of a tenant to their memories in one transaction that also marks them counted:
each row is counted exactly once, whenever it commits, and a fold that fails counts none.

Counted reads are the ones that recall: search and context (ACCESS_OPERATIONS; services/reads.py
writes every other read as counted already); the context's row lists what it presented, the
profile's facts included. The counts trail the reads by the beat's interval, 30 s, or more when
the maintenance queue is busy (forgetting folds first, so the cap never weighs stale counts).

The fold waits at most FOLD_LOCK_WAIT for a memory's row lock: it locks the batch's memories in
id order and holds them while it waits, so a long wait would hold up writers in turn, and the
writers (an extraction's chunk, an erasure) do not lock in id order, so it could deadlock with
them. Giving up first leaves the rows uncounted for the next run.
"""
import logging

from django.db import connection, transaction

from memoryapp.models import Tenant
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

ACCESS_OPERATIONS = ["search", "context"]
# Read audit rows folded per transaction; a larger backlog is folded in several.
FOLD_BATCH = 5000
# Below PostgreSQL's deadlock_timeout (1 s), so in a cycle the fold is the one that gives up.
FOLD_LOCK_WAIT = "200ms"

# SKIP LOCKED: rows another fold is counting right now are left to it. The memories are locked
# in id order, so two folds never deadlock on them.
_FOLD = """
WITH taken AS (
    SELECT r.id, r.memory_ids, r.created_at FROM memoryapp_readaudit r
    WHERE r.tenant_id = %(tenant)s AND NOT r.accesses_counted
    ORDER BY r.id LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
marked AS (
    UPDATE memoryapp_readaudit r SET accesses_counted = true
    FROM taken WHERE r.tenant_id = %(tenant)s AND r.id = taken.id
    RETURNING r.id
),
counts AS (
    SELECT memory_id, count(*) AS reads, max(taken.created_at) AS last_read
    FROM taken CROSS JOIN LATERAL unnest(taken.memory_ids) AS memory_id
    GROUP BY memory_id
),
locked AS (
    SELECT m.id FROM memoryapp_memory m JOIN counts c ON c.memory_id = m.id
    WHERE m.tenant_id = %(tenant)s ORDER BY m.id FOR NO KEY UPDATE OF m
),
counted AS (
    UPDATE memoryapp_memory m
    SET access_count = m.access_count + c.reads,
        last_accessed_at = greatest(m.last_accessed_at, c.last_read)
    FROM counts c, locked l
    WHERE m.tenant_id = %(tenant)s AND m.id = c.memory_id AND l.id = m.id
    RETURNING m.id
)
SELECT (SELECT count(*) FROM marked), (SELECT count(*) FROM counted)
"""


def accesses_fold(*, tenant: Tenant | int) -> int:
    """Add the tenant's uncounted reads to their memories' access counts, FOLD_BATCH rows a
    transaction; returns how many read audit rows were counted. Memories erased since they were
    read are simply not found."""
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else int(tenant)
    total = 0
    while True:
        with transaction.atomic():
            tenant_activate(tenant=tenant_id)
            with connection.cursor() as cursor:
                # Set back after: inside a caller's transaction (forgetting's) the setting would
                # outlive this block and cut the caller's own lock waits short.
                cursor.execute("SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)",
                               [FOLD_LOCK_WAIT])
                previous = cursor.fetchone()[0]
                cursor.execute(_FOLD, {"tenant": tenant_id, "batch": FOLD_BATCH})
                rows, _ = cursor.fetchone()
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
        total += rows
        if rows < FOLD_BATCH:
            return total


def accesses_fold_all() -> int:
    """Every tenant's uncounted reads (beat)."""
    total = 0
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        try:
            total += accesses_fold(tenant=tenant_id)
        except Exception:  # one tenant's trouble (a deadlock, a timeout) must not stop the others
            logger.exception("folding the access counts of tenant %s failed", tenant_id)
    return total
