"""Concurrent writers on one subject through real processes (gunicorn with two workers, a Celery
worker extracting the events meanwhile): no deadlock reaches a client as a 503, whatever the mix.
The same mixes, longer, are bench/write_contention.py."""
import pytest

from bench.write_contention import run_mix
from memoryapp.services.tenants import api_key_create
from tests.conftest import gunicorn_errors, running_gunicorn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.worker]


@pytest.fixture
def server(tenant_a, actor, celery_worker):
    _, key = api_key_create(tenant=tenant_a, name="contention", actor=actor)
    with running_gunicorn(workers=2, threads=8, ready_timeout=60) as port:
        # The first request in each worker loads the model: not part of the contention.
        run_mix(port=port, key=key, mix="pair", clients=2, duration=0.1)
        yield port, key


def test_correctors_and_writers_on_one_subject_never_get_a_server_error(server):
    port, key = server
    tally = run_mix(port=port, key=key, mix="pair", clients=4, duration=8)
    assert tally.error_count == 0, (dict(tally.errors), tally.samples, gunicorn_errors())
    assert tally.ok["correct"] >= 10 and tally.ok["write"] >= 10, dict(tally.ok)


def test_a_mix_of_events_writes_corrections_forgets_and_replays_never_gets_a_server_error(server):
    port, key = server
    tally = run_mix(port=port, key=key, mix="mix", clients=12, duration=15)
    assert tally.error_count == 0, (dict(tally.errors), tally.samples, gunicorn_errors())
    for op in ("event", "write", "correct", "forget", "idempotent", "search"):
        assert tally.ok[op] >= 3, dict(tally.ok)
