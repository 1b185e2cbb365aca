"""What every mem0 route shares with the v1 API (ApiView: its transaction, lock-conflict retries,
metrics, no-store) and what differs: the `Token` scheme, and errors that also carry mem0's
`detail` (a readable string, which is what the mem0 client shows) beside our `error` object."""
import json

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.errors import exception_handler
from api.mem0.authentication import TokenKeyAuthentication
from api.views.base import ApiView


def detail_text(error: dict) -> str:
    message = error.get("message") or "The request failed."
    details = error.get("details") or {}
    if error.get("code") == "invalid_request" and isinstance(details, dict) and details:
        parts = []
        for field, problems in details.items():
            if isinstance(problems, list):
                problems = " ".join(json.dumps(p) if isinstance(p, (dict, list)) else str(p) for p in problems)
            elif isinstance(problems, dict):
                problems = json.dumps(problems)
            parts.append(f"{field}: {problems}")
        return f"{message} " + "; ".join(parts)
    return message


def with_detail(body):
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and "detail" not in body:
        return {"detail": detail_text(body["error"]), **body}
    return body


def mem0_exception_handler(exc, context):
    response = exception_handler(exc, context)
    if response is not None:
        response.data = with_detail(response.data)
    return response


@extend_schema(exclude=True)  # mem0's dialect, not our contract: kept out of the OpenAPI document
class Mem0View(ApiView):
    authentication_classes = (TokenKeyAuthentication,)

    def get_exception_handler(self):
        return mem0_exception_handler

    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        # ApiView answers a few failures itself (503, 413, 500) as plain JSON responses.
        if response.status_code >= 400 and not isinstance(response, Response):
            try:
                body = json.loads(response.content)
            except ValueError:
                return response
            if isinstance(body, dict) and "detail" not in body:
                response.content = json.dumps(with_detail(body)).encode()
        return response

    @staticmethod
    def bound(request) -> str:
        return request.api_key.subject_ref or ""
