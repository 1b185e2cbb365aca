import pytest
from django.core.cache import cache
from django.test import override_settings

from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db


def test_a_key_over_its_rate_gets_429_with_retry_after_and_other_keys_do_not(client_a, client_b):
    cache.clear()
    with override_settings(API_THROTTLE_RATE="3/min"):
        for _ in range(3):
            assert client_a.get("/api/v1/subjects/alice/memories").status_code == 200
        response = client_a.get("/api/v1/subjects/alice/memories")
        body = assert_error(response, 429, "rate_limited")
        assert 1 <= int(response["Retry-After"]) <= 60
        assert body["error"]["details"]["retry_after"] == int(response["Retry-After"])
        assert client_b.get("/api/v1/subjects/alice/memories").status_code == 200
    cache.clear()
