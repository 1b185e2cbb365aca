"""When PostgreSQL is unreachable the API says so (503 memory_unavailable), never an empty
answer; when the broker is down events are still accepted (the outbox keeps them)."""
import time

import pytest
from django.db import connections
from django.test import override_settings
from rest_framework.test import APIClient

from memoryapp.models import Event
from tests.api.conftest import assert_error, make_client, post
from tests.conftest import as_tenant


class database_unreachable:
    """Point the app's connection at a closed port for the block, then restore it."""

    def __enter__(self):
        conn = connections["default"]
        self.saved = {k: conn.settings_dict[k] for k in ("HOST", "PORT")}
        conn.close()
        conn.settings_dict.update(HOST="127.0.0.1", PORT="1")

    def __exit__(self, *exc):
        conn = connections["default"]
        conn.close()
        conn.settings_dict.update(self.saved)


@pytest.mark.django_db(transaction=True)
def test_database_outage_is_503_memory_unavailable_never_an_empty_result(tenant_a):
    client = make_client(tenant_a)
    with database_unreachable():
        for response in [post(client, "subjects/alice/search", {"query": "anything"}),
                         client.get("/api/v1/subjects/alice/memories"),
                         post(client, "subjects/alice/events", {"event_id": "e", "role": "user", "content": "x"})]:
            assert_error(response, 503, "memory_unavailable")
        health = APIClient().get("/api/v1/health")
        assert health.status_code == 503 and health.json()["database"] == "unavailable"
        assert "database" in health.json()["error"]["details"]["failing"]
    # And it recovers by itself once the database is back.
    assert post(client, "subjects/alice/search", {"query": "anything"}).status_code == 200


@pytest.mark.django_db
def test_health_names_an_unreachable_broker():
    with override_settings(CELERY_BROKER_URL="redis+socket:///nonexistent/redis.sock"):
        started = time.monotonic()
        response = APIClient().get("/api/v1/health")
    body = response.json()
    assert response.status_code == 503 and body["broker"] == "unavailable" and body["database"] == "ok"
    assert body["error"]["details"]["failing"] == ["broker"]
    assert body["embedder"] in ("loaded", "loadable")
    assert time.monotonic() - started < 5


@pytest.mark.django_db(transaction=True)
def test_events_are_accepted_while_the_broker_is_down(tenant_a):
    from workers.celery import app

    client = make_client(tenant_a)
    saved = app.conf.broker_url
    app.conf.broker_url = "redis+socket:///nonexistent/redis.sock"
    app._pool = None
    app.amqp._producer_pool = None
    try:
        started = time.monotonic()
        response = post(client, "subjects/alice/events", {"event_id": "e1", "role": "user", "content": "I like figs."})
        elapsed = time.monotonic() - started
    finally:
        app.conf.broker_url = saved
        app._pool = None
        app.amqp._producer_pool = None
    assert response.status_code == 202 and response.json()["job"]
    assert elapsed < 10
    with as_tenant(tenant_a):
        assert Event.objects.get(tenant=tenant_a, event_id="e1").status == "pending"  # the sweeper re-sends
