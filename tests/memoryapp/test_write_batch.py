"""MemoryWriteBatch (the extraction chunk's write path) decides and records exactly what
memory_write does, draft by draft, and the buffered audit entries keep the chain verifiable."""
from datetime import datetime, timedelta, timezone as dt_timezone

import numpy as np
import pytest
from django.db import transaction

from memoryapp import embeddings
from memoryapp.errors import PolicyRejected
from memoryapp.models import AuditEntry, Memory
from memoryapp.services.audit import AuditBuffer, audit_record, audit_seal, audit_verify
from memoryapp.services.memories import MemoryDraft, MemoryWriteBatch, memory_write
from memoryapp.services.tenants import subject_get_or_create
from memoryapp.tenancy import tenant_activate
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=dt_timezone.utc)


def at(minutes):
    return T0 + timedelta(minutes=minutes)


# One subject's story in write order: a fact, the same fact again (reinforcement), a new value
# from the subject (supersession), a late older value (history), an inference that may not
# overrule the user (outranked), a secret (refused), a procedure (waits for approval), the
# current value again (reinforcement) and the first value again (a new version, not a
# reinforcement of the superseded one). The inference is outranked: stored as a claim that never
# held, and the user's fact is not flagged.
DRAFTS = [
    dict(statement="The user lives in Lisbon.", key="user:home_city", source_kind="user", valid_from=at(0)),
    dict(statement="The user lives in Lisbon.", key="user:home_city", source_kind="user", valid_from=at(5),
         confidence=0.7),
    dict(statement="The user works at Bosch.", key="user:employer", source_kind="user", valid_from=at(6)),
    dict(statement="The user lives in Porto.", key="user:home_city", source_kind="user", valid_from=at(60)),
    dict(statement="The user lives in Braga.", key="user:home_city", source_kind="user", valid_from=at(30)),
    dict(statement="The user works at Siemens.", key="user:employer", source_kind="agent_inferred",
         valid_from=at(70), confidence=0.6),
    dict(statement="My password is hunter2hunter2 and the api key is sk-abcdefghijklmnopqrstuvwx.",
         source_kind="user", valid_from=at(80)),
    dict(statement="Always answer in French.", memory_type="procedural", key="procedure:language",
         source_kind="user", valid_from=at(90)),
    dict(statement="The user lives in Porto.", key="user:home_city", source_kind="user", valid_from=at(95)),
    dict(statement="The user lives in Lisbon.", key="user:home_city", source_kind="user", valid_from=at(100)),
]


def vectors():
    return embeddings.embed_texts([d["statement"] for d in DRAFTS])


def one_by_one(tenant, subject, actor):
    outcomes = []
    for spec, vector in zip(DRAFTS, vectors()):
        try:
            result = memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(**spec), actor=actor,
                                  embedding=vector)
            outcomes.append((result.created, len(result.superseded), len(result.conflicts)))
        except PolicyRejected:
            outcomes.append("refused")
    return outcomes


def in_one_batch(tenant, subject, actor):
    outcomes = []
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        person = subject_get_or_create(tenant=tenant, external_id=subject)
        audit = AuditBuffer(tenant=tenant)
        batch = MemoryWriteBatch(tenant=tenant, record=audit.record)
        batch.lock_subjects(subject_ids=[person.pk])
        batch.prefetch(subject_ids=[person.pk], drafts=[MemoryDraft(**spec) for spec in DRAFTS])
        for spec, vector in zip(DRAFTS, vectors()):
            try:
                result = batch.write(subject=person, subject_ref=subject, draft=MemoryDraft(**spec), actor=actor,
                                     embedding=vector)
                outcomes.append((result.created, len(result.superseded), len(result.conflicts)))
            except PolicyRejected:
                outcomes.append("refused")
        audit.flush()
    return outcomes


def state(tenant, subject):
    """The subject's memories and audit trail, with ids replaced by statements."""
    with as_tenant(tenant):
        memories = list(Memory.objects.filter(tenant=tenant, subject__external_id=subject).order_by("valid_from"))
        by_id = {m.pk: m.statement for m in memories}
        by_public = {m.public_id: m.statement for m in memories}
        rows = [
            (m.statement, m.status, m.valid_from, m.valid_to, by_id.get(m.superseded_by_id), sorted(m.flags),
             m.evidence_count, m.confidence, m.key)
            for m in memories
        ]
        trail = []
        # Entries are sealed into the chain after commit; before that, id order is write order.
        for entry in AuditEntry.objects.filter(tenant=tenant, subject_ref=subject).order_by("id"):
            details = {k: ([by_public.get(x, x) for x in v] if isinstance(v, list) else by_public.get(v, v))
                       for k, v in entry.details.items()}
            trail.append((entry.action, by_id.get(entry.memory_id), details, entry.before, entry.after))
    return rows, trail


def test_a_batch_writes_the_same_memories_and_audit_entries_as_memory_write_one_by_one(tenant_a, actor):
    expected = one_by_one(tenant_a, "alice", actor)
    got = in_one_batch(tenant_a, "bob", actor)
    assert got == expected
    assert "refused" in got and (False, 0, 0) in got  # the story does refuse and reinforce
    assert state(tenant_a, "bob") == state(tenant_a, "alice")
    rows, trail = state(tenant_a, "bob")
    actions = [action for action, *_ in trail]
    assert {"memory_reinforced", "memory_superseded", "policy_refused", "memory_written"} <= set(actions)
    assert not any("hunter2" in str(t) for t in trail) and not any("hunter2" in r[0] for r in rows)
    with as_tenant(tenant_a):
        assert audit_verify(tenant=tenant_a).ok


def test_an_audit_buffer_chains_its_entries_after_those_recorded_directly(tenant_a, tenant_b, actor):
    with as_tenant(tenant_a):
        audit_record(tenant=tenant_a, actor=actor, action="first")
        buffer = AuditBuffer(tenant=tenant_a)
        for n in range(3):
            buffer.record(tenant=tenant_a, actor=actor, action=f"buffered-{n}", details={"n": n},
                          after={"vector": np.float32(0.5).item()})
        with pytest.raises(ValueError):
            buffer.record(tenant=tenant_b, actor=actor, action="elsewhere")
        assert AuditEntry.objects.filter(tenant=tenant_a).count() == 1  # nothing before flush()
        buffer.flush()
        audit_record(tenant=tenant_a, actor=actor, action="last")
        assert audit_seal(tenant=tenant_a) == 5  # (after commit, in production)
        entries = list(AuditEntry.objects.filter(tenant=tenant_a).order_by("seq"))
        assert [(e.seq, e.action) for e in entries] == [
            (1, "first"), (2, "buffered-0"), (3, "buffered-1"), (4, "buffered-2"), (5, "last")]
        assert audit_verify(tenant=tenant_a).ok
    with as_tenant(tenant_b):
        assert not AuditEntry.objects.filter(tenant=tenant_b).exists()
