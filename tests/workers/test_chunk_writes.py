"""A chunk of events written in one transaction (one prefetch, one audit append, one event
update) ends exactly where the same events processed one job, one event at a time, end."""
import numpy as np
import pytest

from memoryapp.models import AuditEntry, Event, Memory
from memoryapp.services.audit import audit_verify
from tests.conftest import as_tenant
from tests.workers.helpers import at, ingest

pytestmark = pytest.mark.django_db

STORY = [
    ("e1", "user", "I live in Lisbon.", None, at(0)),
    ("e2", "user", "I live in Lisbon.", None, at(5)),  # reinforces
    ("e3", "user", "I work at Bosch.", None, at(10)),
    ("e4", "user", "Actually, I moved to Porto last month.", None, at(60)),  # supersedes, retires e1/e2's episodes
    ("e5", "user", "My password is hunter2hunter2, keep it safe.", None, at(65)),  # redacted
    ("e6", "tool", "The user works at Siemens.", "tool", at(70)),  # another source: a conflict, not an update
    ("e7", "user", "I work at Siemens now.", None, at(80)),  # supersedes Bosch
    ("e8", "user", "I live in Porto.", None, at(90)),  # reinforces Porto
    ("e9", "user", "My favourite food is sushi.", None, at(30)),  # older than PRIOR's: history
]
PRIOR = ("p1", "user", "My favourite food is ramen.", None, at(200))


def outcome(tenant, subject):
    with as_tenant(tenant):
        memories = list(Memory.objects.filter(tenant=tenant, subject__external_id=subject)
                        .order_by("valid_from", "memory_type"))
        name = {m.pk: (m.memory_type, m.statement) for m in memories}
        rows = [
            (m.memory_type, m.statement, m.status, m.valid_from, m.valid_to, name.get(m.superseded_by_id),
             sorted(m.flags), m.evidence_count, m.key, sorted(e.event_id for e in m.evidence.all()))
            for m in memories
        ]
        trail = [
            (e.action, name.get(e.memory_id), e.before, e.after)
            for e in AuditEntry.objects.filter(tenant=tenant, subject_ref=subject).order_by("seq")
            if e.action not in ("events_appended", "events_extracted")
        ]
        events = sorted(Event.objects.filter(tenant=tenant, subject__external_id=subject)
                        .values_list("event_id", "status", "content", "redacted", "quarantined", "flags"))
    return rows, trail, events


def test_a_chunk_with_supersession_and_reinforcement_ends_like_event_by_event(tenant_a, actor):
    for subject in ("alice", "bob"):
        ingest(tenant_a, subject, actor, PRIOR)
    ingest(tenant_a, "alice", actor, *STORY)  # one job: one chunk
    for item in sorted(STORY, key=lambda item: item[4]):  # one job per event, in the order a job applies them
        ingest(tenant_a, "bob", actor, item)
    chunked, one_by_one = outcome(tenant_a, "alice"), outcome(tenant_a, "bob")
    assert chunked == one_by_one
    rows, trail, events = chunked
    actions = [action for action, *_ in trail]
    assert actions.count("memory_reinforced") == 2 and actions.count("memory_superseded") >= 2
    assert "secret_redacted" in actions and not any("hunter2" in str(t) for t in trail)
    assert {status for _, status, *_ in events} == {"processed"}
    assert ("episodic", "I live in Lisbon.", "superseded") in {r[:3] for r in rows}
    assert ("episodic", "My favourite food is sushi.", "superseded") in {r[:3] for r in rows}
    with as_tenant(tenant_a):
        assert audit_verify(tenant=tenant_a).ok


def test_stored_embeddings_are_the_embedders_float32s_exactly(tenant_a, actor):
    from memoryapp import embeddings

    ingest(tenant_a, "alice", actor, ("e1", "user", "I live in Lisbon.", None, at(0)))
    with as_tenant(tenant_a):
        stored = {m.statement: np.asarray(m.embedding, dtype=np.float32)
                  for m in Memory.objects.filter(tenant=tenant_a, subject__external_id="alice")}
    [fact] = [s for s in stored if s != "I live in Lisbon."]
    # The chunk embedded [episode, fact] in one batch; the same batch gives the same floats.
    expected = embeddings.embed_texts(["I live in Lisbon.", fact])
    assert np.array_equal(stored["I live in Lisbon."], expected[0]) and np.array_equal(stored[fact], expected[1])


def test_a_failed_embedding_hands_unwritten_events_back_at_once(tenant_a, actor, monkeypatch):
    # Chunks of 2: the first is written; embedding the second fails while the third is claimed
    # ahead. Both unwritten chunks go straight back to pending (not left claimed until the
    # sweeper's stale window), and the written one stays written.
    from memoryapp.models import Tenant
    from memoryapp.services import extraction
    from tests.workers.helpers import append

    monkeypatch.setattr(extraction, "CHUNK_SIZE", 2)
    monkeypatch.setattr(extraction, "WRITE_CHUNK_SIZE", 2)
    real_embed, calls = extraction._embed, []

    def flaky_embed(prepared):
        calls.append(len(prepared))
        if len(calls) == 2:
            raise RuntimeError("model crashed")
        return real_embed(prepared)

    monkeypatch.setattr(extraction, "_embed", flaky_embed)
    _, job = append(tenant_a, "alice", actor, *[(f"e{i}", "user", f"Note number {i}.", None, at(i)) for i in range(6)])
    with pytest.raises(RuntimeError, match="model crashed"):
        extraction.extraction_job_run(tenant=Tenant.objects.get(pk=tenant_a.pk), job=job)
    with as_tenant(tenant_a):
        status = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "status"))
        claimed = Event.objects.filter(tenant=tenant_a, claimed_at__isnull=False, status="pending").count()
    assert status == {"e0": "processed", "e1": "processed", "e2": "pending", "e3": "pending",
                      "e4": "pending", "e5": "pending"}
    assert claimed == 0


def test_a_chunk_is_embedded_once_and_written_in_short_transactions(tenant_a, actor, monkeypatch):
    # Chunks of 4 embedded, written 2 at a time, the job's last 2 events a chunk of their own:
    # 7 events embed as [4, 1, 2]. The second write transaction fails on a database error: the
    # first pair stays written, everything claimed and unwritten goes back to pending.
    from memoryapp.models import Tenant
    from memoryapp.services import extraction
    from tests.workers.helpers import append

    monkeypatch.setattr(extraction, "CHUNK_SIZE", 4)
    monkeypatch.setattr(extraction, "WRITE_CHUNK_SIZE", 2)
    real_embed, real_apply, embedded, written = extraction._embed, extraction._apply_chunk, [], []

    def counting_embed(prepared):
        embedded.append([p.event.event_id for p in prepared])
        return real_embed(prepared)

    def failing_apply(**kwargs):
        written.append([p.event.event_id for p in kwargs["prepared"]])
        if len(written) == 2:
            raise RuntimeError("connection lost")
        return real_apply(**kwargs)

    monkeypatch.setattr(extraction, "_embed", counting_embed)
    monkeypatch.setattr(extraction, "_apply_chunk", failing_apply)
    _, job = append(tenant_a, "alice", actor, *[(f"e{i}", "user", f"Note number {i}.", None, at(i)) for i in range(7)])
    with pytest.raises(RuntimeError, match="connection lost"):
        extraction.extraction_job_run(tenant=Tenant.objects.get(pk=tenant_a.pk), job=job)
    assert embedded[0] == ["e0", "e1", "e2", "e3"]
    assert written == [["e0", "e1"], ["e2", "e3"]]
    with as_tenant(tenant_a):
        status = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "status"))
        episodes = set(Memory.objects.filter(tenant=tenant_a, memory_type="episodic")
                       .values_list("source_event__event_id", flat=True))
    assert status == {"e0": "processed", "e1": "processed", **{f"e{i}": "pending" for i in range(2, 7)}}
    assert episodes == {"e0", "e1"}


def test_chunks_end_with_one_short_write():
    from memoryapp.services.extraction import CHUNK_SIZE, WRITE_CHUNK_SIZE, _chunks

    ids = list(range(2 * CHUNK_SIZE + 10))
    chunks = _chunks(ids)
    assert [len(c) for c in chunks] == [CHUNK_SIZE, CHUNK_SIZE + 10 - WRITE_CHUNK_SIZE, WRITE_CHUNK_SIZE]
    assert [i for c in chunks for i in c] == ids
    assert _chunks(ids[:WRITE_CHUNK_SIZE]) == [ids[:WRITE_CHUNK_SIZE]] and _chunks([]) == []
