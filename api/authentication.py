"""`Authorization: Bearer <key>` → the key's tenant, activated for this request's transaction.

The tenant comes only from the key: never from the path, the body or another header.
"""
from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

from memoryapp.actors import Actor
from memoryapp.models import ApiKey
from memoryapp.services.authority import source_check
from memoryapp.services.tenants import api_key_authenticate

# Writing last_used_at on every request would lock the key's row on every request; once a
# minute per process is precise enough to tell a live key from a forgotten one.
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_KEY_LENGTH = 200


class ApiKeyPrincipal:
    """What DRF calls `request.user`: the key, never a Django user."""

    is_authenticated = True

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key

    def __str__(self) -> str:
        return f"api_key:{self.api_key.prefix}"


def api_key_actor(api_key: ApiKey) -> Actor:
    return Actor("api_key", api_key.prefix)


def _touch(api_key: ApiKey) -> None:
    now = timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < LAST_USED_RESOLUTION:
        return
    if not cache.add(f"api-key-used:{api_key.pk}", 1, timeout=int(LAST_USED_RESOLUTION.total_seconds())):
        return
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)


class ApiKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None  # → 401 not authenticated (the permission check asks for a key)
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "bearer" or not raw or len(raw) > MAX_KEY_LENGTH or not raw.isascii():
            raise AuthenticationFailed("Send the API key as 'Authorization: Bearer <key>'.")
        api_key = api_key_authenticate(raw)  # also binds the transaction to the key's tenant
        if api_key is None:
            raise AuthenticationFailed("Unknown or revoked API key.")
        _touch(api_key)
        request.tenant = api_key.tenant
        request.api_key = api_key
        # Also on the Django request, where the access log and metrics look.
        request._request.tenant, request._request.api_key = api_key.tenant, api_key
        return ApiKeyPrincipal(api_key), api_key

    def authenticate_header(self, request):
        return self.keyword


def claim_source(request, *, subject: str, source_kind: str | None, operation: str) -> str:
    """The source a write from this request carries: the one it claims, or without a claim the
    highest its key may claim (user_explicit for a key without a cap, as the contract says).
    A claim above the key's cap is refused, audited: 403 source_not_allowed."""
    source_kind = source_kind or request.api_key.max_source
    source_check(tenant=request.tenant, api_key=request.api_key, source_kind=source_kind, subject_ref=subject,
                 actor=api_key_actor(request.api_key), operation=operation)
    return source_kind
