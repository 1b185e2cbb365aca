"""known_at follows every path that changes what is believed, not only corrections: an approval
(pending → active, and the procedure it replaces superseded) as well."""
import pytest
from django.utils import timezone

from memoryapp.retrieval import memory_search
from memoryapp.services.memories import memory_review
from tests.maintenance.conftest import write

pytestmark = pytest.mark.django_db

GREET = "how to greet Alice"


def _found(tenant, known_at=None, subject="alice"):
    return [h.memory.statement for h in memory_search(tenant=tenant, subject_ref=subject, query=GREET, k=5,
                                                      known_at=known_at)]


def test_known_at_before_an_approval_sees_the_procedure_it_replaced(tenant_a, tenant_b, actor):
    first = write(tenant_a, "alice", "Always greet Alice in Norwegian.", actor, memory_type="procedural", key="greeting")
    memory_review(tenant=tenant_a, memory=first, approve=True, actor=actor)
    write(tenant_b, "alice", "Always greet Alice in Finnish.", actor, memory_type="procedural", key="greeting")
    second = write(tenant_a, "alice", "Always greet Alice in English.", actor, memory_type="procedural",
                   key="greeting")
    proposed = timezone.now()  # the English greeting exists, but only as a proposal
    memory_review(tenant=tenant_a, memory=second, approve=True, actor=actor)

    assert _found(tenant_a) == ["Always greet Alice in English."]
    assert _found(tenant_a, known_at=proposed) == ["Always greet Alice in Norwegian."]
    assert _found(tenant_a, known_at=proposed, subject="bob") == []
    assert "Always greet Alice in Finnish." not in _found(tenant_a, known_at=proposed)
