"""Binding a transaction to one tenant for PostgreSQL row-level security."""
from django.db import connections

from memoryapp.models import Tenant

_SETTING = "app.tenant_id"


def _tenant_setting(tenant: Tenant | int, using: str) -> str:
    if not connections[using].in_atomic_block:
        raise RuntimeError("tenant_activate() needs an open transaction")
    return str(tenant.pk if isinstance(tenant, Tenant) else int(tenant))


def tenant_activate(*, tenant: Tenant | int, using: str = "default") -> None:
    """Make the current transaction see only `tenant`'s rows.

    Must run inside a transaction (`transaction.atomic` or ATOMIC_REQUESTS): the setting is
    transaction-local, so it can never leak to the next user of a pooled connection. Outside a
    transaction it would last one statement, and every later query would see nothing.
    """
    value = _tenant_setting(tenant, using)
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [_SETTING, value])


def tenant_activate_and_query(*, tenant: Tenant | int, sql: str, params: dict, using: str = "default") -> list:
    """`tenant_activate`, then one query (named `%(...)s` parameters); returns its rows.

    For hot read paths: both statements go to the server in one round trip. With client-side
    binding (Django's default for psycopg 3) they travel as one simple query and run in order,
    so the query already runs under the tenant; with server-side binding a prepared statement
    holds only one command, so they go one after the other.
    """
    value = _tenant_setting(tenant, using)
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.settings_dict["OPTIONS"].get("server_side_binding"):
            cursor.execute("SELECT set_config(%s, %s, true)", [_SETTING, value])
            cursor.execute(sql, params)
        else:
            cursor.execute("SELECT set_config(%(_tenant_setting)s, %(_tenant_value)s, true);\n" + sql,
                           {**params, "_tenant_setting": _SETTING, "_tenant_value": value})
            if not cursor.nextset():
                raise RuntimeError("the query after set_config() returned no result")
        return cursor.fetchall()


def active_tenant_id(using: str = "default") -> int | None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT NULLIF(current_setting(%s, true), '')", [_SETTING])
        value = cursor.fetchone()[0]
    return int(value) if value else None
