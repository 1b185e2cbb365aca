"""The doors other clients use, end to end: a real gunicorn serving the test database, a real
Celery worker on a real Redis, and the clients' own SDKs (no mocks of ours).

MEM0_TELEMETRY=false before mem0 is imported: the mem0 client otherwise reports usage to its
vendor (and these machines have no internet)."""
import os

os.environ["MEM0_TELEMETRY"] = "false"

import httpx
import pytest

from memoryapp.actors import Actor
from tests.conftest import running_gunicorn
from tests.workers.conftest import broker, celery_worker  # noqa: F401  (fixtures)

ADMIN = Actor("system", "tests")


@pytest.fixture(scope="module")
def server(django_db_setup, broker, celery_worker):  # noqa: F811
    """A gunicorn for the module (the first search loads the embedding model once), publishing
    its extraction and deletion jobs to the test broker, where the real worker takes them."""
    previous = os.environ.get("REDIS_URL")
    os.environ["REDIS_URL"] = broker.url
    try:
        with running_gunicorn(workers=1, threads=4, ready_timeout=60) as port:
            base = f"http://127.0.0.1:{port}"
            httpx.get(f"{base}/api/v1/health", timeout=120)
            yield base
    finally:
        if previous is None:
            os.environ.pop("REDIS_URL", None)
        else:
            os.environ["REDIS_URL"] = previous


def new_key(tenant, subject_ref: str = "") -> str:
    from memoryapp.services.tenants import api_key_create

    _, raw = api_key_create(tenant=tenant, subject_ref=subject_ref, name="mem0-door", actor=ADMIN)
    return raw


@pytest.fixture
def jobs_settle(transactional_db, server):
    """Waits, after the test, for the worker to finish the jobs the test queued (a client's
    delete_users does not hand back its job): the table flush must not race them. Set up after
    the database fixture, so torn down before its flush."""
    yield
    from memoryapp.models import Job, Tenant
    from tests.conftest import as_tenant
    from tests.workers.conftest import wait_for

    def idle():
        for tenant in list(Tenant.objects.all()):
            with as_tenant(tenant):
                if Job.objects.filter(tenant=tenant, status__in=["queued", "running"]).exists():
                    return False
        return True

    wait_for(idle, timeout=120, message="the worker to finish the test's jobs")
