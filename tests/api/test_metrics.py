import pytest
from rest_framework.test import APIClient

from tests.api.conftest import post, write

pytestmark = pytest.mark.django_db


def test_metrics_are_prometheus_text_without_tenant_subject_memory_or_query(client_a):
    memory = write(client_a, "alice-secret-subject", "I am vegetarian.")
    post(client_a, "subjects/alice-secret-subject/search", {"query": "a very private query"})
    post(client_a, "subjects/alice-secret-subject/events", {"event_id": "e1", "role": "user", "content": "hi"})
    response = APIClient().get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'memory_api_request_seconds_count{method="POST",route="search",status="200"}' in text
    assert "memory_search_seconds_count" in text
    assert "memory_extraction_backlog 1.0" in text
    assert 'memory_jobs{kind="extraction",status="queued"} 1.0' in text
    for private in ("alice-secret-subject", memory["id"], memory["id"][4:], "private query", "tenant-a"):
        assert private not in text
