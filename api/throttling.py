"""A request budget per API key (API_THROTTLE_RATE, e.g. "6000/min").

Counted in the shared Redis cache (settings.CACHES), so every web worker and host spends one
budget. DRF's own SimpleRateThrottle reads a key's history, appends and writes it back: two
workers doing that at once both pass on the same count, and a burst overshoots. Here each
request is one atomic INCR on a counter for the current window instead (a fixed window of the
rate's duration), so the rate holds exactly under concurrency; the price is that a key may
spend its budget at the end of one window and again at the start of the next.
"""
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle


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
        counter = f"{key}:{window}"
        # The counter outlives its window a little, so a late INCR never finds it gone.
        cache.add(counter, 0, timeout=self.duration + 5)
        try:
            count = cache.incr(counter)
        except ValueError:  # evicted between the two calls: this request opens the window
            cache.add(counter, 1, timeout=self.duration + 5)
            count = 1
        if count is None:  # Redis unreachable (the cache ignores it, and logs it): let it through
            return True
        return count <= self.num_requests

    def wait(self):
        return max(self.window_ends_at - self.now, 1)
