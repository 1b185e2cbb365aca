import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from memoryapp.services.tenants import api_key_create
from tests.api.conftest import post, write
from tests.conftest import gunicorn_errors, gunicorn_process, gunicorn_workers, served_by
from tests.workers.conftest import RedisBroker, Worker, _point_app_at, _worker_env

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-for-tests"


def test_metrics_are_prometheus_text_without_tenant_subject_memory_or_query(client_a):
    memory = write(client_a, "alice-secret-subject", "I am vegetarian.")
    post(client_a, "subjects/alice-secret-subject/search", {"query": "a very private query"})
    post(client_a, "subjects/alice-secret-subject/events", {"event_id": "e1", "role": "user", "content": "hi"})
    response = APIClient().get("/metrics")  # the test client comes from 127.0.0.1
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'memory_api_request_seconds_count{method="POST",route="search",status="200"}' in text
    assert "memory_search_seconds_count" in text
    assert "memory_extraction_backlog 1.0" in text
    assert 'memory_jobs{kind="extraction",status="queued"} 1.0' in text
    for private in ("alice-secret-subject", memory["id"], memory["id"][4:], "private query", "tenant-a"):
        assert private not in text


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1"])
def test_without_a_token_metrics_answer_loopback_callers(address):
    assert APIClient().get("/metrics", REMOTE_ADDR=address).status_code == 200


@pytest.mark.parametrize("address", ["10.0.0.5", "192.0.2.7", "2001:db8::1", ""])
def test_without_a_token_metrics_refuse_other_hosts(address):
    response = APIClient().get("/metrics", REMOTE_ADDR=address)
    assert response.status_code == 403 and b"memory_" not in response.content


@pytest.mark.parametrize("header", ["HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP", "HTTP_X_CLIENT_IP",
                                    "HTTP_TRUE_CLIENT_IP", "HTTP_VIA"])
def test_without_a_token_a_request_relayed_by_a_local_proxy_is_refused(header):
    # A reverse proxy on this machine makes every caller look like loopback; it says so in these.
    response = APIClient().get("/metrics", REMOTE_ADDR="127.0.0.1", **{header: "for=203.0.113.9"})
    assert response.status_code == 403


def test_with_a_token_metrics_need_it_from_anywhere(settings):
    settings.METRICS_TOKEN = TOKEN
    missing = APIClient().get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    for wrong in ("Bearer nope", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer"):
        assert APIClient().get("/metrics", HTTP_AUTHORIZATION=wrong).status_code == 401
    scraped = APIClient().get("/metrics", REMOTE_ADDR="10.0.0.5", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert scraped.status_code == 200 and b"memory_" in scraped.content


def _fetch(port: int, path: str, key: str = "") -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sample(text: str, name: str, labels: dict) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return None


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_metrics_sum_every_web_worker_and_the_celery_workers_whichever_worker_answers(tenant_a, actor, tmp_path):
    """Without multiprocess mode each worker answered with its own counters only."""
    from workers.celery import app
    from workers.tasks import sweep_outbox

    folder = tmp_path / "metrics"
    folder.mkdir()
    broker = RedisBroker(tmp_path)
    broker.start()
    worker = Worker(_worker_env(broker.url, PROMETHEUS_MULTIPROC_DIR=str(folder)), tmp_path / "worker.log")
    previous_broker = app.conf.broker_url
    _, key = api_key_create(tenant=tenant_a, name="metrics", actor=actor)
    count = {"name": "memory_api_request_seconds_count", "labels": {"route": "memories", "method": "GET", "status": "200"}}
    try:
        worker.start()
        _point_app_at(broker.url)
        sweep_outbox.delay()
        with gunicorn_process(workers=2, env={"PROMETHEUS_MULTIPROC_DIR": str(folder)}, ready_timeout=60) as (port, master):
            first, second = gunicorn_workers(master, 2)
            for pid, times in ((first, 3), (second, 2)):
                with served_by(pid, [first, second]):
                    assert [_fetch(port, "/api/v1/subjects/alice/memories", key)[0] for _ in range(times)] == [200] * times
            scrapes = {}
            for pid in (first, second):
                with served_by(pid, [first, second]):
                    status, scrapes[pid] = _fetch(port, "/metrics")
                    assert status == 200, scrapes[pid]
            assert _sample(scrapes[first], count["name"], count["labels"]) == 5, gunicorn_errors()
            assert _sample(scrapes[second], count["name"], count["labels"]) == 5
            # The Celery worker's task, in the web server's /metrics (bounded wait: it runs on its own).
            deadline, swept = time.monotonic() + 60, None
            while swept is None and time.monotonic() < deadline:
                swept = _sample(_fetch(port, "/metrics")[1], "memory_worker_tasks_total",
                                {"task": "sweep_outbox", "state": "SUCCESS"}) or time.sleep(0.5)
            assert swept == 1, worker.log.read_text()[-2000:]
            text = _fetch(port, "/metrics")[1]
            assert _sample(text, "memory_worker_task_seconds_count", {"task": "sweep_outbox"}) == 1
            assert "tenant-a" not in text and key not in text
    finally:
        _point_app_at(previous_broker)
        worker.stop()
        broker.stop()
