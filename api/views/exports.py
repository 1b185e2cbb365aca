import json

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema

from api.schemas import errors
from api.views.base import ApiView
from memoryapp.errors import NotFound
from memoryapp.selectors.exports import export_file_get
from memoryapp.selectors.memories import parse_public_id
from memoryapp.services.reads import read_audit_record


class ExportDownloadView(ApiView):
    @extend_schema(operation_id="export_download",
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="The export document."),
                              **errors(404)})
    def get(self, request, export_id):
        export = export_file_get(tenant=request.tenant, export_id=export_id)
        bound = request.api_key.subject_ref
        if bound and export.subject_ref != bound:
            raise NotFound("export")  # a bound key gets another subject's export exactly like a missing one
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
