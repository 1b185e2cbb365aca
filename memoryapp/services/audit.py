"""The tamper-evident audit log: one hash chain per tenant.

Each entry's hash covers the previous entry's hash, its own position and metadata, and a
digest of its payload (`before`/`after`). Erasure may blank a payload; the digest stays, so
the chain still verifies while the erased content is gone.
"""
import hashlib
import json
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.models import AuditChain, AuditEntry, Tenant
from memoryapp.tenancy import tenant_activate

GENESIS_HASH = "0" * 64


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _normalise(value):
    """What JSONB will give back, so the stored payload hashes exactly as it was hashed."""
    return None if value is None else json.loads(canonical_json(value))


def payload_digest(before, after) -> str:
    return hashlib.sha256(canonical_json({"before": before, "after": after}).encode()).hexdigest()


def entry_hash(entry: AuditEntry, prev_hash: str) -> str:
    parts = [
        prev_hash,
        str(entry.tenant_id),
        str(entry.seq),
        entry.created_at.isoformat(),
        entry.actor_kind,
        entry.actor_id,
        entry.action,
        entry.subject_ref,
        entry.memory_id.hex if entry.memory_id else "",
        entry.target,
        canonical_json(entry.details),
        entry.payload_digest,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def audit_chain_init(*, tenant: Tenant) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memoryapp_auditchain (tenant_id, seq, head_hash) VALUES (%s, 0, %s) "
            "ON CONFLICT (tenant_id) DO NOTHING",
            [tenant.pk, GENESIS_HASH],
        )


def _entry(*, tenant: Tenant, actor: Actor, action: str, subject_ref: str, memory_id, target: str,
           before, after, details: dict | None) -> AuditEntry:
    """An entry with everything but its place in the chain (seq, prev_hash, entry_hash)."""
    before, after = _normalise(before), _normalise(after)
    return AuditEntry(
        tenant=tenant,
        actor_kind=actor.kind,
        actor_id=actor.id,
        action=action,
        subject_ref=subject_ref,
        memory_id=memory_id,
        target=target,
        before=before,
        after=after,
        details=_normalise(details or {}),
        payload_digest=payload_digest(before, after),
        created_at=timezone.now(),
    )


def _append(*, tenant: Tenant, entries: list[AuditEntry]) -> list[AuditEntry]:
    """Chain `entries`, in order, onto the tenant's head and store them. Takes the chain head's
    row lock until commit, which orders the tenant's appends. Call inside the tenant's
    transaction."""
    if not entries:
        return entries
    audit_chain_init(tenant=tenant)
    chain = AuditChain.objects.select_for_update().get(tenant=tenant)
    for entry in entries:
        chain.seq += 1
        entry.seq = chain.seq
        entry.prev_hash = chain.head_hash
        entry.entry_hash = entry_hash(entry, chain.head_hash)
        chain.head_hash = entry.entry_hash
    if len(entries) == 1:
        entries[0].save()
    else:
        AuditEntry.objects.bulk_create(entries)
    chain.save(update_fields=["seq", "head_hash"])
    return entries


@transaction.atomic
def audit_record(
    *,
    tenant: Tenant,
    actor: Actor,
    action: str,
    subject_ref: str = "",
    memory_id=None,
    target: str = "",
    before=None,
    after=None,
    details: dict | None = None,
) -> AuditEntry:
    """Append one entry to the tenant's chain. Takes the chain head's row lock until commit,
    which orders the tenant's appends; keep slow work (embedding) out of the same transaction."""
    tenant_activate(tenant=tenant)
    entry = _entry(tenant=tenant, actor=actor, action=action, subject_ref=subject_ref, memory_id=memory_id,
                   target=target, before=before, after=after, details=details)
    return _append(tenant=tenant, entries=[entry])[0]


class AuditBuffer:
    """Entries recorded during one transaction and appended in one go by flush(): one chain
    lock, one insert, one head update, instead of one of each per entry. The chain is the same
    as if each had been recorded with audit_record() in the order record() was called.

    `record` takes audit_record()'s arguments, so a service can be handed either. Whoever
    creates the buffer must flush() it before its transaction commits, or the entries are lost.
    """

    def __init__(self, *, tenant: Tenant):
        self.tenant = tenant
        self.entries: list[AuditEntry] = []

    def record(self, *, tenant: Tenant, actor: Actor, action: str, subject_ref: str = "", memory_id=None,
               target: str = "", before=None, after=None, details: dict | None = None) -> AuditEntry:
        if tenant.pk != self.tenant.pk:
            raise ValueError("an audit buffer holds one tenant's entries")
        entry = _entry(tenant=tenant, actor=actor, action=action, subject_ref=subject_ref, memory_id=memory_id,
                       target=target, before=before, after=after, details=details)
        self.entries.append(entry)
        return entry

    def flush(self) -> list[AuditEntry]:
        entries, self.entries = self.entries, []
        return _append(tenant=self.tenant, entries=entries)


@dataclass
class AuditVerification:
    ok: bool
    checked: int
    problems: list[str] = field(default_factory=list)


@transaction.atomic
def audit_verify(*, tenant: Tenant) -> AuditVerification:
    """Walk the tenant's chain: finds an edited entry (hash or payload mismatch), a removed one
    (a gap in the sequence or a broken link) and a truncated tail (head mismatch)."""
    tenant_activate(tenant=tenant)
    problems: list[str] = []
    prev_hash = GENESIS_HASH
    expected_seq = 1
    checked = 0
    for entry in AuditEntry.objects.filter(tenant=tenant).order_by("seq").iterator(chunk_size=2000):
        checked += 1
        if entry.seq != expected_seq:
            problems.append(f"entry {expected_seq} is missing (next is {entry.seq})")
        if entry.prev_hash != prev_hash:
            problems.append(f"entry {entry.seq} does not link to the entry before it")
        if entry_hash(entry, entry.prev_hash) != entry.entry_hash:
            problems.append(f"entry {entry.seq} was altered")
        if entry.redacted_at is None and payload_digest(entry.before, entry.after) != entry.payload_digest:
            problems.append(f"entry {entry.seq} payload was altered")
        prev_hash = entry.entry_hash
        expected_seq = entry.seq + 1
    chain = AuditChain.objects.filter(tenant=tenant).first()
    if chain is not None and (chain.seq != expected_seq - 1 or chain.head_hash != prev_hash):
        problems.append(f"the chain ends at entry {expected_seq - 1} but its head says {chain.seq}")
    return AuditVerification(ok=not problems, checked=checked, problems=problems)


@transaction.atomic
def audit_redact(*, tenant: Tenant, subject_ref: str | None = None, memory_ids=None) -> int:
    """Blank the payloads that carry erased content; the chain keeps their digests."""
    tenant_activate(tenant=tenant)
    entries = AuditEntry.objects.filter(tenant=tenant, redacted_at__isnull=True)
    if subject_ref is not None:
        entries = entries.filter(subject_ref=subject_ref)
    if memory_ids is not None:
        entries = entries.filter(memory_id__in=list(memory_ids))
    return entries.update(before=None, after=None, redacted_at=timezone.now())
