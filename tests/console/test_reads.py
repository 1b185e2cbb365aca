"""People can see what agents read: the person's Reads page (which key, by its name, when,
which memories; the query never in clear), console reads recorded too, an admin's per-key page,
and nobody sees another subject's or tenant's reads."""
import hashlib

import pytest
from django.urls import reverse

from memoryapp.models import ApiKey
from tests.api.conftest import make_client, post
from tests.conftest import as_tenant
from tests.console.conftest import SECRET_TEXT, client_for

pytestmark = pytest.mark.django_db

QUERY = "where does the zebra lantern bicycle live"


def _named_key_search(tenant, subject, name):
    client = make_client(tenant)
    with as_tenant(tenant):
        key = ApiKey.objects.get(prefix=client.raw_key.split("_")[1])
        key.name = name
        key.save(update_fields=["name"])
    response = post(client, f"subjects/{subject}/search", {"query": QUERY, "k": 3})
    assert response.status_code == 200 and response.json()["results"], response.content
    return key


def test_the_person_sees_which_key_read_what_and_never_the_query(world):
    _named_key_search(world.tenant_a, "alice", "support-bot")
    _named_key_search(world.tenant_b, "alice", "tenant-b-bot")
    _named_key_search(world.tenant_a, "bob", "bobs-bot")

    page = client_for(world.alice_a).get(reverse("console:reads")).content.decode()
    assert "support-bot" in page and "search" in page
    assert SECRET_TEXT[("a", "alice")] in page  # the memory read, by its statement
    assert QUERY not in page and hashlib.sha256(QUERY.encode()).hexdigest()[:10] in page
    # Nothing of bob's reads, nor of tenant B's alice (same id, another person).
    for leak in ("bobs-bot", "tenant-b-bot", SECRET_TEXT[("a", "bob")], SECRET_TEXT[("b", "alice")]):
        assert leak not in page, leak
    other = client_for(world.alice_b).get(reverse("console:reads")).content.decode()
    assert "tenant-b-bot" in other and "support-bot" not in other and SECRET_TEXT[("a", "alice")] not in other
    fragment = client_for(world.alice_a).get(reverse("console:reads"), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="reads"') and "support-bot" in fragment


def test_console_reads_are_recorded_for_the_person_and_by_an_admin(world):
    alice = client_for(world.alice_a)
    assert alice.get(reverse("console:memories")).status_code == 200
    memory_id = world.mem[("a", "alice")].public_id
    assert client_for(world.admin_a).get(reverse("console:admin_memory", args=[memory_id])).status_code == 200

    page = alice.get(reverse("console:reads")).content.decode()
    assert "you, in this console" in page and "admin@a.example, in the console" in page
    bob_page = client_for(world.bob_a).get(reverse("console:reads")).content.decode()
    assert "you, in this console" not in bob_page and "admin@a.example" not in bob_page


def test_an_admin_sees_each_keys_reads_and_no_other_tenants_key(world):
    key = _named_key_search(world.tenant_a, "alice", "support-bot")
    url = reverse("console:admin_key_reads", args=[key.id])
    page = client_for(world.admin_a).get(url).content.decode()
    assert "support-bot" in page and "alice" in page and SECRET_TEXT[("a", "alice")] in page and QUERY not in page
    keys_page = client_for(world.admin_a).get(reverse("console:admin_keys")).content.decode()
    assert url in keys_page
    assert client_for(world.admin_b).get(url).status_code == 404  # another tenant's key: as if missing
    assert client_for(world.alice_a).get(url).status_code == 403  # a person is not an admin
