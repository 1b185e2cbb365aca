"""GET /api/v1/key: the calling key, so a client configured with only a key (memory-mcp) knows
whether it is bound to a subject."""
import pytest
from rest_framework.test import APIClient

from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db


def test_a_bound_key_names_its_subject_and_an_unbound_key_none(bound_alice, client_a):
    bound = bound_alice.get("/api/v1/key")
    unbound = client_a.get("/api/v1/key")
    assert bound.status_code == 200 and bound.json()["subject"] == "alice"
    assert unbound.status_code == 200 and unbound.json()["subject"] is None
    assert bound.json()["prefix"] == bound_alice.raw_key.split("_")[1]
    assert bound_alice.raw_key not in bound.content.decode()  # never the secret


def test_the_key_endpoint_refuses_a_missing_or_unknown_key():
    assert_error(APIClient().get("/api/v1/key"), 401, "unauthenticated")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer mk_000000000000_notakey")
    assert_error(client.get("/api/v1/key"), 401, "unauthenticated")
