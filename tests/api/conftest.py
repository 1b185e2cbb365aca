import pytest
from rest_framework.test import APIClient

from memoryapp.actors import Actor
from memoryapp.services.tenants import api_key_create

ADMIN = Actor("system", "tests")


def make_client(tenant, subject_ref: str = "") -> APIClient:
    _, raw = api_key_create(tenant=tenant, subject_ref=subject_ref, name="test", actor=ADMIN)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.raw_key = raw
    return client


@pytest.fixture
def client_a(tenant_a):
    return make_client(tenant_a)


@pytest.fixture
def client_b(tenant_b):
    return make_client(tenant_b)


@pytest.fixture
def bound_alice(tenant_a):
    """Tenant A's key bound to the subject "alice"."""
    return make_client(tenant_a, "alice")


def post(client, path, body=None, **extra):
    return client.post(f"/api/v1/{path}", body if body is not None else {}, format="json", **extra)


def write(client, subject, statement, **fields):
    response = post(client, f"subjects/{subject}/memories", {"statement": statement, **fields})
    assert response.status_code == 201, response.content
    return response.json()


def assert_error(response, status: int, code: str | None = None):
    assert response.status_code == status, (response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"error"} or "error" in body
    assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str)
    assert isinstance(body["error"]["details"], dict)
    if code:
        assert body["error"]["code"] == code, body
    return body
