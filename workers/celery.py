"""The Celery application. Queues: `extraction` (events to memories), `maintenance` (export,
consolidation, forgetting, reindex) and `erasure` (kept apart so deletions never wait behind a
backlog of extraction)."""
import os

from celery import Celery, signals
from celery.schedules import crontab

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
    # The outbox's safety net: re-publish events and jobs left pending by a broker outage or a
    # killed worker. Every 30 s bounds how long an outage delays extraction after recovery.
    "sweep-outbox": {"task": "workers.tasks.sweep_outbox", "schedule": 30.0},
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


@signals.worker_init.connect  # the solo pool runs tasks in this process
@signals.worker_process_init.connect  # each prefork child: the parent's setting need not survive the fork
def _torch_threads(**kwargs) -> None:
    """TORCH_NUM_THREADS caps the model's threads in a worker process (unset: one per core). Extraction
    embeds in a second thread while the first writes to the database; on a small machine one
    torch thread can leave a core for those writes instead of both contending for two."""
    threads = os.environ.get("TORCH_NUM_THREADS")
    if threads:
        import torch

        torch.set_num_threads(int(threads))
