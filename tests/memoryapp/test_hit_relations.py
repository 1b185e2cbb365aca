"""The relations a search hit carries (evidence, supersedes, derived_from) are read without a
query, and anything that queries again through them stays on that memory's rows."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryapp.models import Event, Memory
from memoryapp.selectors.hits import memories_for_hits
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.tenancy import tenant_activate

pytestmark = pytest.mark.django_db


def write(tenant, subject, statement, actor, **kw):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement, **kw),
                        actor=actor).memory


def events(tenant, subject, actor, *ids):
    event_append(tenant=tenant, subject_ref=subject, actor=actor,
                 events=[EventInput(i, "user", f"message {i}") for i in ids])
    return [Event.objects.get(tenant=tenant, subject__external_id=subject, event_id=i) for i in ids]


@pytest.fixture
def two_people(tenant_a, actor):
    """Alice's current fact (two events of evidence, an older version it superseded, a memory
    derived from it) beside Bob's memories of the same shapes."""
    rows = {}
    for person in ("alice", "bob"):
        first, second = events(tenant_a, person, actor, f"{person}-1", f"{person}-2")
        old = write(tenant_a, person, f"{person} drinks coffee.", actor, key="drink")
        new = write(tenant_a, person, f"{person} drinks tea now.", actor, key="drink",
                    evidence=[first, second])
        derived = write(tenant_a, person, f"{person} likes hot drinks.", actor, derived_from=[new])
        rows[person] = {"old": old, "new": new, "derived": derived, "events": {first.event_id, second.event_id}}
    return rows


def test_relations_are_read_without_a_query(tenant_a, two_people):
    alice = two_people["alice"]
    tenant_activate(tenant=tenant_a)
    hits = memories_for_hits(tenant=tenant_a, ids=[alice["new"].pk, alice["derived"].pk])
    new, derived = hits[alice["new"].pk], hits[alice["derived"].pk]
    with CaptureQueriesContext(connection) as queries:
        evidence = {e.event_id for e in new.evidence.all()}
        supersedes = [m.pk for m in new.supersedes.all()]
        derived_from = [m.pk for m in derived.derived_from.all()]
        counts = (new.evidence.count(), new.supersedes.exists(), new.derived_from.exists())
    assert len(queries) == 0
    assert alice["events"] <= evidence
    assert supersedes == [alice["old"].pk]
    assert derived_from == [alice["new"].pk]
    assert counts == (len(evidence), True, False)


def test_querying_again_through_a_relation_stays_on_that_memory(tenant_a, two_people):
    alice, bob = two_people["alice"], two_people["bob"]
    tenant_activate(tenant=tenant_a)
    hits = memories_for_hits(tenant=tenant_a, ids=[alice["new"].pk, alice["derived"].pk])
    new, derived = hits[alice["new"].pk], hits[alice["derived"].pk]

    # Every way of building a new query from the loaded relation is still filtered on Alice's memory.
    assert {e.event_id for e in new.evidence.all().filter(role="user")} >= alice["events"]
    assert not {e.event_id for e in new.evidence.all().order_by("seq")} & bob["events"]
    assert [m.pk for m in new.supersedes.all().filter(statement__contains="coffee")] == [alice["old"].pk]
    assert [m.pk for m in new.supersedes.all().exclude(pk=alice["new"].pk)] == [alice["old"].pk]
    assert [m.pk for m in derived.derived_from.all().filter(statement__contains="tea")] == [alice["new"].pk]
    assert new.supersedes.all().values_list("pk", flat=True).count() == 1
    assert not new.derived_from.all().filter(statement__contains="bob").exists()

    # A write through it reaches Alice's older version and nothing of Bob's.
    assert new.supersedes.all().update(importance=0.11) == 1
    assert Memory.objects.get(pk=alice["old"].pk).importance == 0.11
    assert Memory.objects.get(pk=bob["old"].pk).importance != 0.11
    assert derived.derived_from.all().filter(statement__contains="bob").update(importance=0.12) == 0


def test_a_copied_hit_keeps_its_relation_filtered(tenant_a, two_people):
    import copy

    alice = two_people["alice"]
    tenant_activate(tenant=tenant_a)
    new = memories_for_hits(tenant=tenant_a, ids=[alice["new"].pk])[alice["new"].pk]
    copied = copy.deepcopy(new)
    assert [m.pk for m in copied.supersedes.all()] == [alice["old"].pk]


def test_a_memory_renders_alike_loaded_with_its_relations_or_without_and_only_the_loaded_one_queries_nothing(
        tenant_a, two_people):
    from api.representations import memory_json

    alice = two_people["alice"]
    tenant_activate(tenant=tenant_a)
    ids = [alice["old"].pk, alice["new"].pk, alice["derived"].pk]
    hits = memories_for_hits(tenant=tenant_a, ids=ids)
    with CaptureQueriesContext(connection) as queries:
        loaded = {pk: memory_json(hits[pk]) for pk in ids}
    assert len(queries) == 0
    plain = {pk: memory_json(Memory.objects.get(pk=pk)) for pk in ids}  # nothing loaded: queried

    def same_order(rendered):  # (unloaded evidence comes in the table's order, not the events')
        return {pk: {**m, "evidence": sorted(m["evidence"])} for pk, m in rendered.items()}

    assert same_order(loaded) == same_order(plain)
    assert set(loaded[alice["new"].pk]["evidence"]) == alice["events"]
    assert loaded[alice["new"].pk]["supersedes"] == [alice["old"].public_id]
    assert loaded[alice["derived"].pk]["derived_from"] == [alice["new"].public_id]
