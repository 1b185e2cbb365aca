"""Binding a transaction to one tenant for PostgreSQL row-level security."""
from django.db import connections

from memoryapp.models import Tenant

_SETTING = "app.tenant_id"


def tenant_activate(*, tenant: Tenant | int, using: str = "default") -> None:
    """Make the current transaction see only `tenant`'s rows.

    Must run inside a transaction (`transaction.atomic` or ATOMIC_REQUESTS): the setting is
    transaction-local, so it can never leak to the next user of a pooled connection. Outside a
    transaction it would last one statement, and every later query would see nothing.
    """
    connection = connections[using]
    if not connection.in_atomic_block:
        raise RuntimeError("tenant_activate() needs an open transaction")
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else int(tenant)
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [_SETTING, str(tenant_id)])


def active_tenant_id(using: str = "default") -> int | None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT NULLIF(current_setting(%s, true), '')", [_SETTING])
        value = cursor.fetchone()[0]
    return int(value) if value else None
