"""How the schema lays out on Citus, derived from the models (docs/scaling.md).

- Distributed by tenant_id, all colocated: every table with a tenant_id column, except the few
  that are read before a tenant is known. A tenant's rows of every table live on one node, so
  the composite foreign keys and every query of one tenant stay on that node.
- Reference (a copy on every node): the tenants themselves, the tables that route a credential or
  a console account to its tenant (ROUTING_TABLES), and whatever those reach or are reached from
  by a foreign key among the tables that are not distributed (Django's users, groups,
  permissions, content types, admin log).
- Local to the coordinator: what no foreign key ties to the others (sessions, the console's
  login failures, django_migrations).

`manage.py citus_layout` prints the statements; tests/memoryapp/test_citus_readiness.py checks
that the database obeys what distribution needs, for exactly the tables found here.
"""
from dataclasses import dataclass

from django.apps import apps

DISTRIBUTION_COLUMN = "tenant_id"

# Tables with a tenant_id that are not distributed: each answers a question asked before any
# tenant is known, across tenants, so each is small and replicated to every node.
ROUTING_TABLES = {
    # A console user's tenant, read when they sign in (Django's users are not per tenant).
    "memoryapp_consoleaccount": "a console sign-in names a user, not a tenant",
    # An API key's tenant by its prefix, a sign-in link's by its token hash.
    "memoryapp_tenantroute": "an API key or a sign-in link is presented before its tenant is known",
}
# The table whose rows are the tenants.
TENANT_TABLE = "memoryapp_tenant"
# The distributed table the others are colocated with: the subjects, which every tenant's memory
# hangs from (it references no other distributed table, so it can go first).
COLOCATION_ANCHOR = "memoryapp_subject"

# Before distributing, once no process of a release before migration 0013 runs any more: routes
# for whatever such a process created, then the two lookups without their fallback (which looks
# for a credential in every tenant, i.e. on every node, when it has no route).
ROUTE_BACKFILL_SQL = """\
INSERT INTO memoryapp_tenantroute (kind, lookup, tenant_id, created_at)
    SELECT 'api_key', prefix, tenant_id, created_at FROM memoryapp_apikey ON CONFLICT (kind, lookup) DO NOTHING;
INSERT INTO memoryapp_tenantroute (kind, lookup, tenant_id, created_at)
    SELECT 'signin_link', token_hash, tenant_id, created_at FROM memoryapp_signinlink
    ON CONFLICT (kind, lookup) DO NOTHING;"""

ROUTED_LOOKUPS_SQL = """\
CREATE OR REPLACE FUNCTION memory_api_key_lookup(p_prefix text)
RETURNS TABLE (id uuid, tenant_id bigint, key_hash varchar, revoked_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
DECLARE v_tenant bigint;
BEGIN
    SELECT r.tenant_id INTO v_tenant FROM memoryapp_tenantroute r WHERE r.kind = 'api_key' AND r.lookup = p_prefix;
    RETURN QUERY SELECT k.id, k.tenant_id, k.key_hash, k.revoked_at FROM memoryapp_apikey k
        WHERE k.tenant_id = v_tenant AND k.prefix = p_prefix;
END $$;
CREATE OR REPLACE FUNCTION memory_signin_link_consume(p_token_hash text)
RETURNS TABLE (tenant_id bigint, subject_ref varchar)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public AS $$
DECLARE v_tenant bigint;
BEGIN
    SELECT r.tenant_id INTO v_tenant FROM memoryapp_tenantroute r
        WHERE r.kind = 'signin_link' AND r.lookup = p_token_hash;
    RETURN QUERY UPDATE memoryapp_signinlink l SET used_at = now()
        WHERE l.tenant_id = v_tenant AND l.token_hash = p_token_hash AND l.used_at IS NULL AND l.expires_at > now()
        RETURNING l.tenant_id, l.subject_ref;
END $$;"""


@dataclass(frozen=True)
class Layout:
    distributed: tuple[str, ...]  # in creation order: a table after every table it references
    reference: tuple[str, ...]  # likewise
    local: tuple[str, ...]

    @property
    def colocation_anchor(self) -> str:
        return self.distributed[0]  # layout() puts COLOCATION_ANCHOR first


def _tables_and_foreign_keys() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """{table: its columns}, {table: the tables its foreign keys reference} for every model
    table, many-to-many tables included. Foreign keys with db_constraint=False count: the
    database has the composite constraint instead (migration 0015)."""
    columns: dict[str, set[str]] = {}
    references: dict[str, set[str]] = {}
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if not meta.managed or meta.proxy:
            continue
        table = meta.db_table
        columns[table] = {f.column for f in meta.concrete_fields}
        references[table] = {
            f.related_model._meta.db_table
            for f in meta.concrete_fields
            if f.is_relation and f.related_model is not None
        }
    return columns, references


def _creation_order(tables: set[str], references: dict[str, set[str]]) -> list[str]:
    """Referenced tables first (Citus distributes a table only after the ones its foreign keys
    point to); alphabetical among equals, so the output is stable."""
    ordered: list[str] = []
    placed: set[str] = set()
    remaining = set(tables)
    while remaining:
        ready = sorted(t for t in remaining if not (references.get(t, set()) & remaining) - {t})
        if not ready:
            raise ValueError(f"foreign keys form a cycle among {sorted(remaining)}")
        ordered.extend(ready)
        placed.update(ready)
        remaining -= set(ready)
    return ordered


def layout() -> Layout:
    columns, references = _tables_and_foreign_keys()
    distributed = {
        t for t, cols in columns.items() if DISTRIBUTION_COLUMN in cols and t not in ROUTING_TABLES
    }
    # Reference: the tenants and the routing tables, then, to a fixed point, any table that is
    # not distributed and is tied by a foreign key (either way) to a reference table: a local
    # table may not be referenced by a reference table, and referencing one would make it a
    # Citus local table, a third kind not worth having here.
    reference = {TENANT_TABLE, *ROUTING_TABLES} & set(columns)
    changed = True
    while changed:
        changed = False
        for table, targets in references.items():
            if table in distributed:
                continue
            tied = table in reference and targets - reference - distributed
            if tied:
                reference |= tied
                changed = True
            if table not in reference and targets & reference:
                reference.add(table)
                changed = True
    local = set(columns) - distributed - reference
    for table in reference:
        # A reference table is on every node; a distributed row is on one: no key can span them.
        stray = references[table] & distributed
        if stray:
            raise ValueError(f"reference table {table} references distributed {sorted(stray)}")
    for table in distributed:
        # Distributed tables may reference reference tables and each other, never a local one.
        stray = references[table] - distributed - reference
        if stray:
            raise ValueError(f"{table} references {sorted(stray)}, which would stay local")
    order = _creation_order(distributed, references)
    if COLOCATION_ANCHOR in order and not references[COLOCATION_ANCHOR] & distributed:
        order = [COLOCATION_ANCHOR] + [t for t in order if t != COLOCATION_ANCHOR]
    return Layout(
        distributed=tuple(order),
        reference=tuple(_creation_order(reference, references)),
        local=tuple(sorted(local)),
    )


def distribution_sql(plan: Layout | None = None) -> list[str]:
    """The statements that distribute an existing database, in order."""
    plan = plan or layout()
    statements = [f"SELECT create_reference_table('{t}');" for t in plan.reference]
    anchor = plan.colocation_anchor
    for table in plan.distributed:
        colocate = "'none'" if table == anchor else f"'{anchor}'"
        statements.append(
            f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}', colocate_with => {colocate});"
        )
    return statements
