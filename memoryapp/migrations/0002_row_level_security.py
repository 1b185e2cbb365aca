"""Tenant isolation in the database: the application role sees only the rows of the tenant set
for the current transaction (`set_config('app.tenant_id', id, true)`); with none set it sees
nothing. The two SECURITY DEFINER functions answer the only questions asked before a tenant is
known (which key is this, which sign-in link is this), one row at a time."""
from django.conf import settings
from django.db import migrations

from memoryapp.dbroles import TENANT_TABLES, ensure_app_role

CURRENT_TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"


def create_role(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        ensure_app_role(cursor)


def policies_sql():
    statements = []
    for table in TENANT_TABLES:
        statements.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        statements.append(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
        )
    return statements


def drop_policies_sql():
    statements = []
    for table in TENANT_TABLES:
        statements.append(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        statements.append(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    return statements


FUNCTIONS = """
CREATE OR REPLACE FUNCTION memory_api_key_lookup(p_prefix text)
RETURNS TABLE (id uuid, tenant_id bigint, key_hash varchar, revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT k.id, k.tenant_id, k.key_hash, k.revoked_at FROM memoryapp_apikey k WHERE k.prefix = p_prefix
$$;

CREATE OR REPLACE FUNCTION memory_signin_link_consume(p_token_hash text)
RETURNS TABLE (tenant_id bigint, subject_ref varchar)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public AS $$
    UPDATE memoryapp_signinlink l SET used_at = now()
    WHERE l.token_hash = p_token_hash AND l.used_at IS NULL AND l.expires_at > now()
    RETURNING l.tenant_id, l.subject_ref
$$;
REVOKE ALL ON FUNCTION memory_api_key_lookup(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION memory_signin_link_consume(text) FROM PUBLIC;
"""

DROP_FUNCTIONS = """
DROP FUNCTION IF EXISTS memory_api_key_lookup(text);
DROP FUNCTION IF EXISTS memory_signin_link_consume(text);
"""


class Migration(migrations.Migration):
    dependencies = [("memoryapp", "0001_initial")]

    operations = [
        migrations.RunPython(create_role, migrations.RunPython.noop),
        migrations.RunSQL(policies_sql(), drop_policies_sql()),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
    ]
