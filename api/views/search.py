from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.authentication import api_key_actor
from api.metrics import SEARCH_SECONDS
from api.representations import memory_json
from api.schemas import ContextOut, SearchOut, errors
from api.serializers import ContextIn, SearchIn
from api.views.base import ApiView
from memoryapp.context import context_build
from memoryapp.retrieval import memory_search
from memoryapp.services.reads import read_audit_record


def hit_json(hit) -> dict:
    return {**memory_json(hit.memory), "score": hit.score, "score_details": hit.details}


# Apart from the views so that the MCP tools at /mcp/ answer by the very same steps.

def search_answer(request, subject: str, data: dict) -> dict:
    with SEARCH_SECONDS.time():
        hits = memory_search(
            tenant=request.tenant, subject_ref=subject, query=data["query"], k=data["k"],
            as_of=data.get("as_of"), memory_types=data.get("memory_types"), namespace=data.get("namespace"),
            include_superseded=data["include_superseded"], min_score=data.get("min_score"),
            known_at=data.get("known_at"),
        )
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="search",
        memory_ids=[h.memory.pk for h in hits], query=data["query"],
    )
    return {"results": [hit_json(h) for h in hits]}


def context_answer(request, subject: str, data: dict) -> dict:
    with SEARCH_SECONDS.time():
        built = context_build(tenant=request.tenant, subject_ref=subject, query=data["query"],
                              token_budget=data["token_budget"], known_at=data.get("known_at"))
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="context",
        memory_ids=[h.memory.pk for h in built["memories"]], query=data["query"],
    )
    return {
        "context": built["context"],
        "memories": [hit_json(h) for h in built["memories"]],
        "tokens": built["tokens"],
        "token_budget": data["token_budget"],
        "nothing_relevant": built["nothing_relevant"],
    }


class SearchView(ApiView):
    @extend_schema(operation_id="memory_search", request=SearchIn, responses={200: SearchOut, **errors(403)})
    def post(self, request, subject):
        data = self.validated(SearchIn, request.data)
        return Response(search_answer(request, subject, data))


class ContextView(ApiView):
    @extend_schema(operation_id="context_build", request=ContextIn, responses={200: ContextOut, **errors(403)})
    def post(self, request, subject):
        data = self.validated(ContextIn, request.data)
        return Response(context_answer(request, subject, data))
