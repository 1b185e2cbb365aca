from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from memoryapp.models import ApiKey
from memoryapp.services.tenants import api_key_revoke
from tests.api.conftest import ADMIN, assert_error, post, write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def test_request_without_a_key_is_401_with_the_error_shape(tenant_a):
    response = APIClient().post("/api/v1/subjects/alice/search", {"query": "x"}, format="json")
    assert_error(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer mk_abc_def", "Basic dXNlcjpwYXNz", "Bearer " + "x" * 500,
                                    "Bearer mk_ünïcode_x"])
def test_unknown_or_malformed_key_is_401(tenant_a, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_error(post(client, "subjects/alice/search", {"query": "x"}), 401, "unauthenticated")


def test_revoked_key_is_401(tenant_a, client_a):
    write(client_a, "alice", "I like tea.")
    with as_tenant(tenant_a):
        key = ApiKey.objects.get(tenant=tenant_a)
    api_key_revoke(tenant=tenant_a, api_key_id=key.id, actor=ADMIN)
    assert_error(client_a.get("/api/v1/subjects/alice/memories"), 401, "unauthenticated")


def test_key_with_a_valid_prefix_but_wrong_secret_is_401(client_a):
    prefix = client_a.raw_key.split("_")[1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer mk_{prefix}_wrongsecret")
    assert_error(client.get("/api/v1/subjects/alice/memories"), 401)


def test_bound_key_gets_403_subject_forbidden_for_any_other_subject(bound_alice):
    for method, path in [("get", "subjects/bob/memories"), ("post", "subjects/bob/search"),
                         ("post", "subjects/bob/context"), ("post", "subjects/bob/events"),
                         ("delete", "subjects/bob"), ("post", "subjects/bob/exports"),
                         ("post", "subjects/bob/console-link"), ("get", "subjects/bob/memories/mem_00")]:
        response = getattr(bound_alice, method)(f"/api/v1/{path}", {}, format="json")
        assert_error(response, 403, "subject_forbidden")


def test_bound_key_works_for_its_own_subject(bound_alice):
    memory = write(bound_alice, "alice", "I live in Lyon.")
    assert bound_alice.get(f"/api/v1/subjects/alice/memories/{memory['id']}").status_code == 200


def test_tenant_is_never_taken_from_the_request(client_a, client_b, tenant_b):
    write(client_b, "alice", "Tenant B's alice likes opera.")
    # Headers and query parameters naming another tenant change nothing.
    response = client_a.get("/api/v1/subjects/alice/memories", HTTP_X_TENANT=str(tenant_b.pk))
    assert response.status_code == 200 and response.json()["results"] == []


def test_last_used_at_is_recorded_at_most_once_a_minute(tenant_a, client_a):
    client_a.get("/api/v1/subjects/alice/memories")
    with as_tenant(tenant_a):
        first = ApiKey.objects.get(tenant=tenant_a).last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=30)
    client_a.get("/api/v1/subjects/alice/memories")
    with as_tenant(tenant_a):
        assert ApiKey.objects.get(tenant=tenant_a).last_used_at == first
