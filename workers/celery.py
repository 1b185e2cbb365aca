"""The Celery application. Queues: `extraction` (events to memories), `maintenance` (export,
consolidation, forgetting, reindex) and `erasure` (kept apart so deletions never wait behind a
backlog of extraction)."""
import os
import sys

from celery import Celery, signals
from celery.schedules import crontab
from django.conf import settings  # lazy: read below, after DJANGO_SETTINGS_MODULE is set

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

app = Celery("memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_default_queue = "maintenance"
app.conf.task_routes = {
    "workers.tasks.sweep_outbox": {"queue": "maintenance"},
    "workers.tasks.run_periodic": {"queue": "maintenance"},
}

# Periodic jobs, declared in one place.
app.conf.beat_schedule = {
    # The outbox's safety net: re-publish events and jobs left pending by a broker outage, and
    # take back the claims of a worker that died (its job's heartbeat is MEMORY_JOB_STALE_SECONDS
    # old). Every 10 s returns a dead worker's claims within 50 s of its death (the stale
    # window plus one sweep); a sweep with nothing to do is a few indexed queries per tenant.
    "sweep-outbox": {"task": "workers.tasks.sweep_outbox", "schedule": settings.MEMORY_OUTBOX_SWEEP_SECONDS,
                     # A sweep that waited longer than its interval is superseded by the next one.
                     "options": {"expires": settings.MEMORY_OUTBOX_SWEEP_SECONDS}},
    # Audit entries are sealed into their chain right after the commit that wrote them; this
    # seals what a process that died in between left, so verification never waits long for it.
    "seal-audit": {"task": "workers.tasks.run_periodic", "schedule": 60.0, "args": ["seal_audit"],
                   "options": {"expires": 60.0}},
    # Reads are added to their memories' access counts here, not in the read (services/accesses.py):
    # every 30 s keeps the counts that recent without a read ever waiting for a row lock.
    "fold-accesses": {"task": "workers.tasks.run_periodic", "schedule": 30.0, "args": ["fold_accesses"],
                      "options": {"expires": 30.0}},
    # Expiry must bite soon after `expires_at`; search filters expired rows anyway, so this only
    # moves their status and audits it. Every 5 minutes is plenty.
    "expire-memories": {"task": "workers.tasks.run_periodic", "schedule": 300.0, "args": ["forgetting"]},
    # Consolidation merges duplicates and rebuilds summaries; nightly keeps it off peak hours.
    "consolidate": {"task": "workers.tasks.run_periodic", "schedule": crontab(hour=3, minute=0),
                    "args": ["consolidation"]},
    # Export files expire after MEMORY_EXPORT_TTL_HOURS; hourly removal keeps the window tight.
    "purge-exports": {"task": "workers.tasks.run_periodic", "schedule": 3600.0, "args": ["purge_exports"]},
}
app.autodiscover_tasks(["workers"])

from workers import metrics  # noqa: E402,F401  (its signal handlers count every task run)


@signals.worker_init.connect  # before the pool starts: prefork children inherit it
def _worker_db_timeouts(**kwargs) -> None:
    """Tasks get the workers' own statement and lock timeouts (settings.DB_WORKER_OPTIONS, longer
    than a request's: an erasure batch or a consolidation may rightly take minutes). Set before
    the worker opens any connection; one already open is closed so the next one has them."""
    from django.db import connections

    connections["default"].settings_dict["OPTIONS"] = dict(settings.DB_WORKER_OPTIONS)
    connections["default"].close()


@signals.worker_init.connect  # the solo pool runs tasks in this process
@signals.worker_process_init.connect  # each prefork child: the parent's setting need not survive the fork
def _torch_threads(**kwargs) -> None:
    """TORCH_NUM_THREADS caps the model's threads in a worker process (unset: one per core). Extraction
    embeds in a second thread while the first writes to the database; on a small machine one
    torch thread can leave a core for those writes instead of both contending for two."""
    threads = os.environ.get("TORCH_NUM_THREADS")
    # embeddings.py reads it when it loads the model (ONNX Runtime's or torch's threads); a
    # torch model already loaded (torch is the runtime) is set here.
    if threads and "torch" in sys.modules:
        import torch

        torch.set_num_threads(int(threads))
