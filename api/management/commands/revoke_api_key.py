"""Revoke an API key by its prefix (the part after `mk_`) or its id."""
import uuid

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError
from memoryapp.models import Tenant
from memoryapp.services.tenants import api_key_revoke
from memoryapp.tenancy import tenant_activate


def _find(prefix: str | None, key_id: str | None):
    """(tenant_id, key id) of the key. The key table is row-level secured and we do not know the
    tenant yet: a prefix goes through the SECURITY DEFINER lookup; an id is looked for tenant by
    tenant."""
    from memoryapp.models import ApiKey

    if prefix:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, tenant_id FROM memory_api_key_lookup(%s)", [prefix])
            row = cursor.fetchone()
        return (row[1], row[0]) if row else None
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with transaction.atomic():
            tenant_activate(tenant=tenant_id)
            if ApiKey.objects.filter(tenant_id=tenant_id, id=key_id).exists():
                return tenant_id, key_id
    return None


class Command(BaseCommand):
    help = "Revoke an API key."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--prefix", help="the key's prefix: mk_<prefix>_...")
        group.add_argument("--id", dest="key_id", help="the key's id")

    def handle(self, *args, prefix, key_id, **options):
        if prefix and prefix.startswith("mk_"):
            prefix = prefix.split("_")[1]
        if key_id:
            try:
                key_id = str(uuid.UUID(key_id))
            except ValueError:
                raise CommandError("--id is not a key id") from None
        found = _find(prefix, key_id)
        if found is None:
            raise CommandError("No such API key.")
        tenant_id, found_id = found
        try:
            api_key = api_key_revoke(tenant=Tenant.objects.get(pk=tenant_id), api_key_id=found_id,
                                     actor=Actor("system", "revoke_api_key"))
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Revoked key {api_key.prefix} (revoked at {api_key.revoked_at.isoformat()}).")
