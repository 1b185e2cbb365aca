"""Doors onto the service tested end to end: a live gunicorn (the project's config) serving the
test database, a real Celery worker on a real broker, and each door's own client (no mocks of
ours).

MEM0_TELEMETRY=false before mem0 is imported: the mem0 client otherwise reports usage to its
vendor (and these machines have no internet)."""
import os

os.environ["MEM0_TELEMETRY"] = "false"

import httpx  # noqa: E402
import pytest  # noqa: E402

from memoryapp.actors import Actor  # noqa: E402
from memoryapp.services.tenants import api_key_create  # noqa: E402
from tests.conftest import running_gunicorn  # noqa: E402
from tests.workers.conftest import broker, celery_worker  # noqa: E402, F401  (fixtures)

ADMIN = Actor("system", "tests")


@pytest.fixture(scope="module")
def live_service(django_db_setup, broker, celery_worker):  # noqa: F811
    """The web server's base URL. It publishes jobs to the test broker, where the worker is."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REDIS_URL", broker.url)
        with running_gunicorn(workers=1, threads=4, ready_timeout=60) as port:
            yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def server(live_service):
    """live_service, once the first request has loaded the embedding model (the mem0 tests
    time nothing, but a client's default timeout is shorter than that first load)."""
    httpx.get(f"{live_service}/api/v1/health", timeout=120)
    return live_service


@pytest.fixture
def keys(tenant_a, tenant_b, actor):
    """Raw API keys: tenant A unbound and bound to alice, tenant B unbound."""

    def make(tenant, subject=""):
        return api_key_create(tenant=tenant, subject_ref=subject, name="mcp-test", actor=actor)[1]

    return {"a": make(tenant_a), "a_alice": make(tenant_a, "alice"), "a_bob": make(tenant_a, "bob"),
            "b": make(tenant_b)}


def new_key(tenant, subject_ref: str = "") -> str:
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
