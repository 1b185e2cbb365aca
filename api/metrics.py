"""Prometheus metrics. Labels name routes, methods, statuses, job kinds and outcomes only: never
a tenant, subject, memory id or query. Under gunicorn every process writes its samples to
PROMETHEUS_MULTIPROC_DIR and a scrape sums them (memoryapp/gunicorn_config.py)."""
from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

REQUEST_SECONDS = Histogram(
    "memory_api_request_seconds", "API request latency.", ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
SEARCH_SECONDS = Histogram(
    "memory_search_seconds", "Retrieval latency (embedding + SQL + re-scoring).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)

# A lock conflict retried inside the service (api/views/base.py): invisible to clients, so
# counted here; a steady rate means some path still takes locks in a conflicting order.
LOCK_CONFLICT_RETRIES = Counter(
    "memory_api_lock_conflict_retries", "Requests run again after a deadlock or serialization failure.",
    ["route", "sqlstate"],
)


class StoreCollector:
    """Extraction backlog and job outcomes, read at scrape time. The application's database role
    sees one tenant per transaction (row-level security), so it counts tenant by tenant and
    reports only the sums."""

    def collect(self):
        from django.db import transaction
        from django.db.models import Count

        from memoryapp.models import Event, Job, Tenant
        from memoryapp.tenancy import tenant_activate

        backlog = 0
        jobs: dict[tuple[str, str], int] = {}
        try:
            for tenant_id in Tenant.objects.values_list("id", flat=True):
                with transaction.atomic():
                    tenant_activate(tenant=tenant_id)
                    backlog += Event.objects.filter(tenant_id=tenant_id, status=Event.Status.PENDING).count()
                    for row in Job.objects.filter(tenant_id=tenant_id).values("kind", "status").annotate(n=Count("id")):
                        key = (row["kind"], row["status"])
                        jobs[key] = jobs.get(key, 0) + row["n"]
        except Exception:  # a scrape during a database outage reports what the API can, no error
            return
        gauge = GaugeMetricFamily("memory_extraction_backlog", "Events waiting for extraction.")
        gauge.add_metric([], backlog)
        yield gauge
        family = GaugeMetricFamily("memory_jobs", "Jobs by kind and status.", labels=["kind", "status"])
        for (kind, status), n in sorted(jobs.items()):
            family.add_metric([kind, status], n)
        yield family


_registered = False


def register_store_collector() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(StoreCollector())
        _registered = True
