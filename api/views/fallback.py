from django.db import transaction
from django.views.decorators.csrf import csrf_exempt

from api.errors import error_json_response


# csrf_exempt: the API authenticates with bearer keys, never cookies, so a POST to a mistyped path
# must get this JSON 404 rather than Django's HTML CSRF 403.
@csrf_exempt
@transaction.non_atomic_requests
def api_not_found(request, *args, **kwargs):
    return error_json_response("not_found", "No such endpoint.", 404, {"path": request.path})
