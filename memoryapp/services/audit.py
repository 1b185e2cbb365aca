"""The tamper-evident audit log: one hash chain per tenant.

Appending and sealing are two steps:

- The transaction that makes a change inserts its entries (unsealed: no `seq`, no hash), so a
  change never commits without its entry, and no write transaction ever waits for the chain:
  the tenant-wide chain lock used to sit inside every write transaction, where it deadlocked
  with the subject and memory row locks those transactions take.
- Right after that commit, `audit_seal` chains every unsealed entry of the tenant in id order
  under the chain head's row lock, in a short transaction of its own that takes no other lock.
  The beat seals whatever a crash left unsealed (`audit_seal_all`).

Each sealed entry's hash covers the previous entry's hash and every column that means something
(HASHERS), with a digest of the payload (`before`/`after`) instead of the payload. Erasure may
blank a payload: `audit_redact` does, and appends an `audit_redacted` entry naming the entries it
blanked, so the verification can tell an erasure from an edit. A database trigger (migration
0006) keeps sealed columns and payloads from being rewritten by the application's role.
"""
import bisect
import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.models import AuditChain, AuditEntry, Subject, Tenant
from memoryapp.sqlarrays import uuid_array
from memoryapp.tenancy import tenant_activate

logger = logging.getLogger(__name__)

GENESIS_HASH = "0" * 64
HASH_VERSION = 2
REDACTED_ACTION = "audit_redacted"
# Entries sealed per statement; a larger backlog is sealed in several.
SEAL_BATCH = 2000


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _normalise(value):
    """What JSONB will give back, so the stored payload hashes exactly as it was hashed."""
    return None if value is None else json.loads(canonical_json(value))


def payload_digest(before, after) -> str:
    return hashlib.sha256(canonical_json({"before": before, "after": after}).encode()).hexdigest()


BLANK_PAYLOAD_DIGEST = payload_digest(None, None)


def _hash_v1(entry: AuditEntry, prev_hash: str) -> str:
    """Entries written before version 2: no entry id, no subject row."""
    parts = [
        prev_hash, str(entry.tenant_id), str(entry.seq), entry.created_at.isoformat(), entry.actor_kind,
        entry.actor_id, entry.action, entry.subject_ref, entry.memory_id.hex if entry.memory_id else "",
        entry.target, canonical_json(entry.details), entry.payload_digest,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _hash_v2(entry: AuditEntry, prev_hash: str) -> str:
    """Every column that means something: the entry's own id (redactions name entries by it)
    and the subject row it is about included. `redacted_at` is left out on purpose: a redaction
    is proven by its own chained entry, not by a column anyone can set."""
    parts = [
        prev_hash, "v2", str(entry.id), str(entry.tenant_id), str(entry.seq), entry.created_at.isoformat(),
        entry.actor_kind, entry.actor_id, entry.action, entry.subject_ref,
        "" if entry.subject_row_id is None else str(entry.subject_row_id),
        entry.memory_id.hex if entry.memory_id else "", entry.target, canonical_json(entry.details),
        entry.payload_digest,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


HASHERS = {1: _hash_v1, 2: _hash_v2}


def entry_hash(entry: AuditEntry, prev_hash: str) -> str:
    hasher = HASHERS.get(entry.hash_version)
    return hasher(entry, prev_hash) if hasher else ""


def audit_chain_init(*, tenant: Tenant) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memoryapp_auditchain (tenant_id, seq, head_hash) VALUES (%s, 0, %s) "
            "ON CONFLICT (tenant_id) DO NOTHING",
            [tenant.pk if isinstance(tenant, Tenant) else int(tenant), GENESIS_HASH],
        )


def subject_row_for(*, tenant: Tenant, subject_ref: str) -> int | None:
    """The Subject row an entry about `subject_ref` belongs to: the one that exists now, in any
    status (an erasure's own entries belong to the person being erased)."""
    if not subject_ref:
        return None
    return Subject.objects.filter(tenant=tenant, external_id=subject_ref).values_list("pk", flat=True).first()


_UNSET = object()


def _entry(*, tenant: Tenant, actor: Actor, action: str, subject_ref: str, subject_row_id, memory_id,
           target: str, before, after, details: dict | None) -> AuditEntry:
    """An unsealed entry (no seq, no hash yet)."""
    before, after = _normalise(before), _normalise(after)
    if subject_row_id is _UNSET:
        subject_row_id = subject_row_for(tenant=tenant, subject_ref=subject_ref)
    return AuditEntry(
        tenant=tenant,
        actor_kind=actor.kind,
        actor_id=actor.id,
        action=action,
        subject_ref=subject_ref,
        subject_row_id=subject_row_id,
        memory_id=memory_id,
        target=target,
        before=before,
        after=after,
        details=_normalise(details or {}),
        payload_digest=payload_digest(before, after),
        hash_version=HASH_VERSION,
        created_at=timezone.now(),
    )


def _seal_after_commit(tenant_id: int) -> None:
    """Seal the tenant's chain once this transaction commits (once per transaction and tenant;
    a rolled-back transaction drops the callback, and its entries with it)."""
    for _, callback, _ in connection.run_on_commit:
        if getattr(callback, "audit_tenant_id", None) == tenant_id:
            return

    def seal():
        try:
            audit_seal(tenant=tenant_id)
        except Exception:  # the beat seals what is left; the change itself has committed
            logger.warning("could not seal the audit chain of tenant %s now", tenant_id, exc_info=True)

    seal.audit_tenant_id = tenant_id
    transaction.on_commit(seal)


def _append(*, tenant: Tenant, entries: list[AuditEntry]) -> list[AuditEntry]:
    """Store `entries` unsealed, in order, and have them sealed after commit. Takes no lock.
    Call inside the tenant's transaction."""
    if not entries:
        return entries
    if len(entries) == 1:
        entries[0].save()
    else:
        AuditEntry.objects.bulk_create(entries)
    _seal_after_commit(tenant.pk)
    return entries


# Inside the caller's transaction without a savepoint of its own (two round trips on every
# audited write): nothing it raises is a domain error a caller could catch and go on from.
@transaction.atomic(savepoint=False)
def audit_record(
    *,
    tenant: Tenant,
    actor: Actor,
    action: str,
    subject_ref: str = "",
    subject_row_id=_UNSET,
    memory_id=None,
    target: str = "",
    before=None,
    after=None,
    details: dict | None = None,
) -> AuditEntry:
    """Append one entry to the tenant's log (sealed into the chain after commit).
    `subject_row_id` defaults to the subject that has `subject_ref` now."""
    tenant_activate(tenant=tenant)
    entry = _entry(tenant=tenant, actor=actor, action=action, subject_ref=subject_ref,
                   subject_row_id=subject_row_id, memory_id=memory_id, target=target, before=before,
                   after=after, details=details)
    return _append(tenant=tenant, entries=[entry])[0]


class AuditBuffer:
    """Entries recorded during one transaction and inserted in one go by flush(), in the order
    record() was called. `record` takes audit_record()'s arguments, so a service can be handed
    either. Whoever creates the buffer must flush() it before its transaction commits, or the
    entries are lost."""

    def __init__(self, *, tenant: Tenant):
        self.tenant = tenant
        self.entries: list[AuditEntry] = []
        self._subject_rows: dict[str, int | None] = {}

    def record(self, *, tenant: Tenant, actor: Actor, action: str, subject_ref: str = "", subject_row_id=_UNSET,
               memory_id=None, target: str = "", before=None, after=None, details: dict | None = None) -> AuditEntry:
        if tenant.pk != self.tenant.pk:
            raise ValueError("an audit buffer holds one tenant's entries")
        if subject_row_id is _UNSET:
            if subject_ref not in self._subject_rows:
                self._subject_rows[subject_ref] = subject_row_for(tenant=tenant, subject_ref=subject_ref)
            subject_row_id = self._subject_rows[subject_ref]
        entry = _entry(tenant=tenant, actor=actor, action=action, subject_ref=subject_ref,
                       subject_row_id=subject_row_id, memory_id=memory_id, target=target, before=before,
                       after=after, details=details)
        self.entries.append(entry)
        return entry

    def flush(self) -> list[AuditEntry]:
        entries, self.entries = self.entries, []
        return _append(tenant=self.tenant, entries=entries)


def _seal_batch(*, tenant_id: int, chain: AuditChain, entries: list[AuditEntry]) -> None:
    rows = []
    for entry in entries:
        chain.seq += 1
        entry.seq = chain.seq
        entry.prev_hash = chain.head_hash
        entry.entry_hash = entry_hash(entry, chain.head_hash)
        chain.head_hash = entry.entry_hash
        rows.append((entry.pk, entry.seq, entry.prev_hash, entry.entry_hash))
    values = ", ".join(["(%s::bigint, %s::bigint, %s::varchar, %s::varchar)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE memoryapp_auditentry AS a SET seq = v.seq, prev_hash = v.prev_hash, entry_hash = v.entry_hash "
            f"FROM (VALUES {values}) AS v (id, seq, prev_hash, entry_hash) "
            "WHERE a.id = v.id AND a.tenant_id = %s AND a.seq IS NULL",
            [x for row in rows for x in row] + [tenant_id],
        )
        if cursor.rowcount != len(rows):
            # Someone else sealed one meanwhile, which the chain lock rules out: refuse to
            # leave a chain whose head disagrees with its entries.
            raise RuntimeError("audit entries changed while being sealed")


@transaction.atomic
def audit_seal(*, tenant: Tenant | int) -> int:
    """Chain every unsealed entry of the tenant, oldest id first. Holds the chain head's row
    lock and nothing else until commit. Returns how many entries it sealed."""
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else int(tenant)
    tenant_activate(tenant=tenant_id)
    # The head exists from the tenant's first entry on: create it only when it is missing (one
    # round trip less on every write's seal).
    chain = AuditChain.objects.select_for_update().filter(tenant_id=tenant_id).first()
    if chain is None:
        audit_chain_init(tenant=tenant_id)
        chain = AuditChain.objects.select_for_update().get(tenant_id=tenant_id)
    sealed = 0
    while True:
        entries = list(AuditEntry.objects.filter(tenant_id=tenant_id, seq__isnull=True).order_by("id")[:SEAL_BATCH])
        if entries:
            _seal_batch(tenant_id=tenant_id, chain=chain, entries=entries)
            sealed += len(entries)
        # A short batch was the last: entries committed meanwhile are chained by their writers'
        # own seals, which wait for this lock (or by the beat's): one round trip less a write.
        if len(entries) < SEAL_BATCH:
            break
    if sealed:
        chain.save(update_fields=["seq", "head_hash"])
    return sealed


def audit_seal_all() -> int:
    """Seal every tenant's leftovers (beat): entries whose after-commit seal never ran."""
    sealed = 0
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        try:
            sealed += audit_seal(tenant=tenant_id)
        except Exception:  # one tenant's trouble must not stop the others
            logger.exception("sealing the audit chain of tenant %s failed", tenant_id)
    return sealed


def id_ranges(ids) -> list[list[int]]:
    """Sorted ids as [first, last] runs: a subject's entries are mostly consecutive."""
    ranges: list[list[int]] = []
    for value in sorted(set(int(i) for i in ids)):
        if ranges and value == ranges[-1][1] + 1:
            ranges[-1][1] = value
        else:
            ranges.append([value, value])
    return ranges


@dataclass
class AuditVerification:
    ok: bool
    checked: int
    problems: list[str] = field(default_factory=list)
    redacted: int = 0
    legacy: int = 0


# An entry still unsealed this long after it was written means its seal never ran (the process
# died after commit and the beat is not sealing either): worth an operator's look.
UNSEALED_ALARM = timedelta(minutes=5)


def audit_verify(*, tenant: Tenant, seal: bool = True) -> AuditVerification:
    """Seal what is pending, then walk the tenant's chain up to its head as read at the start.
    Inside a longer transaction the seal holds the chain lock until that transaction ends (every
    writer's own seal waits meanwhile): a page that verifies on each load passes seal=False. Finds an edited entry (hash or payload mismatch), a removed one (a gap in the
    sequence or a broken link), a truncated tail (head mismatch), a payload blanked without a
    chained redaction entry naming it, a redacted payload put back, and entries left unsealed."""
    if seal:
        audit_seal(tenant=tenant)
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        return _verify(tenant=tenant)


def _merged(runs: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted, disjoint [first, last] runs as two parallel lists, for bisecting."""
    firsts: list[int] = []
    lasts: list[int] = []
    for first, last in sorted(runs):
        if lasts and first <= lasts[-1] + 1:
            lasts[-1] = max(lasts[-1], last)
        else:
            firsts.append(first)
            lasts.append(last)
    return firsts, lasts


def _covers(merged: tuple[list[int], list[int]], value: int) -> bool:
    firsts, lasts = merged
    index = bisect.bisect_right(firsts, value) - 1
    return index >= 0 and lasts[index] >= value


class RedactionRanges:
    """The entry ids that audit_redacted entries name, per the person (Subject row) each redaction
    is about, tested for membership without expanding the runs (a forged run of 10**12 ids must
    not exhaust memory)."""

    def __init__(self, redactions):
        by_row: dict = {}
        for entry in redactions:
            for run in (entry.details or {}).get("entry_ranges") or []:
                try:
                    first, last = int(run[0]), int(run[1])
                except (TypeError, ValueError, IndexError):
                    continue
                if first <= last:
                    by_row.setdefault(entry.subject_row_id, []).append((first, last))
        self._by_row = {row: _merged(runs) for row, runs in by_row.items()}
        self._any = _merged([run for runs in by_row.values() for run in runs])
        self.count = sum(last - first + 1 for first, last in zip(*self._any))

    def names(self, entry_id: int) -> bool:
        return _covers(self._any, entry_id)

    def names_for(self, entry_id: int, subject_row_id) -> bool:
        """Named by a redaction about the same person (or one that names no person: the
        migration's record of legacy redactions; or an entry about no person)."""
        if subject_row_id is None:
            return self.names(entry_id)
        return any(row in self._by_row and _covers(self._by_row[row], entry_id) for row in (None, subject_row_id))


def _verify(*, tenant: Tenant) -> AuditVerification:
    chain = AuditChain.objects.filter(tenant=tenant).first()
    head_seq = chain.seq if chain is not None else 0
    problems: list[str] = []
    prev_hash = GENESIS_HASH
    expected_seq = 1
    checked = legacy = 0
    # Every redaction counts, also one sealed after the head was read or not sealed yet: an
    # erasure's blanking and its redaction entry commit together, the seal comes after.
    redactions = RedactionRanges(AuditEntry.objects.filter(tenant=tenant, action=REDACTED_ACTION).only(
        "id", "details", "subject_row_id").iterator(chunk_size=2000))
    altered: list[AuditEntry] = []  # entries whose payload no longer matches its digest
    # Entries sealed after the head was read are left for the next check.
    entries = AuditEntry.objects.filter(tenant=tenant, seq__isnull=False, seq__lte=head_seq).order_by("seq")
    for entry in entries.iterator(chunk_size=2000):
        checked += 1
        legacy += entry.hash_version == 1
        if entry.seq != expected_seq:
            problems.append(f"entry {expected_seq} is missing (next is {entry.seq})")
        if entry.prev_hash != prev_hash:
            problems.append(f"entry {entry.seq} does not link to the entry before it")
        if entry.hash_version not in HASHERS:
            problems.append(f"entry {entry.seq} claims an unknown hash version {entry.hash_version}")
        elif entry_hash(entry, entry.prev_hash) != entry.entry_hash:
            problems.append(f"entry {entry.seq} was altered")
        if (entry.before is not None or entry.after is not None) and redactions.names(entry.pk):
            problems.append(f"entry {entry.seq} was redacted but holds a payload again")
        elif payload_digest(entry.before, entry.after) != entry.payload_digest:
            altered.append(entry)
        prev_hash = entry.entry_hash
        expected_seq = entry.seq + 1
    for entry in altered:
        # A blank payload is an erasure only when a redaction entry about the same person names it.
        blank = entry.before is None and entry.after is None
        if not (blank and redactions.names_for(entry.pk, entry.subject_row_id)):
            problems.append(f"entry {entry.seq} payload was altered")
    if chain is not None and (chain.seq != expected_seq - 1 or chain.head_hash != prev_hash):
        problems.append(f"the chain ends at entry {expected_seq - 1} but its head says {chain.seq}")
    # Entries sealed past the head as it is now: the head was moved back over them.
    head_now = AuditChain.objects.filter(tenant=tenant).values_list("seq", flat=True).first() or 0
    beyond = AuditEntry.objects.filter(tenant=tenant, seq__gt=head_now).count()
    if beyond:
        problems.append(f"{beyond} sealed entries lie beyond the chain's head (entry {head_now})")
    unsealed = AuditEntry.objects.filter(tenant=tenant, seq__isnull=True,
                                         created_at__lt=timezone.now() - UNSEALED_ALARM).count()
    if unsealed:
        problems.append(f"{unsealed} entries were never sealed into the chain")
    return AuditVerification(ok=not problems, checked=checked, problems=problems,
                             redacted=redactions.count, legacy=legacy)


@transaction.atomic
def audit_redact(*, tenant: Tenant, actor: Actor, reason: str, subject_row_id: int | None = None,
                 memory_ids=None, subject_ref: str = "", target: str = "") -> int:
    """Blank the payloads that carry erased content (entries about the subject row, or about
    these memories), and record which entries were blanked in an `audit_redacted` entry of its
    own, chained like any other. Returns how many payloads were blanked."""
    tenant_activate(tenant=tenant)
    if subject_row_id is None and memory_ids is None:
        raise ValueError("redact by subject row or by memory ids")
    entries = AuditEntry.objects.filter(tenant=tenant).exclude(before__isnull=True, after__isnull=True)
    if subject_row_id is not None:
        entries = entries.filter(subject_row_id=subject_row_id)
    if memory_ids is not None:
        # One array parameter, not a parameter per id (memoryapp/sqlarrays.py).
        entries = entries.filter(RawSQL("memory_id = ANY(%s::uuid[])", [uuid_array(memory_ids)],
                                        output_field=BooleanField()))
    ids = list(entries.values_list("pk", flat=True))
    if not ids:
        return 0
    AuditEntry.objects.filter(tenant=tenant, pk__in=ids).update(before=None, after=None, redacted_at=timezone.now())
    audit_record(
        tenant=tenant, actor=actor, action=REDACTED_ACTION, subject_ref=subject_ref,
        subject_row_id=subject_row_id, target=target,
        details={"reason": reason, "count": len(ids), "entry_ranges": id_ranges(ids)},
    )
    return len(ids)
