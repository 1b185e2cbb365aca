import time
import urllib.error
import urllib.request

import pytest
from django.core.cache import cache
from django.test import override_settings

from api.throttling import ApiKeyRateThrottle
from memoryapp.services.tenants import api_key_create
from tests.api.conftest import assert_error
from tests.conftest import gunicorn_errors, gunicorn_process, gunicorn_workers, served_by

pytestmark = pytest.mark.django_db


def test_a_key_over_its_rate_gets_429_with_retry_after_and_other_keys_do_not(client_a, client_b, monkeypatch):
    # Mid-window, so the burst never sees the minute turn (a new window counts from zero).
    middle = (time.time() // 60) * 60 + 30
    monkeypatch.setattr(ApiKeyRateThrottle, "timer", staticmethod(lambda: middle))
    cache.clear()
    with override_settings(API_THROTTLE_RATE="3/min"):
        for _ in range(3):
            assert client_a.get("/api/v1/subjects/alice/memories").status_code == 200
        response = client_a.get("/api/v1/subjects/alice/memories")
        body = assert_error(response, 429, "rate_limited")
        assert int(response["Retry-After"]) == 30  # until the window ends
        assert body["error"]["details"]["retry_after"] == int(response["Retry-After"])
        assert client_b.get("/api/v1/subjects/alice/memories").status_code == 200
    cache.clear()


def _get(port: int, key: str, path: str = "/api/v1/subjects/alice/memories") -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_two_web_workers_enforce_one_rate_per_key(tenant_a, actor):
    """Each worker used to count in its own memory: a key got the rate once per worker."""
    _, key = api_key_create(tenant=tenant_a, name="two workers", actor=actor)
    # Five a day: the test's minute or so never crosses into a new window, which would count from zero.
    with gunicorn_process(workers=2, env={"API_THROTTLE_RATE": "5/day"}, ready_timeout=60) as (port, master):
        first, second = gunicorn_workers(master, 2)
        with served_by(first, [first, second]):
            statuses = [_get(port, key) for _ in range(3)]
        with served_by(second, [first, second]):
            statuses += [_get(port, key) for _ in range(2)]
            statuses.append(_get(port, key))  # the sixth: over the rate, in a worker that served two
        with served_by(first, [first, second]):
            statuses.append(_get(port, key))  # and in the one that served three
    assert statuses == [200] * 5 + [429, 429], (statuses, gunicorn_errors())


def test_concurrent_requests_never_spend_more_than_the_rate():
    """One atomic count per request: threads racing on one key's count never both pass on it
    (a read of the count, then a write of it plus one, lets several pass on the same count)."""
    from concurrent.futures import ThreadPoolExecutor

    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.api_key = type("Key", (), {"pk": "concurrency-probe"})()
    now = time.time()  # one instant for every request: the burst never straddles two windows

    def attempt(_):
        throttle = ApiKeyRateThrottle()
        throttle.timer = lambda: now
        return throttle.allow_request(request, None)

    cache.clear()
    with override_settings(API_THROTTLE_RATE="20/min"), ThreadPoolExecutor(8) as pool:
        allowed = list(pool.map(attempt, range(80)))
    cache.clear()
    assert allowed.count(True) == 20


def test_while_the_caches_redis_is_unreachable_requests_go_through_uncounted(client_a, tmp_path, settings):
    """Redis down must not take the API down with it: the limit is skipped (and logged) meanwhile."""
    unreachable = {"default": {**settings.CACHES["default"], "LOCATION": f"unix://{tmp_path}/no-redis.sock?db=1"}}
    with override_settings(CACHES=unreachable, API_THROTTLE_RATE="1/min"):
        assert [client_a.get("/api/v1/subjects/alice/memories").status_code for _ in range(3)] == [200] * 3
