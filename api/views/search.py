from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.authentication import api_key_actor
from api.metrics import SEARCH_SECONDS
from api.representations import memory_json
from api.schemas import ContextOut, ProfileOut, SearchOut, errors
from api.serializers import ContextIn, ProfileIn, SearchIn
from api.views.base import ApiView
from memoryapp.context import context_build
from memoryapp.readpolicy import ReadPolicy
from memoryapp.retrieval import memory_search
from memoryapp.services.profile import profile_get, profile_memory_ids
from memoryapp.services.reads import read_audit_record


def hit_json(hit) -> dict:
    return {**memory_json(hit.memory), "score": hit.score, "score_details": hit.details}


# Apart from the views so that the MCP tools at /mcp/ answer by the very same steps.

def read_policy(data: dict) -> ReadPolicy:
    return ReadPolicy(purpose=data.get("purpose"), max_sensitivity=data.get("max_sensitivity", "personal"))


def search_answer(request, subject: str, data: dict) -> dict:
    with SEARCH_SECONDS.time():
        hits = memory_search(
            tenant=request.tenant, subject_ref=subject, query=data["query"], k=data["k"],
            as_of=data.get("as_of"), memory_types=data.get("memory_types"), namespace=data.get("namespace"),
            include_superseded=data["include_superseded"], min_score=data.get("min_score"),
            policy=read_policy(data), working_namespace=data.get("working_namespace"), known_at=data.get("known_at"),
        )
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="search",
        memory_ids=[h.memory.pk for h in hits], query=data["query"], purpose=data.get("purpose"),
    )
    return {"results": [hit_json(h) for h in hits]}


def context_answer(request, subject: str, data: dict) -> dict:
    with SEARCH_SECONDS.time():
        built = context_build(tenant=request.tenant, subject_ref=subject, query=data["query"],
                              token_budget=data["token_budget"], policy=read_policy(data),
                              namespace=data.get("namespace"), known_at=data.get("known_at"))
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="context",
        # Every memory the response carries was read: the whole profile as well as the hits.
        memory_ids=list(dict.fromkeys([*built["profile_memory_ids"], *(h.memory.pk for h in built["memories"])])),
        query=data["query"],
        purpose=data.get("purpose"),
    )
    return {
        "context": built["context"],
        "profile": built["profile"],
        "memories": [hit_json(h) for h in built["memories"]],
        "tokens": built["tokens"],
        "token_budget": data["token_budget"],
        "nothing_relevant": built["nothing_relevant"],
    }


def profile_answer(request, subject: str, data: dict) -> dict:
    profile = profile_get(tenant=request.tenant, subject_ref=subject, policy=read_policy(data),
                          namespace=data.get("namespace"))
    read_audit_record(
        tenant=request.tenant, actor=api_key_actor(request.api_key), subject_ref=subject, operation="profile",
        memory_ids=profile_memory_ids(profile), purpose=data.get("purpose"),
    )
    return profile


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


class ProfileView(ApiView):
    @extend_schema(operation_id="profile_get", parameters=[ProfileIn], responses={200: ProfileOut, **errors(403)})
    def get(self, request, subject):
        data = self.validated(ProfileIn, request.query_params)
        return Response(profile_answer(request, subject, data))
