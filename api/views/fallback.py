from django.db import transaction

from api.errors import error_json_response


@transaction.non_atomic_requests
def api_not_found(request, *args, **kwargs):
    return error_json_response("not_found", "No such endpoint.", 404, {"path": request.path})
