"""Reading a stored export. Row-level security already hides other tenants' files; the explicit
tenant filter and the expiry check make a foreign, missing, expired or malformed id the same 404."""
from django.utils import timezone

from memoryapp.errors import NotFound
from memoryapp.models import ExportFile, Tenant
from memoryapp.selectors.memories import parse_public_id
from memoryapp.tenancy import tenant_activate


def export_file_get(*, tenant: Tenant, export_id: str) -> ExportFile:
    tenant_activate(tenant=tenant)
    pk = parse_public_id(export_id, "exp")
    export = None
    if pk is not None:
        export = ExportFile.objects.filter(tenant=tenant, pk=pk, expires_at__gt=timezone.now()).first()
    if export is None:
        raise NotFound("export")
    return export
