"""What a read may see beyond tenant, subject and time: sensitivity and purpose (seed 001 §6,
step 3), and which namespace's version of a keyed fact applies (seed 001 §15).

These are filters, never weights: a memory a read may not see is removed from the scope before
any ranking (retrieval.py puts `policy_sql` in its scope CTE; the profile uses `policy_q`), so no
score can bring it back.

Sensitivity is ordered public < internal < personal < special. A read names the highest level
it may see; the default, `personal`, leaves `special` (health, beliefs, ...) out unless a read
asks for it.

Purpose: a memory may be written with the purposes it may be used for (metadata "_purposes", a
list of short names; none = any purpose; reserved so that a client's own "purposes" key in
metadata written before means nothing here). A read that names a purpose sees
unrestricted memories and those that list its purpose; a read that names none sees only
unrestricted ones. Purposes are compared exactly (after trimming and lower-casing at the door),
so "billing" and "invoicing" are different purposes: a tenant picks its own vocabulary.
"""
from dataclasses import dataclass

from django.db.models import Q

from memoryapp.sqlpatterns import like_escape

SENSITIVITY_ORDER = ("public", "internal", "personal", "special")
DEFAULT_MAX_SENSITIVITY = "personal"
PURPOSES_FIELD = "_purposes"  # the metadata key a write restricts its purposes with


def sensitivities_up_to(level: str) -> list[str]:
    return list(SENSITIVITY_ORDER[: SENSITIVITY_ORDER.index(level) + 1])


@dataclass(frozen=True)
class ReadPolicy:
    purpose: str | None = None
    max_sensitivity: str = DEFAULT_MAX_SENSITIVITY
    # The person's own view in the console: they see everything about themselves.
    unrestricted: bool = False


AGENT_DEFAULT = ReadPolicy()
OWNER_VIEW = ReadPolicy(max_sensitivity="special", unrestricted=True)


def policy_sql(policy: ReadPolicy, alias: str = "m") -> tuple[str, dict]:
    """An `AND ...` clause on the memory row `alias`, and its parameters. Any "_purposes" value
    restricts: one that is not a list of names (only a write outside the API could store one)
    leaves the memory unreadable without its purpose, never open to all."""
    if policy.unrestricted:
        return "", {}
    sql = (f"AND {alias}.sensitivity = ANY(%(rp_levels)s) "
           f"AND (NOT {alias}.metadata ? '{PURPOSES_FIELD}'"
           f" OR coalesce({alias}.metadata -> '{PURPOSES_FIELD}' ? %(rp_purpose)s, false))")
    return sql, {"rp_levels": sensitivities_up_to(policy.max_sensitivity), "rp_purpose": policy.purpose}


def policy_q(policy: ReadPolicy) -> Q:
    """The same filter for the ORM (the profile, the console)."""
    if policy.unrestricted:
        return Q()
    allowed = ~Q(metadata__has_key=PURPOSES_FIELD)
    if policy.purpose:
        allowed |= (Q(metadata__contains={PURPOSES_FIELD: [policy.purpose]})
                    | Q(metadata__contains={PURPOSES_FIELD: policy.purpose}))
    return Q(sensitivity__in=sensitivities_up_to(policy.max_sensitivity)) & allowed


def namespace_chain(namespace: str) -> list[str]:
    """The namespaces above work in `namespace` whose memories apply to it: itself and every
    ancestor up to the top level (""), broadest first. "capacity/finance-report" -> ["",
    "capacity", "capacity/finance-report"]."""
    parts = [p for p in namespace.strip("/").split("/") if p]
    return [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]


def below_pattern(namespace: str) -> str:
    """A LIKE pattern for the namespaces below `namespace` ("support-agent" -> "support-agent/%").
    Their memories belong to parts of the same work (an agent's "support-agent/preference"),
    so they apply too; a sibling's ("capacity/hr" for "capacity/finance-report") do not."""
    escaped = like_escape(namespace.strip("/"))
    return f"{escaped}/%" if escaped else "%"


def narrowest_sql(policy: ReadPolicy, *, known: bool = False) -> str:
    """An `AND ...` clause for the scope CTE (alias m; parameters %(ns_chain)s, %(ns_below)s and
    the scope's own): only the working namespace, its ancestors and what is below it; and for a
    keyed fact only the version in the narrowest namespace of the chain that has one in scope. A
    version below the working namespace applies only when nothing in the chain has that key
    (working in "capacity-plans", the finance report's own rule gives way to the general one).
    The inner conditions repeat the scope's (status, validity, expiry, policy), so a narrower
    version the read cannot see does not hide the general one. `known`: the read is as known at
    %(known_at)s, so a narrower version counts only if it was recorded by then, in the status and
    validity it had then (retrieval's own as-known lookup, for the inner row)."""
    inner_policy, _ = policy_sql(policy, alias="n")
    if known:
        was = ("LEFT JOIN LATERAL (SELECT c.status, c.valid_to FROM memoryapp_memorychange c"
               " WHERE c.memory_id = n.id AND c.tenant_id = n.tenant_id AND c.changed_at > %(known_at)s"
               " ORDER BY c.changed_at, c.id LIMIT 1) was_n ON true")
        status = "coalesce(was_n.status, n.status)"
        valid_to = "(CASE WHEN was_n.status IS NULL THEN n.valid_to ELSE was_n.valid_to END)"
        recorded = "AND n.recorded_at <= %(known_at)s"
    else:
        was, status, valid_to, recorded = "", "n.status", "n.valid_to", ""
    return f"""AND (m.namespace = ANY(%(ns_chain)s) OR m.namespace LIKE %(ns_below)s)
      AND (m.key = '' OR NOT EXISTS (
        SELECT 1 FROM memoryapp_memory n {was}
        WHERE n.tenant_id = m.tenant_id AND n.subject_id = m.subject_id AND n.key = m.key
          AND n.namespace = ANY(%(ns_chain)s)
          AND (m.namespace <> ALL(%(ns_chain)s) OR length(n.namespace) > length(m.namespace))
          AND NOT n.erasing AND {status} = ANY(%(statuses)s) AND n.valid_from <= %(as_of)s
          AND (%(all_versions)s OR {valid_to} IS NULL OR {valid_to} > %(as_of)s)
          AND (n.expires_at IS NULL OR n.expires_at > %(known_at)s) {recorded} {inner_policy}))"""
