"""The routing table for the two lookups made before a tenant is known (issue 18, docs/scaling.md).

An API key is found by its prefix and a sign-in link by its token's hash, across tenants. Once
every unique key of a tenant table includes tenant_id (0014-0016), neither is unique on its own
any more, and on Citus a lookup without tenant_id would ask every node. So TenantRoute holds
(kind, lookup) -> tenant_id, unique across tenants, small, and a reference table on Citus; the
two SECURITY DEFINER functions of 0002 now read the tenant there first, then the credential's row
with its tenant_id (one node).

Rolling deploy: a process still on the previous release creates keys and links without a route
until it is restarted. The functions therefore fall back to the lookup without tenant_id when no
route is found (what they did before; on one PostgreSQL it is a scan of a small table); the
backfill below covers everything made before this migration, and `manage.py citus_layout` prints
it again, with the functions without fallback, for the moment a database is distributed.

Cost at 1M rows: none that grows with memories; the backfill reads the key and link tables only.
Atomic: the new table, its backfill and the functions appear together.
"""
import django.db.models.deletion
from django.db import migrations, models

from memoryapp.dbroles import grant_app_role

BACKFILL = """
INSERT INTO memoryapp_tenantroute (kind, lookup, tenant_id, created_at)
SELECT 'api_key', prefix, tenant_id, created_at FROM memoryapp_apikey
ON CONFLICT (kind, lookup) DO NOTHING;
INSERT INTO memoryapp_tenantroute (kind, lookup, tenant_id, created_at)
SELECT 'signin_link', token_hash, tenant_id, created_at FROM memoryapp_signinlink
ON CONFLICT (kind, lookup) DO NOTHING;
"""

FUNCTIONS = """
CREATE OR REPLACE FUNCTION memory_api_key_lookup(p_prefix text)
RETURNS TABLE (id uuid, tenant_id bigint, key_hash varchar, revoked_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
DECLARE
    v_tenant bigint;
BEGIN
    SELECT r.tenant_id INTO v_tenant FROM memoryapp_tenantroute r WHERE r.kind = 'api_key' AND r.lookup = p_prefix;
    IF v_tenant IS NULL THEN
        -- A key made by a process of the previous release during a rolling deploy (no route yet).
        RETURN QUERY SELECT k.id, k.tenant_id, k.key_hash, k.revoked_at FROM memoryapp_apikey k
            WHERE k.prefix = p_prefix;
        RETURN;
    END IF;
    RETURN QUERY SELECT k.id, k.tenant_id, k.key_hash, k.revoked_at FROM memoryapp_apikey k
        WHERE k.tenant_id = v_tenant AND k.prefix = p_prefix;
END $$;

CREATE OR REPLACE FUNCTION memory_signin_link_consume(p_token_hash text)
RETURNS TABLE (tenant_id bigint, subject_ref varchar)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public AS $$
DECLARE
    v_tenant bigint;
BEGIN
    SELECT r.tenant_id INTO v_tenant FROM memoryapp_tenantroute r
        WHERE r.kind = 'signin_link' AND r.lookup = p_token_hash;
    -- Without a route (a link of the previous release), the lookup across tenants, as before.
    RETURN QUERY UPDATE memoryapp_signinlink l SET used_at = now()
        WHERE (v_tenant IS NULL OR l.tenant_id = v_tenant)
          AND l.token_hash = p_token_hash AND l.used_at IS NULL AND l.expires_at > now()
        RETURNING l.tenant_id, l.subject_ref;
END $$;
REVOKE ALL ON FUNCTION memory_api_key_lookup(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION memory_signin_link_consume(text) FROM PUBLIC;
"""

# The functions as 0002 made them.
PREVIOUS_FUNCTIONS = """
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
"""


def grant(apps, schema_editor):
    grant_app_role(using=schema_editor.connection.alias)


class Migration(migrations.Migration):

    dependencies = [
        ("memoryapp", "0012_memory_clause_embeddings"),
    ]

    operations = [
        migrations.RunSQL("SET LOCAL lock_timeout = '10s'", migrations.RunSQL.noop),
        migrations.CreateModel(
            name="TenantRoute",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("api_key", "Api Key"), ("signin_link", "Signin Link")],
                                          max_length=12)),
                ("lookup", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("tenant", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memoryapp.tenant")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("kind", "lookup"), name="tenant_route_unique")],
            },
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunSQL(FUNCTIONS, PREVIOUS_FUNCTIONS),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
