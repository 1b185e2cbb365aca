from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.schemas import ApiKeyOut, errors
from api.views.base import ApiView


class ApiKeyView(ApiView):
    """The calling key itself: what a client configured with only a key needs to know (the
    memory-mcp stdio server asks whether its key is bound to a subject). Never the tenant's
    other keys, and nothing secret."""

    @extend_schema(operation_id="api_key_get", responses={200: ApiKeyOut, **errors()})
    def get(self, request):
        key = request.api_key
        return Response({"prefix": key.prefix, "name": key.name, "subject": key.subject_ref or None,
                         "max_source": key.max_source})
