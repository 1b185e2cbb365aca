"""What the Celery workers did, for /metrics: tasks run, by task and final state, and their
durations. Labels name tasks and states only, never a tenant, subject or job id. Under runservice
the worker writes to the same PROMETHEUS_MULTIPROC_DIR as the web server, so the web's /metrics
includes these; a worker elsewhere needs that folder shared with the web server (or its own
scrape)."""
import time

from celery import signals
from prometheus_client import Counter, Histogram

TASKS = Counter("memory_worker_tasks", "Celery tasks finished, by task and state.", ["task", "state"])
TASK_SECONDS = Histogram(
    "memory_worker_task_seconds", "Celery task run time.", ["task"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)

_started: dict[str, float] = {}


def _short(task) -> str:
    return task.name.rsplit(".", 1)[-1] if task is not None else "unknown"


@signals.task_prerun.connect
def _task_started(task_id=None, task=None, **kwargs) -> None:
    _started[task_id] = time.monotonic()


@signals.task_postrun.connect
def _task_finished(task_id=None, task=None, state=None, **kwargs) -> None:
    started = _started.pop(task_id, None)
    TASKS.labels(_short(task), state or "UNKNOWN").inc()
    if started is not None:
        TASK_SECONDS.labels(_short(task)).observe(time.monotonic() - started)
