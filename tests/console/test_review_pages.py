"""The person's "To review" page (issue 15): what was inferred about them, to confirm or reject,
and facts that disagree, to settle; the admin's conflicts queue and key caps. Nobody sees or
answers another person's, in this tenant or another."""
import pytest
from django.urls import reverse

from memoryapp.models import AuditEntry, Memory
from memoryapp.selectors.conflicts import conflicts_list
from tests.conftest import as_tenant
from tests.console.conftest import client_for, write

pytestmark = pytest.mark.django_db

GUESS = "Alice seems to be training for a marathon."


def body(response) -> str:
    return response.content.decode()


def status_of(tenant, memory) -> str:
    with as_tenant(tenant):
        return Memory.objects.get(pk=memory.pk).status


def test_the_person_sees_what_was_inferred_and_confirms_it(world):
    guess = write(world.tenant_a, "alice", GUESS, source_kind="assistant")
    page = client_for(world.alice_a).get(reverse("console:review"))
    assert page.status_code == 200 and GUESS in body(page)
    assert GUESS not in body(client_for(world.bob_a).get(reverse("console:review")))
    assert GUESS not in body(client_for(world.alice_b).get(reverse("console:review")))
    response = client_for(world.alice_a).post(reverse("console:candidate_decide", args=[guess.public_id, "confirm"]))
    assert response.status_code == 302
    assert status_of(world.tenant_a, guess) == "superseded"
    with as_tenant(world.tenant_a):
        assert Memory.objects.filter(tenant=world.tenant_a, statement=GUESS, status="active",
                                     source_kind="user_explicit").exists()
        assert AuditEntry.objects.filter(tenant=world.tenant_a, action="candidate_confirmed",
                                         actor_kind="user").exists()


def test_the_person_rejects_an_inference_and_nobody_else_can_answer_it(world):
    guess = write(world.tenant_a, "alice", GUESS, source_kind="tool")
    url = reverse("console:candidate_decide", args=[guess.public_id, "reject"])
    for other in (world.bob_a, world.alice_b):
        assert client_for(other).post(url).status_code == 404
    assert client_for(world.admin_a).post(url).status_code == 403
    assert status_of(world.tenant_a, guess) == "candidate"
    assert client_for(world.alice_a).post(url).status_code == 302
    assert status_of(world.tenant_a, guess) == "rejected"


def test_the_person_settles_a_conflict_and_the_admin_sees_the_queue_of_their_tenant_only(world):
    first = write(world.tenant_a, "alice", "I work at Acme.", key="user:employer", source_kind="system")
    write(world.tenant_a, "alice", "I work at Globex.", key="user:employer", source_kind="user")
    with as_tenant(world.tenant_a):
        [conflict] = conflicts_list(tenant=world.tenant_a, subject_ref="alice")
    page = body(client_for(world.alice_a).get(reverse("console:review")))
    assert "I work at Acme." in page and "I work at Globex." in page
    assert "I work at Acme." not in body(client_for(world.bob_a).get(reverse("console:review")))
    queue = client_for(world.admin_a).get(reverse("console:admin_conflicts"))
    assert queue.status_code == 200 and "I work at Acme." in body(queue) and "held for the person" in body(queue)
    assert "I work at Acme." not in body(client_for(world.admin_b).get(reverse("console:admin_conflicts")))
    assert client_for(world.alice_a).get(reverse("console:admin_conflicts")).status_code == 403
    url = reverse("console:conflict_decide", args=[conflict.id])
    for other in (world.bob_a, world.alice_b):
        assert client_for(other).post(url, {"resolution": "keep_all"}).status_code == 404
    empty = client_for(world.alice_a).post(url, {"resolution": "correct", "statement": "  "})
    assert empty.status_code == 422
    response = client_for(world.alice_a).post(url, {"resolution": "keep", "memory_id": first.public_id})
    assert response.status_code == 302
    with as_tenant(world.tenant_a):
        assert conflicts_list(tenant=world.tenant_a, subject_ref="alice") == []
    assert status_of(world.tenant_a, first) == "active"


def test_the_admin_keys_page_shows_and_sets_each_keys_max_source(world):
    client = client_for(world.admin_a)
    response = client.post(reverse("console:admin_keys"), {"name": "agent", "max_source": "assistant"})
    assert response.status_code == 200
    assert "<code>assistant</code>" in body(response)
