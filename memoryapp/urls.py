from django.urls import include, path
from django.views import defaults

from api.errors import error_json_response

urlpatterns = [
    path("", include("console.urls")),
    path("", include("api.urls")),
    # mem0 Platform compatibility (/v1/ping/, /v3/memories/…): what an unchanged mem0 client calls.
    path("", include("api.mem0.urls")),
]


def _json_under_api(status: int, code: str, message: str, default):
    """Django answers some errors itself, outside any API view (a Host header not in ALLOWED_HOSTS,
    an exception in a plain view): under /api/ they keep the contract's JSON shape, elsewhere
    Django's own page."""

    def handler(request, *args, **kwargs):
        # path_info only: request.get_host() would raise again for the DisallowedHost that led here.
        if request.path_info.startswith("/api/"):
            return error_json_response(code, message, status)
        return default(request, *args, **kwargs)

    return handler


handler400 = _json_under_api(400, "bad_request", "The request is not valid.", defaults.bad_request)
handler403 = _json_under_api(403, "forbidden", "This request is not allowed.", defaults.permission_denied)
handler404 = _json_under_api(404, "not_found", "No such endpoint.", defaults.page_not_found)
handler500 = _json_under_api(500, "internal_error", "An internal error occurred.", defaults.server_error)
