"""The person's overview shows their profile (issue 15, item 1): their own current facts, special
ones too, and a conflict as both sides awaiting them; never another subject's or tenant's."""
import pytest
from django.urls import reverse

from tests.console.conftest import client_for, write

pytestmark = pytest.mark.django_db


def test_overview_shows_the_persons_own_profile_with_conflicts_and_special_facts(world):
    a, b = world.tenant_a, world.tenant_b
    a.accept_inferences = True  # the two tools' statements are facts, not candidates
    a.save(update_fields=["accept_inferences"])
    write(a, "alice", "Alice lives in Bergen.", key="user:home_city")
    write(a, "alice", "Alice is allergic to penicillin.", key="user:allergy", sensitivity="special")
    write(a, "alice", "Alice works at Acme.", key="user:employer", source_kind="tool", metadata={"speaker": "crm"})
    write(a, "alice", "Alice works at Globex.", key="user:employer", source_kind="tool", metadata={"speaker": "hr"})
    write(a, "bob", "Bob lives in Rome.", key="user:home_city")
    write(b, "alice", "Tenant B's Alice lives in Quito.", key="user:home_city")

    html = client_for(world.alice_a).get(reverse("console:home")).content.decode()
    profile = html[html.index('id="profile"'):html.index('id="growth-title"')]
    assert "Alice lives in Bergen." in profile and "source: user_explicit" in profile
    assert "Alice is allergic to penicillin." in profile
    assert "Waiting for you to confirm" in profile and "Acme" in profile and "Globex" in profile
    assert "Rome" not in html and "Quito" not in html
    other = client_for(world.alice_b).get(reverse("console:home")).content.decode()
    assert "Quito" in other and "Bergen" not in other and "Globex" not in other
