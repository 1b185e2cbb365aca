"""Every periodic job the beat schedules names a job that exists, and the access counts' fold
runs as the beat runs it."""
import pytest

from memoryapp.models import Memory
from tests.api.conftest import client_a, post, write  # noqa: F401  (client_a: a fixture)
from tests.conftest import as_tenant
from workers.celery import app
from workers.tasks import PERIODIC, resolve, run_periodic


def test_every_scheduled_periodic_job_exists():
    scheduled = [entry["args"][0] for entry in app.conf.beat_schedule.values()
                 if entry["task"] == "workers.tasks.run_periodic"]
    assert "fold_accesses" in scheduled
    for name in scheduled:
        assert callable(resolve(PERIODIC[name]))


@pytest.mark.django_db
def test_the_beat_job_counts_what_searches_returned(tenant_a, client_a):
    write(client_a, "alice", "I am vegetarian.")
    post(client_a, "subjects/alice/search", {"query": "vegetarian"})
    run_periodic("fold_accesses")
    with as_tenant(tenant_a):
        assert Memory.objects.get(tenant=tenant_a, statement="I am vegetarian.").access_count == 1
