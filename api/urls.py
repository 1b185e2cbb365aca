from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

import api.schemas  # noqa: F401  (registers the bearer-key security scheme)

from api.views import events, exports, governance, health, jobs, keys, mcp, memories, search, subjects
from api.views.fallback import api_not_found

S = "api/v1/subjects/<str:subject>"
M = f"{S}/memories/<str:memory_id>"

urlpatterns = [
    path("api/v1/health", health.HealthView.as_view(), name="health"),
    path("api/v1/key", keys.ApiKeyView.as_view(), name="api-key"),
    path(f"{S}/events", events.EventsView.as_view(), name="events"),
    path("api/v1/jobs/<str:job_id>", jobs.JobView.as_view(), name="job"),
    path(f"{S}/memories", memories.MemoriesView.as_view(), name="memories"),
    path(M, memories.MemoryView.as_view(), name="memory"),
    path(f"{M}/history", memories.MemoryHistoryView.as_view(), name="memory-history"),
    # extensions, issue 15 (write path): the person confirms or rejects inferences, settles conflicts
    path(f"{M}/confirm", governance.MemoryConfirmView.as_view(), name="memory-confirm"),
    path(f"{M}/reject", governance.MemoryRejectView.as_view(), name="memory-reject"),
    path(f"{S}/conflicts", governance.ConflictsView.as_view(), name="conflicts"),
    path(f"{S}/conflicts/<str:conflict_id>/resolve", governance.ConflictResolveView.as_view(),
         name="conflict-resolve"),
    path(f"{S}/namespaces", memories.NamespacesView.as_view(), name="namespaces"),  # extension
    path(f"{S}/search", search.SearchView.as_view(), name="search"),
    path(f"{S}/context", search.ContextView.as_view(), name="context"),
    path(f"{S}/profile", search.ProfileView.as_view(), name="profile"),  # extension
    path(S, subjects.SubjectView.as_view(), name="subject"),
    path(f"{S}/exports", subjects.ExportRequestView.as_view(), name="export-request"),
    path(f"{S}/console-link", subjects.ConsoleLinkView.as_view(), name="console-link"),
    path("api/v1/exports/<str:export_id>", exports.ExportDownloadView.as_view(), name="export"),
    path("metrics", health.metrics_view, name="metrics"),
    # MCP over streamable HTTP (api/views/mcp.py); with and without the slash, since an MCP
    # client POSTs to exactly the URL it was given and a redirect would lose the body.
    path("mcp/", mcp.McpView.as_view(), name="mcp"),
    path("mcp", mcp.McpView.as_view()),
    path("api/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[],
                                                     permission_classes=[]), name="docs"),
    # Anything else under /api/ is a JSON 404, never Django's HTML page.
    re_path(r"^api/", api_not_found),
]
