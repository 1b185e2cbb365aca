import json

from django.http import HttpResponse
from django.utils import timezone

from api.views.base import ApiView
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema

from api.schemas import errors
from memoryapp.errors import NotFound
from memoryapp.models import ExportFile
from memoryapp.selectors.memories import parse_public_id
from memoryapp.services.reads import read_audit_record


def export_file_get(*, tenant, export_id: str, subject_ref: str = "") -> ExportFile:
    """The tenant's unexpired export; missing, expired, foreign (and, for a bound key, another
    subject's) all answer the same 404."""
    pk = parse_public_id(export_id, "exp")
    files = ExportFile.objects.filter(tenant=tenant, pk=pk, expires_at__gt=timezone.now()) if pk else None
    if files is not None and subject_ref:
        files = files.filter(subject_ref=subject_ref)
    export = files.first() if files is not None else None
    if export is None:
        raise NotFound("export")
    return export


class ExportDownloadView(ApiView):
    @extend_schema(operation_id="export_download",
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="The export document."),
                              **errors(404)})
    def get(self, request, export_id):
        export = export_file_get(tenant=request.tenant, export_id=export_id, subject_ref=request.api_key.subject_ref)
        content = bytes(export.content)
        try:
            memory_ids = [m["id"] for m in json.loads(content).get("memories", []) if isinstance(m, dict)]
        except (ValueError, AttributeError):
            memory_ids = []
        read_audit_record(
            tenant=request.tenant, actor=self.actor(request), subject_ref=export.subject_ref, operation="export",
            memory_ids=[u for u in (parse_public_id(str(i), "mem") for i in memory_ids) if u],
        )
        response = HttpResponse(content, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{export.public_id}.json"'
        return response
