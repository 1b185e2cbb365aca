"""Events embedded in chunks and written a few per transaction (one prefetch, one audit append,
one event update each) end exactly where the same events processed one job, one event at a time,
end."""
import numpy as np
import pytest
from django.db import OperationalError

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
            # Unsealed until the test's transaction would commit: id order is write order.
            for e in AuditEntry.objects.filter(tenant=tenant, subject_ref=subject).order_by("id")
            if e.action not in ("events_appended", "events_extracted")
        ]
        events = sorted(Event.objects.filter(tenant=tenant, subject__external_id=subject)
                        .values_list("event_id", "status", "content", "redacted", "quarantined", "flags"))
    return rows, trail, events


@pytest.mark.parametrize("chunk_size,write_size", [(None, None), (4, 2)],
                         ids=["one chunk, one write", "chunks 3+4+2 written 2 at a time"])
def test_a_chunk_with_supersession_and_reinforcement_ends_like_event_by_event(tenant_a, actor, monkeypatch,
                                                                              chunk_size, write_size):
    # Small sizes put the supersession (e4) and the late older value (e9) in later writes and
    # chunks than what they supersede or follow: each write must see what earlier ones committed.
    from memoryapp.services import extraction

    if chunk_size:
        monkeypatch.setattr(extraction, "CHUNK_SIZE", chunk_size)
        monkeypatch.setattr(extraction, "WRITE_CHUNK_SIZE", write_size)
    for subject in ("alice", "bob"):
        ingest(tenant_a, subject, actor, PRIOR)
    ingest(tenant_a, "alice", actor, *STORY)  # one job
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
    # Chunks of 2: the first is written; the worker is told to stop while the second is embedded
    # and the third is claimed ahead. Both unwritten chunks go straight back to pending (not left
    # claimed until the sweeper's stale window), with the attempt not counted against them, and
    # the written one stays written. (A model that fails on one text fails that event alone:
    # tests/workers/test_probe_holes.py.)
    from memoryapp.models import Tenant
    from memoryapp.services import extraction
    from tests.workers.helpers import append

    monkeypatch.setattr(extraction, "CHUNK_SIZE", 2)
    monkeypatch.setattr(extraction, "WRITE_CHUNK_SIZE", 2)
    real_embed, calls = extraction._embed, []

    def flaky_embed(prepared, *rest):
        calls.append(len(prepared))
        if len(calls) == 2:
            raise SystemExit("worker stopping")
        return real_embed(prepared, *rest)

    monkeypatch.setattr(extraction, "_embed", flaky_embed)
    _, job = append(tenant_a, "alice", actor, *[(f"e{i}", "user", f"Note number {i}.", None, at(i)) for i in range(6)])
    with pytest.raises(SystemExit, match="worker stopping"):
        extraction.extraction_job_run(tenant=Tenant.objects.get(pk=tenant_a.pk), job=job)
    with as_tenant(tenant_a):
        status = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "status"))
        claimed = Event.objects.filter(tenant=tenant_a, claimed_at__isnull=False, status="pending").count()
        attempts = set(Event.objects.filter(tenant=tenant_a, status="pending").values_list("attempts", flat=True))
    assert status == {"e0": "processed", "e1": "processed", "e2": "pending", "e3": "pending",
                      "e4": "pending", "e5": "pending"}
    assert claimed == 0 and attempts == {0}


def test_a_chunk_is_embedded_once_and_written_in_short_transactions(tenant_a, actor, monkeypatch):
    # Chunks of at most 4 embedded, written 2 at a time, the job's last 2 events a chunk of their
    # own: 9 events embed as [3, 4, 2]. The second write fails at its end, after its episodes
    # were inserted (a lost connection would look the same): it rolls back whole, the first
    # write stays committed, and everything claimed and unwritten goes back to pending at once.
    from memoryapp.models import Tenant
    from memoryapp.services import extraction
    from tests.workers.helpers import append

    monkeypatch.setattr(extraction, "CHUNK_SIZE", 4)
    monkeypatch.setattr(extraction, "WRITE_CHUNK_SIZE", 2)
    real_embed, real_mark, embedded, marked = extraction._embed, extraction._mark_processed, [], []

    def counting_embed(prepared, *rest):
        embedded.append([p.event.event_id for p in prepared])
        return real_embed(prepared, *rest)

    def failing_mark(**kwargs):
        marked.append(len(kwargs["rows"]))
        if len(marked) == 2:
            raise OperationalError("connection lost")
        return real_mark(**kwargs)

    monkeypatch.setattr(extraction, "_embed", counting_embed)
    monkeypatch.setattr(extraction, "_mark_processed", failing_mark)
    _, job = append(tenant_a, "alice", actor, *[(f"e{i}", "user", f"Note number {i}.", None, at(i)) for i in range(9)])
    with pytest.raises(OperationalError, match="connection lost"):
        extraction.extraction_job_run(tenant=Tenant.objects.get(pk=tenant_a.pk), job=job)
    # The first chunk, and the second, claimed and embedded ahead while the first was written.
    assert embedded == [["e0", "e1", "e2"], ["e3", "e4", "e5", "e6"]]
    assert marked == [2, 1]
    with as_tenant(tenant_a):
        status = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "status"))
        claimed = Event.objects.filter(tenant=tenant_a, claimed_at__isnull=False, status="pending").count()
        episodes = set(Memory.objects.filter(tenant=tenant_a, memory_type="episodic")
                       .values_list("source_event__event_id", flat=True))
    assert status == {"e0": "processed", "e1": "processed", **{f"e{i}": "pending" for i in range(2, 9)}}
    assert claimed == 0
    assert episodes == {"e0", "e1"}


def test_chunks_are_near_equal_and_end_with_one_short_write():
    from memoryapp.services.extraction import CHUNK_SIZE, WRITE_CHUNK_SIZE, _chunks

    ids = list(range(2 * CHUNK_SIZE + 10))
    chunks = _chunks(ids, CHUNK_SIZE)
    head = len(ids) - WRITE_CHUNK_SIZE
    assert [len(c) for c in chunks] == [head // 2, head - head // 2, WRITE_CHUNK_SIZE]
    assert [i for c in chunks for i in c] == ids
    # The tail stays whole and what comes before it splits near-equally: CHUNK_SIZE + 1 before
    # it is two halves, not a full chunk and a chunk of one.
    assert [len(c) for c in _chunks(ids[:WRITE_CHUNK_SIZE + 1], CHUNK_SIZE)] == [1, WRITE_CHUNK_SIZE]
    assert [len(c) for c in _chunks(ids[:CHUNK_SIZE + WRITE_CHUNK_SIZE + 1], CHUNK_SIZE)] == [
        (CHUNK_SIZE + 1) // 2, CHUNK_SIZE + 1 - (CHUNK_SIZE + 1) // 2, WRITE_CHUNK_SIZE]
    assert _chunks(ids[:WRITE_CHUNK_SIZE], CHUNK_SIZE) == [ids[:WRITE_CHUNK_SIZE]] and _chunks([], CHUNK_SIZE) == []
    # The language-model extractor's chunk size: plain chunks of it.
    assert [len(c) for c in _chunks(ids[:150], WRITE_CHUNK_SIZE)] == [WRITE_CHUNK_SIZE, WRITE_CHUNK_SIZE, 22]
