"""mem0 Platform routes at the service root, with the trailing slashes the mem0 client sends.
Anything else under /v1/, /v2/ or /v3/ is a JSON 404 with mem0's `detail`."""
from django.db import transaction
from django.http import JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from api.mem0 import views

M = "v1/memories/<str:memory_id>/"


@csrf_exempt
@transaction.non_atomic_requests
def mem0_not_found(request, *args, **kwargs):
    return JsonResponse({"detail": "No such endpoint in this service's mem0-compatible API.",
                         "error": {"code": "not_found", "message": "No such endpoint.",
                                   "details": {"path": request.path}}}, status=404)


urlpatterns = [
    path("v1/ping/", views.PingView.as_view(), name="mem0-ping"),
    path("v3/memories/add/", views.AddView.as_view(), name="mem0-add"),
    path("v3/memories/search/", views.SearchView.as_view(), name="mem0-search"),
    path("v3/memories/", views.MemoriesView.as_view(), name="mem0-memories"),
    path("v1/memories/", views.MemoriesView.as_view(), name="mem0-memories-v1"),
    path(M, views.MemoryView.as_view(), name="mem0-memory"),
    path(f"{M}history/", views.MemoryHistoryView.as_view(), name="mem0-memory-history"),
    path("v1/entities/", views.EntitiesView.as_view(), name="mem0-entities"),
    path("v2/entities/<str:entity_type>/<str:name>/", views.EntityView.as_view(), name="mem0-entity"),
    path("v1/event/<str:event_id>/", views.EventView.as_view(), name="mem0-event"),
    re_path(r"^v[123]/", mem0_not_found),
]
