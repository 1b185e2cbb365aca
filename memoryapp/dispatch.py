"""Handing work to the workers after commit, by task name (the domain never imports a door).

A publish that fails (broker down) is not an error: the work is already recorded in
PostgreSQL as pending, and the periodic sweeper sends it again once the broker is back.
"""
import logging

from django.db import transaction

logger = logging.getLogger(__name__)

QUEUE_BY_JOB_KIND = {
    "extraction": "extraction",
    "deletion": "erasure",
    "export": "maintenance",
    "consolidation": "maintenance",
    "reindex": "maintenance",
    "replay": "maintenance",
    "forgetting": "maintenance",
}


def send_task_now(name: str, args: list, queue: str) -> bool:
    from workers.celery import app

    try:
        app.send_task(name, args=args, queue=queue, retry=False)
        return True
    except Exception:  # the broker is unreachable: the sweeper re-sends from the outbox
        logger.warning("could not publish %s to %s; the sweeper will retry", name, queue)
        return False


def job_enqueue_on_commit(job) -> None:
    job_id, tenant_id, kind = str(job.id), job.tenant_id, job.kind
    queue = QUEUE_BY_JOB_KIND.get(kind, "maintenance")
    transaction.on_commit(lambda: send_task_now("workers.tasks.run_job", [tenant_id, job_id], queue))
