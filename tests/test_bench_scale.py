"""bench/scale.py's bulk loader writes rows the application reads as its own: a schema change
(this issue's composite keys, a new NOT NULL column) that the loader's COLUMNS no longer match
fails here, not an hour into a million-memory run."""
import pytest
from django.db import connections

from bench import scale
from memoryapp.models import Event, Memory, MemoryEvidence, Subject
from memoryapp.retrieval import memory_search
from memoryapp.selectors.memories import memory_list
from memoryapp.services.events import EventInput, event_append
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "owner"])

MESSAGES = [
    "I moved to Lisbon last spring, anyway can you help me plan a trip to Porto?",
    "My sister Ana is a nurse in Berlin.",
    "We adopted a dog called Luna; she loves the beach.",
]
FACTS = ["The user lives in Lisbon.", "The user's sister Ana works as a nurse.", "The user has a dog called Luna."]


def test_generated_events_memories_and_evidence_are_read_by_the_app(tenant_a, tenant_b, actor):
    try:
        scale.build_pool(messages=MESSAGES, facts=FACTS, cache=False)
        ids = scale.subjects_create([tenant_a, tenant_b], ["alice"])
        done = scale.generate({ids[0]: 10, ids[1]: 4})
    finally:
        with connections["owner"].cursor() as cursor:
            cursor.execute(f"DROP SCHEMA IF EXISTS {scale.GEN} CASCADE")
    # An episode per event and a fact for every other one, each cited by its event.
    assert (done["events"], done["memories"]) == (14, 10 + 5 + 4 + 2)

    with as_tenant(tenant_a):
        subject = Subject.objects.get(tenant=tenant_a, external_id="alice")
        assert subject.last_seq == 10
        assert Event.objects.filter(tenant=tenant_a).count() == 10
        assert set(Event.objects.filter(tenant=tenant_a).values_list("content", flat=True)) <= set(MESSAGES)
        memories = Memory.objects.filter(tenant=tenant_a)
        assert memories.filter(memory_type="episodic").count() == 10
        assert memories.filter(memory_type="semantic").count() == 5
        assert MemoryEvidence.objects.filter(tenant=tenant_a).count() == 15
        # The first message has two clauses: its episodes carry their vectors.
        assert memories.filter(statement=MESSAGES[0], clause_embeddings__isnull=False).count() == \
            memories.filter(statement=MESSAGES[0]).count()
        assert memory_list(tenant=tenant_a, subject_ref="alice").count() == 15
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does the user live?", k=5)
        assert len(hits) == 5 and all(h.memory.subject_id == subject.pk for h in hits)

    # The next event appended through the service numbers after the generated ones.
    appended, _ = event_append(tenant=tenant_a, subject_ref="alice",
                               events=[EventInput("next", "user", "I started cycling.")], actor=actor)
    assert appended[0].event.seq == 11
    # Row-level security still holds on generated rows: tenant B sees only its own.
    with as_tenant(tenant_b):
        assert Memory.objects.count() == 6
        assert not Memory.objects.filter(tenant=tenant_a).exists()
