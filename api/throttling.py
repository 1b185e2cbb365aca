"""A request budget per API key (API_THROTTLE_RATE, e.g. "6000/min").

Counted in the shared Redis cache (settings.CACHES), so every web worker and host spends one
budget. DRF's own SimpleRateThrottle reads a key's history, appends and writes it back: two
workers doing that at once both pass on the same count, and a burst overshoots. Here each
request is one atomic INCR on a counter for the current window instead (a fixed window of the
rate's duration), so the rate holds exactly under concurrency; the price is that a key may
spend its budget at the end of one window and again at the start of the next. The counter is
set and incremented in one pipelined round trip on django-redis's own connection pool.
"""
import logging

from django.core.cache import cache
from redis.exceptions import RedisError
from rest_framework.throttling import SimpleRateThrottle

logger = logging.getLogger(__name__)


class ApiKeyRateThrottle(SimpleRateThrottle):
    scope = "api_key"

    def get_cache_key(self, request, view):
        api_key = getattr(request, "api_key", None)
        if api_key is None:
            return None  # unauthenticated doors (health, schema) are not throttled per key
        return self.cache_format % {"scope": self.scope, "ident": api_key.pk}

    def get_rate(self):
        # Read per request rather than at import, so a changed setting takes effect.
        from django.conf import settings
        from rest_framework.settings import api_settings

        return getattr(settings, "API_THROTTLE_RATE", None) or api_settings.DEFAULT_THROTTLE_RATES[self.scope]

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        self.window_ends_at, self.now = (window + 1) * self.duration, now
        counter = cache.make_key(f"{key}:{window}")
        try:
            # One round trip: create the window's counter if it is new (it outlives its window a
            # little, so a late INCR never recreates it without an expiry), then count this request.
            pipe = cache.client.get_client(write=True).pipeline(transaction=True)
            pipe.set(counter, 0, nx=True, ex=self.duration + 5)
            pipe.incr(counter)
            count = pipe.execute()[1]
        except RedisError:  # Redis unreachable: let the request through, as the cache does, and say so
            logger.warning("rate limit not counted: the cache's Redis is unreachable", exc_info=True)
            return True
        return count <= self.num_requests

    def wait(self):
        return max(self.window_ends_at - self.now, 1)
