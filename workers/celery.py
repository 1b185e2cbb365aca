"""The Celery application. Queues: `extraction` (events to memories), `maintenance` (export,
consolidation, forgetting, reindex) and `erasure` (kept apart so deletions never wait behind a
backlog of extraction)."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

app = Celery("memory")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_default_queue = "maintenance"
app.autodiscover_tasks(["workers"])
