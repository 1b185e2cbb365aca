"""Reading a stored export. Row-level security already hides other tenants' files; the explicit
tenant filter and the expiry check make a foreign, missing, expired or malformed id the same 404.

A file is served only while the person it was made from is still there and nothing in it is
being erased: an erasure or a forget withdraws the subject's files the moment it is requested
(`withdrawn_at`), long before the job that deletes them runs; and a file made from an earlier
holder of a reused subject id belongs to nobody now."""
from django.db.models import QuerySet
from django.utils import timezone

from memoryapp.errors import NotFound
from memoryapp.models import ExportFile, Subject, Tenant
from memoryapp.selectors.memories import parse_public_id
from memoryapp.tenancy import tenant_activate


def servable_exports(*, tenant: Tenant) -> QuerySet[ExportFile]:
    """Export files that may be downloaded now. Call inside the tenant's transaction."""
    live_subjects = Subject.objects.filter(tenant=tenant, status=Subject.Status.ACTIVE)
    return ExportFile.objects.filter(
        tenant=tenant, expires_at__gt=timezone.now(), withdrawn_at__isnull=True,
        subject_row_id__in=live_subjects.values("pk"),
    )


def export_file_get(*, tenant: Tenant, export_id: str) -> ExportFile:
    tenant_activate(tenant=tenant)
    pk = parse_public_id(export_id, "exp")
    export = servable_exports(tenant=tenant).filter(pk=pk).first() if pk is not None else None
    if export is None:
        raise NotFound("export")
    return export
