"""A request budget per API key (API_THROTTLE_RATE, e.g. "6000/min").

The counts live in Django's cache, which is a per-process LocMem cache: with N server processes
a key may get up to N times the rate. A shared cache (Redis) would make it exact.
"""
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
