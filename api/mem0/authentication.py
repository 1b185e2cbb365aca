"""`Authorization: Token <key>`, as the mem0 client sends it; the same keys as the v1 API."""
from rest_framework.exceptions import AuthenticationFailed

from api.authentication import MAX_KEY_LENGTH, ApiKeyAuthentication


class TokenKeyAuthentication(ApiKeyAuthentication):
    """The v1 authentication under the mem0 scheme name. `Bearer` is accepted too, so a caller
    can use one header for both doors; the tenant still comes only from the key."""

    keyword = "Token"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() not in ("token", "bearer") or not raw or len(raw) > MAX_KEY_LENGTH or not raw.isascii():
            raise AuthenticationFailed("Send the API key as 'Authorization: Token <key>'.")
        # The parent parses "Bearer <key>"; hand it the same key under that name.
        request.META["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
        try:
            return super().authenticate(request)
        finally:
            request.META["HTTP_AUTHORIZATION"] = header
