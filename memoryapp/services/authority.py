"""Which source a key may claim (issue 15: authority is not self-declared). Every door that takes
a source asks source_check before it writes: explicit writes, corrections, events (their source
or the one their role implies), confirmations and conflict resolutions, the mem0 door and MCP."""
from django.db import transaction

from memoryapp.actors import Actor
from memoryapp.errors import PolicyRejected
from memoryapp.models import ApiKey, Tenant
from memoryapp.policy import source_allowed
from memoryapp.services.audit import audit_record
from memoryapp.tenancy import tenant_activate


class SourceNotAllowed(PolicyRejected):
    """A PolicyRejected, so that the doors keep its audit entry when they answer it."""

    def __init__(self, *, source_kind: str, max_source: str):
        super().__init__(
            f"This key may claim at most source '{max_source}'; the write claimed '{source_kind}'.",
            {"source": source_kind, "max_source": max_source},
        )
        self.code, self.status = "source_not_allowed", 403


def source_check(*, tenant: Tenant, api_key: ApiKey, source_kind: str, subject_ref: str, actor: Actor,
                 operation: str) -> None:
    """Refuse a claim above the key's max_source. The refusal is audited in a savepoint of its own
    that the raised SourceNotAllowed does not roll back (as policy_check's): call it before the
    write's own atomic block."""
    if source_allowed(source_kind=source_kind, max_source=api_key.max_source):
        return
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        audit_record(
            tenant=tenant, actor=actor, action="source_refused", subject_ref=subject_ref,
            details={"source": source_kind, "max_source": api_key.max_source, "operation": operation},
        )
    raise SourceNotAllowed(source_kind=source_kind, max_source=api_key.max_source)
