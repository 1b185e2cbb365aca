"""Doors onto the service tested end to end: a live gunicorn (the project's config) serving the
test database, a real Celery worker on a real broker, and each door's own client."""
import pytest

from memoryapp.services.tenants import api_key_create
from tests.conftest import running_gunicorn
from tests.workers.conftest import broker, celery_worker  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def live_service(django_db_setup, broker, celery_worker):  # noqa: F811
    """The web server's base URL. It publishes jobs to the test broker, where the worker is."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REDIS_URL", broker.url)
        with running_gunicorn(workers=1, threads=4, ready_timeout=60) as port:
            yield f"http://127.0.0.1:{port}"


@pytest.fixture
def keys(tenant_a, tenant_b, actor):
    """Raw API keys: tenant A unbound and bound to alice, tenant B unbound."""

    def make(tenant, subject=""):
        return api_key_create(tenant=tenant, subject_ref=subject, name="mcp-test", actor=actor)[1]

    return {"a": make(tenant_a), "a_alice": make(tenant_a, "alice"), "a_bob": make(tenant_a, "bob"),
            "b": make(tenant_b)}
