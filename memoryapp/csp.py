"""Content-Security-Policy on every response. A few lines instead of django-csp: the pages load
only our own static files and run no inline script, so the policy is a constant and needs no
nonces. The settings have the shape of Django 6.0's SECURE_CSP (directive -> sources), so moving
to django.middleware.csp on that upgrade is deleting this module."""
from django.conf import settings

HEADER = "Content-Security-Policy"


def policy_header(directives: dict[str, list[str]]) -> str:
    return "; ".join(" ".join([name, *sources]) for name, sources in directives.items())


class ContentSecurityPolicyMiddleware:
    """SECURE_CSP for every view; a view named in CSP_VIEW_OVERRIDES (by URL name) gets its own
    complete policy instead, so one page that cannot live under the strict policy (the Swagger
    docs) does not weaken the others. A header some other layer already set is left alone."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if HEADER in response:
            return response
        # Django's DEBUG error pages style and script themselves inline; they never run in production.
        if settings.DEBUG and response.status_code >= 400:
            return response
        match = getattr(request, "resolver_match", None)
        directives = settings.CSP_VIEW_OVERRIDES.get(match.view_name) if match else None
        response[HEADER] = policy_header(directives or settings.SECURE_CSP)
        return response
