import pytest
from rest_framework.test import APIClient

from tests.api.conftest import post, write

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
