"""Erasure: the subject's data leaves no residue in any table, the receipt counts it without
holding it, a rerun is harmless, and forgetting one memory removes what was derived from it."""
import pytest
from django.db import connections

from memoryapp.models import (
    ApiKey, AuditEntry, Event, ExportFile, IdempotencyRecord, Job, Memory, ReadAudit, Subject,
)
from memoryapp.services.audit import audit_verify
from memoryapp.services.consolidation import consolidation_request
from memoryapp.services import erasure
from memoryapp.services.erasure import erasure_job_run
from memoryapp.services.export import export_request
from memoryapp.services.memories import memory_forget, subject_erase_request
from memoryapp.services.reads import read_audit_record
from memoryapp.services.signin import console_subject_user_get_or_create, signin_link_create
from memoryapp.services.tenants import api_key_create
from tests.conftest import as_tenant
from tests.maintenance.conftest import append, run, write

SUBJECT = "erin-7f3c"
EVENT_TEXTS = [
    "My grandmother's lighthouse in Tromsoe is painted ultramarine.",
    "I keep my spare bicycle key under the quince tree.",
]
MEMORY_TEXTS = [
    "Erin's favourite cheese is smoked Gjetost from Hardanger.",
    "Erin collects antique barometers made in Zagreb.",
]


def scan_every_table(needles: list[str], tenant_id: int) -> list[tuple[str, str, str]]:
    """(table, column, needle) for every text-like column of every table in the database, read
    as the schema owner (no row-level security), that still contains a needle. Rows of other
    tenants are skipped (another tenant's subject may have the same id); tables without a
    tenant are scanned whole."""
    owner = connections["owner"]
    hits = []
    with owner.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
                       "AND column_name = 'tenant_id'")
        tenant_tables = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type IN "
            "('text', 'character varying', 'json', 'jsonb', 'uuid', 'bytea', 'ARRAY', 'USER-DEFINED', 'character')"
        )
        columns = cursor.fetchall()
        assert len(columns) > 40  # the scan really covers the schema
        for table, column, data_type in columns:
            if data_type == "USER-DEFINED" and column in ("embedding", "search_vector"):
                continue  # vectors hold no text; search_vector is regenerated from the statement
            expr = f'encode("{column}", \'escape\')' if data_type == "bytea" else f'"{column}"::text'
            for needle in needles:
                where = f"tenant_id = {int(tenant_id)} AND " if table in tenant_tables else ""
                cursor.execute(f'SELECT count(*) FROM "{table}" WHERE {where}{expr} ILIKE %s', [f"%{needle}%"])
                if cursor.fetchone()[0]:
                    hits.append((table, column, needle))
    return hits


# What the audit log keeps of an erasure (who, what action, which ids, when) and what survives
# by design: the deletion job holds the receipt, a bound API key names its subject id.
ALLOWED = {
    ("memoryapp_auditentry", c) for c in ("subject_ref", "memory_id", "target", "details", "actor_id")
} | {("memoryapp_job", "subject_ref"), ("memoryapp_job", "params"), ("memoryapp_apikey", "subject_ref")}


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_subject_erasure_leaves_no_residue_in_any_table(tenant_a, tenant_b, actor):
    # Everything a subject can leave behind: events, explicit memories, a derived summary, an
    # export file, read audit, an idempotent answer, a sign-in link, a console account.
    events = append(tenant_a, SUBJECT, actor, ("e-1", "user", EVENT_TEXTS[0], "s-1"),
                    ("e-2", "user", EVENT_TEXTS[1], "s-1"))
    with as_tenant(tenant_a):
        extraction = Job.objects.get(kind="extraction")
    assert run(tenant_a, extraction).status == "succeeded"  # the real extractor: episodes and facts
    with as_tenant(tenant_a):
        sources = [Event.objects.get(pk=e.pk) for e in events]
        extracted = Memory.objects.filter(subject__external_id=SUBJECT).count()
        assert extracted >= 2
    memories = [write(tenant_a, SUBJECT, text, actor, key=f"user:fact{i}", source_event=sources[i])
                for i, text in enumerate(MEMORY_TEXTS)]
    consolidation = run(tenant_a, consolidation_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor))
    assert consolidation.status == "succeeded" and consolidation.result["summaries_created"] == 1
    export = run(tenant_a, export_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor))
    assert export.status == "succeeded"
    api_key, _ = api_key_create(tenant=tenant_a, subject_ref=SUBJECT, actor=actor)
    signin_link_create(tenant=tenant_a, subject_ref=SUBJECT, actor=actor)
    console_subject_user_get_or_create(tenant=tenant_a, subject_ref=SUBJECT)
    with as_tenant(tenant_a):
        all_memories = list(Memory.objects.filter(tenant=tenant_a, subject__external_id=SUBJECT))
        assert len(all_memories) == extracted + 3  # + two explicit, one session summary
    read_audit_record(tenant=tenant_a, actor=actor, subject_ref=SUBJECT, operation="search",
                      memory_ids=[m.pk for m in all_memories], query="where is the lighthouse")
    with as_tenant(tenant_a):
        IdempotencyRecord.objects.create(
            tenant=tenant_a, scope=f"POST /api/v1/subjects/{SUBJECT}/memories", key="k1", request_hash="h",
            status_code=201, response={"id": memories[0].public_id, "subject": SUBJECT, "statement": MEMORY_TEXTS[0]},
        )
    # Tenant B's subject with the same id must survive untouched.
    kept = write(tenant_b, SUBJECT, "Tenant B keeps this sentence about kayaks.", actor)

    job = subject_erase_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor)
    job = run(tenant_a, job)

    assert job.status == "succeeded", job.error
    assert job.progress_done == job.progress_total == len(all_memories) + 2
    receipt = job.result
    assert receipt["verification"]["passed"] is True, receipt["verification"]
    removed = receipt["removed"]
    assert removed["events"] == 2 and removed["memories"] == len(all_memories) and removed["derived_memories"] == 1
    assert removed["embeddings"] == len(all_memories) and removed["export_files"] == 1 and removed["signin_links"] == 1
    assert removed["read_audit_rows"] == 1 and removed["idempotency_records"] == 1
    assert removed["console_accounts"] == 1 and removed["subjects"] == 1
    assert removed["evidence_links"] >= 4 and removed["lineage_links"] >= 2 and removed["audit_payloads_redacted"] > 0
    # The receipt holds counts and checks, never the content.
    text = str(receipt)
    assert not any(fragment in text for fragment in ["Gjetost", "barometers", "lighthouse", "quince"])

    ids = [m.pk.hex for m in all_memories] + [str(m.pk) for m in all_memories] + [str(e.pk) for e in events]
    needles = ["Gjetost", "barometers made in Zagreb", "lighthouse in Tromsoe", "quince tree", SUBJECT, *ids]
    residue = [hit for hit in scan_every_table(needles, tenant_a.pk) if (hit[0], hit[1]) not in ALLOWED]
    assert residue == []
    # What is allowed to stay really is free of content: the audit keeps no payload, the
    # deletion job's params name only the scope.
    with as_tenant(tenant_a):
        assert not AuditEntry.objects.filter(tenant=tenant_a, subject_ref=SUBJECT, before__isnull=False).exists()
        assert not AuditEntry.objects.filter(tenant=tenant_a, subject_ref=SUBJECT, after__isnull=False).exists()
        assert ApiKey.objects.filter(pk=api_key.pk).exists()
        assert AuditEntry.objects.filter(tenant=tenant_a, action="erasure_completed").count() == 1
        assert audit_verify(tenant=tenant_a).ok
    with as_tenant(tenant_b):
        assert Memory.objects.get(pk=kept.pk).statement.startswith("Tenant B keeps")
        assert Subject.objects.filter(tenant=tenant_b, external_id=SUBJECT).exists()


@pytest.mark.django_db
def test_subject_erasure_rerun_finds_nothing_and_succeeds(tenant_a, actor):
    write(tenant_a, SUBJECT, MEMORY_TEXTS[0], actor)
    append(tenant_a, SUBJECT, actor, ("e-1", "user", EVENT_TEXTS[0]))
    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor))
    assert job.result["removed"]["memories"] == 1 and job.result["removed"]["events"] == 1

    again = erasure_job_run(tenant=tenant_a, job=job)

    assert again["verification"]["passed"] is True
    assert all(count == 0 for count in again["removed"].values())


@pytest.mark.django_db
def test_erased_subject_id_can_be_reused_as_a_new_subject(tenant_a, actor):
    write(tenant_a, SUBJECT, MEMORY_TEXTS[0], actor)
    run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor))
    fresh = write(tenant_a, SUBJECT, "A new person who happens to get the same id.", actor)
    with as_tenant(tenant_a):
        assert list(Memory.objects.filter(subject=fresh.subject).values_list("statement", flat=True)) == [
            "A new person who happens to get the same id."
        ]


@pytest.mark.django_db
def test_a_stale_erasure_rerun_never_touches_the_new_subject_with_the_same_id(tenant_a, actor):
    write(tenant_a, SUBJECT, MEMORY_TEXTS[0], actor)
    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor))
    fresh = write(tenant_a, SUBJECT, "The new owner of this id.", actor)
    run(tenant_a, export_request(tenant=tenant_a, subject_ref=SUBJECT, actor=actor))

    again = erasure_job_run(tenant=tenant_a, job=job)

    assert all(count == 0 for count in again["removed"].values())
    with as_tenant(tenant_a):
        assert Memory.objects.filter(pk=fresh.pk, erasing=False).exists() and ExportFile.objects.count() == 1
        assert not AuditEntry.objects.filter(memory_id=fresh.pk, redacted_at__isnull=False).exists()


@pytest.mark.django_db
def test_subject_erasure_never_touches_another_tenant_or_another_subject(tenant_a, tenant_b, actor):
    for tenant in (tenant_a, tenant_b):
        for subject in ("alice", "bob"):
            write(tenant, subject, f"{subject} likes sailing boats from Kiel.", actor)
            append(tenant, subject, actor, ("e-1", "user", f"{subject} said something about Kiel."))
    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    assert job.result["removed"]["memories"] == 1 and job.result["verification"]["passed"]
    with as_tenant(tenant_a):
        assert set(Memory.objects.values_list("subject__external_id", flat=True)) == {"bob"}
        assert set(Event.objects.values_list("subject__external_id", flat=True)) == {"bob"}
    with as_tenant(tenant_b):
        assert set(Memory.objects.values_list("subject__external_id", flat=True)) == {"alice", "bob"}
        assert Event.objects.count() == 2


@pytest.mark.django_db
def test_forgetting_a_memory_removes_what_was_derived_from_it_and_the_message_that_states_it(tenant_a, actor):
    events = append(tenant_a, "alice", actor, ("e-1", "user", "I moved to Bergen last spring, near the fish market."))
    with as_tenant(tenant_a):
        event = Event.objects.get(pk=events[0].pk)
    fact = write(tenant_a, "alice", "Alice lives in Bergen.", actor, source_kind="user", source_event=event)
    other = write(tenant_a, "alice", "Alice likes fish markets.", actor, source_kind="user", source_event=event)
    summary = write(tenant_a, "alice", "Summary: Alice lives in Bergen and likes it.", actor,
                    source_kind="system", derived_from=[fact], memory_type="episodic")
    summary_of_summary = write(tenant_a, "alice", "Digest: Bergen resident.", actor, source_kind="system",
                               derived_from=[summary], memory_type="episodic")
    with as_tenant(tenant_a):
        ReadAudit.objects.create(tenant=tenant_a, actor="k", subject_ref="alice", operation="search",
                                 memory_ids=[fact.pk, other.pk, summary.pk])
        IdempotencyRecord.objects.create(tenant=tenant_a, scope="POST /api/v1/subjects/alice/memories", key="a",
                                         request_hash="h", status_code=201,
                                         response={"id": fact.public_id, "statement": fact.statement})
        IdempotencyRecord.objects.create(tenant=tenant_a, scope="POST /api/v1/subjects/alice/memories", key="b",
                                         request_hash="h", status_code=201,
                                         response={"id": other.public_id, "statement": other.statement})

    job = run(tenant_a, memory_forget(tenant=tenant_a, memory=fact, actor=actor))

    assert job.status == "succeeded" and job.result["verification"]["passed"], job.result
    assert job.result["removed"]["memories"] == 3 and job.result["removed"]["derived_memories"] == 2
    # The message states where Alice lives: it goes. The other fact drawn from it stays (she did
    # not ask to forget it), without the link, and the receipt says so.
    assert job.result["removed"]["events"] == 1
    assert job.result["kept"]["memories"] == 1
    with as_tenant(tenant_a):
        assert list(Memory.objects.values_list("pk", flat=True)) == [other.pk]
        assert not Event.objects.filter(pk=event.pk).exists()
        assert Memory.objects.get(pk=other.pk).source_event_id is None
        assert ReadAudit.objects.get().memory_ids == [other.pk]
        assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["b"]
        for m in (fact, summary, summary_of_summary):
            entries = AuditEntry.objects.filter(memory_id=m.pk)
            assert entries.exists() and not entries.filter(after__isnull=False).exists()
        assert audit_verify(tenant=tenant_a).ok


@pytest.mark.django_db
def test_forgetting_an_episodic_memory_removes_the_event_only_it_cites(tenant_a, actor):
    events = append(tenant_a, "alice", actor, ("e-1", "user", "We celebrated Ada's birthday in Lisbon on Friday."),
                    ("e-2", "user", "The hotel in Lisbon was lovely."))
    with as_tenant(tenant_a):
        only, shared = Event.objects.get(pk=events[0].pk), Event.objects.get(pk=events[1].pk)
    episode = write(tenant_a, "alice", "Celebrated Ada's birthday in Lisbon.", actor, memory_type="episodic",
                    source_kind="user", source_event=only, evidence=[shared])
    write(tenant_a, "alice", "Liked the Lisbon hotel.", actor, memory_type="episodic", source_kind="user",
          source_event=shared)

    job = run(tenant_a, memory_forget(tenant=tenant_a, memory=episode, actor=actor))

    assert job.result["removed"]["events"] == 1 and job.result["verification"]["passed"]
    with as_tenant(tenant_a):
        assert list(Event.objects.values_list("pk", flat=True)) == [shared.pk]


@pytest.mark.django_db
def test_a_rerun_after_the_memories_went_still_removes_the_events_only_they_cited(tenant_a, actor, monkeypatch):
    [only] = append(tenant_a, "alice", actor, ("e-1", "user", "The boathouse key hangs behind the fuse box."))
    with as_tenant(tenant_a):
        only = Event.objects.get(pk=only.pk)
    episode = write(tenant_a, "alice", "The boathouse key hangs behind the fuse box.", actor,
                    memory_type="episodic", source_kind="user", source_event=only)
    job = memory_forget(tenant=tenant_a, memory=episode, actor=actor)

    # The first run dies after its memory batches committed, before the events went.
    def worker_lost(**kwargs):
        raise RuntimeError("worker lost")

    monkeypatch.setattr(erasure, "_audit_redact_ids", worker_lost)
    with pytest.raises(RuntimeError):
        erasure_job_run(tenant=tenant_a, job=job)
    with as_tenant(tenant_a):
        assert not Memory.objects.filter(pk=episode.pk).exists() and Event.objects.filter(pk=only.pk).exists()
        job = Job.objects.get(pk=job.pk)  # as the retry reads it
    monkeypatch.undo()

    receipt = erasure_job_run(tenant=tenant_a, job=job)

    assert receipt["removed"]["events"] == 1 and receipt["verification"]["passed"]
    with as_tenant(tenant_a):
        assert not Event.objects.filter(pk=only.pk).exists()


@pytest.mark.django_db
def test_forgetting_a_memory_drops_the_subjects_export_files(tenant_a, actor):
    fact = write(tenant_a, "alice", "Alice's locker code hint is the blue door.", actor)
    run(tenant_a, export_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    with as_tenant(tenant_a):
        assert ExportFile.objects.count() == 1
    job = run(tenant_a, memory_forget(tenant=tenant_a, memory=fact, actor=actor))
    assert job.result["removed"]["export_files"] == 1
    with as_tenant(tenant_a):
        assert ExportFile.objects.count() == 0


@pytest.mark.django_db
def test_erasure_job_of_one_tenant_cannot_reach_another_tenants_memory(tenant_a, tenant_b, actor):
    foreign = write(tenant_b, "alice", "Tenant B's fact stays.", actor)
    # A forged job in tenant A naming tenant B's memory id: row-level security hides it.
    with as_tenant(tenant_a):
        job = Job.objects.create(tenant=tenant_a, kind="deletion", subject_ref="alice",
                                 params={"scope": "memory", "memory_ids": [str(foreign.pk)]})
    job = run(tenant_a, job)
    assert job.result["removed"]["memories"] == 0
    with as_tenant(tenant_b):
        assert Memory.objects.filter(pk=foreign.pk).exists()


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_forgotten_memory_and_its_summary_leave_no_residue_in_any_table(tenant_a, actor):
    kept = write(tenant_a, "alice", "Alice plays the bassoon on Sundays.", actor)
    doomed = write(tenant_a, "alice", "Alice's therapist is Dr Quillfeather in Dunedin.", actor)
    summary = write(tenant_a, "alice", "Digest: sees Dr Quillfeather weekly.", actor, source_kind="system",
                    memory_type="episodic", derived_from=[doomed])
    run(tenant_a, export_request(tenant=tenant_a, subject_ref="alice", actor=actor))
    read_audit_record(tenant=tenant_a, actor=actor, subject_ref="alice", operation="search",
                      memory_ids=[kept.pk, doomed.pk, summary.pk])
    with as_tenant(tenant_a):
        IdempotencyRecord.objects.create(
            tenant=tenant_a, scope="POST /api/v1/subjects/alice/memories", key="k", request_hash="h",
            status_code=201, response={"id": doomed.public_id, "statement": doomed.statement})

    job = run(tenant_a, memory_forget(tenant=tenant_a, memory=doomed, actor=actor))

    assert job.result["verification"]["passed"] and job.result["removed"]["memories"] == 2
    ids = [m.pk.hex for m in (doomed, summary)] + [str(m.pk) for m in (doomed, summary)]
    residue = [hit for hit in scan_every_table(["Quillfeather", *ids], tenant_a.pk) if (hit[0], hit[1]) not in ALLOWED]
    assert residue == []
    with as_tenant(tenant_a):
        assert list(Memory.objects.values_list("pk", flat=True)) == [kept.pk]
        assert ReadAudit.objects.get().memory_ids == [kept.pk]


@pytest.mark.django_db(transaction=True)
def test_verification_finds_text_and_ids_an_erasure_left_behind(tenant_a, actor):
    # The check must fail when something survives: plant, after a clean erasure, the kinds of
    # copy a faulty step would leave (text in an audit payload and an export, an answer naming
    # an erased memory by its UUID in capitals), beside look-alikes that must not count.
    from datetime import timedelta

    from django.utils import timezone

    from memoryapp.services.audit import audit_record

    doomed = write(tenant_a, "rue", "Rue keeps her passport in the blue biscuit tin.", actor)
    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref="rue", actor=actor))
    assert job.result["verification"]["passed"] is True
    row = job.params["subject_row_id"]
    unrelated = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    with as_tenant(tenant_a):
        audit_record(tenant=tenant_a, actor=actor, action="note", subject_ref="rue", subject_row_id=row,
                     details={"copied": "rue keeps her PASSPORT in the blue biscuit tin. (sic)"})
        ExportFile.objects.create(tenant=tenant_a, subject_ref="rue", content=b'{"statement": "Rue keeps her '
                                  b'passport in the blue biscuit tin."}', expires_at=timezone.now() + timedelta(days=1))
        IdempotencyRecord.objects.create(tenant=tenant_a, scope="POST /api/v1/memories", key="a", request_hash="h",
                                         status_code=201, response={"id": str(doomed.pk).upper()})
        IdempotencyRecord.objects.create(tenant=tenant_a, scope="POST /api/v1/memories", key="b", request_hash="h",
                                         status_code=201, response={"id": unrelated, "note": "passport"})

    verification = erasure.erasure_verify(
        tenant=tenant_a, subject_ref="rue", subject_row_id=row, scope="subject",
        texts={"Rue keeps her passport in the blue biscuit tin."}, memory_ids=[doomed.pk], event_ids=[])

    assert verification["passed"] is False
    assert verification["residue"] == {"text:audit": 1, "text:export_file": 1, "export_files": 1,
                                       "idempotency_records": 1}
    assert "Rue keeps" not in str(verification)
    # And the erasure's own step deletes the answer naming the memory, not the look-alike.
    with as_tenant(tenant_a):
        assert erasure._idempotency_delete_naming(tenant=tenant_a, memory_ids=[doomed.pk]) == 1
        assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["b"]


@pytest.mark.django_db(transaction=True)
def test_forget_leaves_survivors_pointing_at_nothing_rather_than_at_an_erased_memory(tenant_a, actor):
    doomed = write(tenant_a, "alice", "Alice's locker code habit: she writes it on her wrist.", actor)
    newer = write(tenant_a, "alice", "Alice now keeps the locker code in her head.", actor)
    proposal = write(tenant_a, "alice", "Always ask Alice before opening the locker.", actor)
    with as_tenant(tenant_a):
        Memory.objects.filter(pk=newer.pk).update(superseded_by=doomed)
        Memory.objects.filter(pk=proposal.pk).update(proposal_for=doomed)
        # A deletion job naming one memory (as a quarantine discard makes): memory_forget would
        # take the whole chain, and so leave no survivor to look at.
        Memory.objects.filter(pk=doomed.pk).update(erasing=True)
        job = Job.objects.create(tenant=tenant_a, kind="deletion", subject_ref="alice",
                                 params={"scope": "memory", "memory_ids": [str(doomed.pk)]})

    job = run(tenant_a, job)

    assert job.status == "succeeded" and job.result["removed"]["memories"] == 1
    with as_tenant(tenant_a):
        survivors = {m.pk: m for m in Memory.objects.filter(subject__external_id="alice")}
        assert set(survivors) == {newer.pk, proposal.pk}
        assert survivors[newer.pk].superseded_by_id is None and survivors[proposal.pk].proposal_for_id is None


@pytest.mark.django_db(transaction=True)
def test_verification_finds_an_id_inside_other_hex_and_text_escaped_in_json(tenant_a, actor):
    # An erased id right after another hex digit (an uuid-token scan would misalign there) and
    # a statement with quotes and a line break, which JSON stores escaped.
    from memoryapp.services.audit import audit_record

    text = 'Rue said "call me Ruthie"\nand nobody else.'
    doomed = write(tenant_a, "rue", text, actor)
    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref="rue", actor=actor))
    assert job.result["verification"]["passed"] is True
    with as_tenant(tenant_a):
        audit_record(tenant=tenant_a, actor=actor, action="note", subject_ref="rue",
                     subject_row_id=job.params["subject_row_id"], details={"copied": text})
        IdempotencyRecord.objects.create(tenant=tenant_a, scope="POST /api/v1/memories", key="a", request_hash="h",
                                         status_code=201, response={"trace": f"a{doomed.pk.hex}"})

    verification = erasure.erasure_verify(
        tenant=tenant_a, subject_ref="rue", subject_row_id=job.params["subject_row_id"], scope="subject",
        texts={text}, memory_ids=[doomed.pk], event_ids=[])

    assert verification["residue"] == {"text:audit": 1, "idempotency_records": 1}
    with as_tenant(tenant_a):
        assert erasure._idempotency_delete_naming(tenant=tenant_a, memory_ids=[doomed.pk]) == 1


@pytest.mark.django_db(transaction=True, databases=["default", "owner"])
def test_erasure_in_batches_of_one_leaves_no_link_behind(tenant_a, actor, monkeypatch):
    # Lineage, supersession and evidence that span batches: each batch must leave the deferred
    # foreign keys consistent at its own commit, whatever the order the memories come in.
    monkeypatch.setattr(erasure, "BATCH_SIZE", 1)
    events = append(tenant_a, "mo", actor, ("e-1", "user", "Mo moved to Quimper in spring.", "s-1"),
                    ("e-2", "user", "Mo now lives in Brest instead.", "s-1"))
    with as_tenant(tenant_a):
        extraction = Job.objects.get(kind="extraction")
    assert run(tenant_a, extraction).status == "succeeded"
    old = write(tenant_a, "mo", "Mo's dentist is Dr Quenelle.", actor, key="user:dentist")
    new = write(tenant_a, "mo", "Mo's dentist is Dr Brioche now.", actor, key="user:dentist")
    write(tenant_a, "mo", "Digest: Mo changed dentist.", actor, source_kind="system", memory_type="episodic",
          derived_from=[old, new])
    with as_tenant(tenant_a):
        assert Memory.objects.get(pk=old.pk).superseded_by_id == new.pk
        total = Memory.objects.filter(subject__external_id="mo").count()

    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref="mo", actor=actor))

    assert job.status == "succeeded", job.error
    assert job.result["verification"]["passed"] is True, job.result["verification"]
    assert job.result["removed"]["memories"] == total and job.result["removed"]["events"] == len(events)
    assert job.result["removed"]["lineage_links"] == 2
    residue = [hit for hit in scan_every_table(["Quimper", "Quenelle", "Brioche"], tenant_a.pk)
               if (hit[0], hit[1]) not in ALLOWED]
    assert residue == []


@pytest.mark.django_db(transaction=True)
def test_another_subjects_memory_citing_an_erased_event_keeps_only_a_null_source(tenant_a, actor):
    events = append(tenant_a, "ann", actor, ("e-1", "user", "Ann and Bo adopted a greyhound called Pip.", "s-1"))
    with as_tenant(tenant_a):
        event = Event.objects.get(pk=events[0].pk)
    bos = write(tenant_a, "bo", "Bo has a greyhound called Pip.", actor, source_event=event)

    job = run(tenant_a, subject_erase_request(tenant=tenant_a, subject_ref="ann", actor=actor))

    assert job.status == "succeeded", job.error
    with as_tenant(tenant_a):
        survivor = Memory.objects.get(pk=bos.pk)
        assert survivor.source_event_id is None
        assert not Event.objects.filter(pk=event.pk).exists()
