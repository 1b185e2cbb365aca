"""Celery tasks: ids in, a service call, retries on transient errors. Every task is safe to run
twice; the services claim their work with a conditional update."""
import importlib
import logging

from celery import shared_task
from django.db import OperationalError

logger = logging.getLogger(__name__)

# Job kind -> "module:function" of the service that runs it, called as fn(tenant=, job=)
# inside a transaction bound to the job's tenant after the job has been claimed.
JOB_RUNNERS = {
    "extraction": "memoryapp.services.extraction:extraction_job_run",
    "deletion": "memoryapp.services.erasure:erasure_job_run",
    "export": "memoryapp.services.export:export_job_run",
    "consolidation": "memoryapp.services.consolidation:consolidation_job_run",
    "forgetting": "memoryapp.services.forgetting:forgetting_job_run",
    "reindex": "memoryapp.services.reindex:reindex_job_run",
    "replay": "memoryapp.services.reindex:replay_job_run",
}

# Periodic maintenance across tenants -> "module:function" called with no arguments.
PERIODIC = {
    "forgetting": "memoryapp.services.forgetting:forgetting_sweep",
    "consolidation": "memoryapp.services.consolidation:consolidation_sweep",
    "purge_exports": "memoryapp.services.export:export_purge_expired",
    "seal_audit": "memoryapp.services.audit:audit_seal_all",
    "fold_accesses": "memoryapp.services.accesses:accesses_fold_all",
}


def resolve(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


@shared_task(bind=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5, acks_late=True)
def run_job(self, tenant_id: int, job_id: str) -> None:
    from memoryapp.services.jobs import job_run

    busy_for = job_run(tenant_id=tenant_id, job_id=job_id, runners={k: resolve(v) for k, v in JOB_RUNNERS.items()})
    # A message handed back because its worker died (acks_late, reject_on_worker_lost) finds the
    # job still running under that worker's last heartbeat: look once more when the heartbeat
    # has gone stale, and take the job over then rather than wait for the sweeper. (The retry is
    # a new message, not a redelivery, so a live worker's job is looked at only once.)
    if busy_for is not None and (self.request.delivery_info or {}).get("redelivered"):
        raise self.retry(countdown=busy_for.total_seconds() + 1)


@shared_task(acks_late=True)
def sweep_outbox() -> None:
    from memoryapp.services.outbox import outbox_sweep

    outbox_sweep()


@shared_task(acks_late=True)
def run_periodic(name: str) -> None:
    resolve(PERIODIC[name])()
