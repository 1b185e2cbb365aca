"""The application's database role: it owns nothing and does not bypass row-level security,
so a query that forgets its tenant filter still sees no other tenant's rows."""
from django.conf import settings
from django.db import connections

# Tables whose rows belong to one tenant; each has a row-level security policy on tenant_id.
TENANT_TABLES = [
    "memoryapp_subject",
    "memoryapp_event",
    "memoryapp_memory",
    "memoryapp_memoryevidence",
    "memoryapp_memorylineage",
    "memoryapp_job",
    "memoryapp_auditentry",
    "memoryapp_auditchain",
    "memoryapp_apikey",
    "memoryapp_readaudit",
    "memoryapp_exportfile",
    "memoryapp_idempotencyrecord",
    "memoryapp_signinlink",
]

# The audit log is append-only for the application: it may add entries, seal them into the
# chain once (the sealing columns), and blank an entry's payload when an erasure demands it, but
# never change what the hash chain covers or delete. The trigger of migration 0006 enforces
# "once" and "blank".
AUDIT_UPDATABLE_COLUMNS = ["before", "after", "redacted_at", "seq", "prev_hash", "entry_hash"]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def ensure_app_role(cursor) -> None:
    role = settings.DB_APP_USER
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
    if cursor.fetchone() is None:
        cursor.execute(f"CREATE ROLE {quote_ident(role)} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
    if settings.DB_APP_PASSWORD:
        cursor.execute(f"ALTER ROLE {quote_ident(role)} PASSWORD %s", [settings.DB_APP_PASSWORD])


def grant_app_role(sender=None, using="owner", **kwargs) -> None:
    """post_migrate: give the application role exactly the privileges it needs (idempotent)."""
    connection = connections[using]
    role = quote_ident(settings.DB_APP_USER)
    if connection.settings_dict["USER"] == settings.DB_APP_USER:
        return
    with connection.cursor() as cursor:
        ensure_app_role(cursor)
        cursor.execute(f"GRANT CONNECT ON DATABASE {quote_ident(connection.settings_dict['NAME'])} TO {role}")
        cursor.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        cursor.execute(f"REVOKE UPDATE, DELETE ON memoryapp_auditentry FROM {role}")
        columns = ", ".join(AUDIT_UPDATABLE_COLUMNS)
        cursor.execute(f"GRANT UPDATE ({columns}) ON memoryapp_auditentry TO {role}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
        cursor.execute(f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {role}")
