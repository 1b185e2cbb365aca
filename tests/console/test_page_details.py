"""The small things around the console's pages: no page comes from a cache, a favicon, filters
named like the table's columns, an over-long sign-in link answered with a page, signing out
back the way one came in, and a correction of a replaced version that keeps what was typed."""
import socket

import pytest
from django.urls import reverse

from console.templatetags.console_tags import source_label
from memoryapp.models import Memory
from memoryapp.services.memories import memory_correct
from memoryapp.services.signin import signin_link_create
from tests.conftest import as_tenant
from tests.console.conftest import ACTOR, PASSWORD, client_for, write

pytestmark = pytest.mark.django_db


# --- Nothing from a cache ---------------------------------------------------------------------

def test_every_console_answer_says_no_store(world, client):
    alice = client_for(world.alice_a)
    memory_id = world.mem[("a", "alice")].public_id
    answers = [
        alice.get(reverse("console:home")),
        alice.get(reverse("console:memories")),
        alice.get(reverse("console:memories"), HTTP_HX_REQUEST="true"),  # a fragment
        alice.get(reverse("console:memory_detail", args=[memory_id])),
        alice.get(reverse("console:memory_detail", args=["mem_nothere"])),  # the neutral 404
        alice.post(reverse("console:memory_correct", args=[memory_id]), {"statement": ""}),  # a form error
        client.get(reverse("console:login")),
        client.get(reverse("console:memories")),  # the redirect to sign in
        client_for(world.admin_a).get(reverse("console:admin_keys")),
    ]
    for answer in answers:
        assert answer["Cache-Control"] == "no-store", (answer.wsgi_request.path, answer.status_code)


def test_static_files_keep_their_own_caching(client):
    assert "no-store" not in client.get("/favicon.ico").get("Cache-Control", "")
    answer = client.get("/static/css/console.css")
    assert answer.status_code == 200 and "no-store" not in answer.get("Cache-Control", "")


def test_htmx_restoring_a_history_entry_gets_the_whole_page(world):
    alice = client_for(world.alice_a)
    fragment = alice.get(reverse("console:memories"), HTTP_HX_REQUEST="true")
    restored = alice.get(reverse("console:memories"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert b"<html" not in fragment.content and b'id="memory-rows"' in fragment.content
    assert b"<html" in restored.content and b'id="memory-rows"' in restored.content


# --- A correction of a version replaced in the meantime --------------------------------------------

def test_correcting_a_replaced_version_keeps_the_text_and_points_at_the_current_one(world):
    alice = client_for(world.alice_a)
    old = world.mem[("a", "alice")]
    with as_tenant(world.tenant_a):
        current = memory_correct(tenant=world.tenant_a, memory=old, actor=ACTOR,
                                 statement="Alice of tenant A keeps her bicycle in the red shed.")
    typed = "Alice of tenant A keeps her bicycle in the green shed <b>now</b>."
    answer = alice.post(reverse("console:memory_correct", args=[old.public_id]), {"statement": typed})
    assert answer.status_code == 422
    html = answer.content.decode()
    assert "Alice of tenant A keeps her bicycle in the green shed &lt;b&gt;now&lt;/b&gt;." in html  # kept, escaped
    assert "replaced in the meantime" in html and "red shed" in html
    assert f'action="{reverse("console:memory_correct", args=[current.public_id])}"' in html
    assert 'aria-invalid="true"' in html and 'aria-describedby="statement-error"' in html
    # Nothing was written by the failed attempt; sending it on corrects the current version.
    with as_tenant(world.tenant_a):
        assert not Memory.objects.filter(statement=typed).exists()
    assert alice.post(reverse("console:memory_correct", args=[current.public_id]), {"statement": typed}).status_code == 302
    with as_tenant(world.tenant_a):
        assert Memory.objects.get(statement=typed).status == "active"


def test_a_replaced_version_of_another_person_is_still_a_neutral_404(world):
    bob = client_for(world.bob_a)
    old = world.mem[("a", "alice")]
    with as_tenant(world.tenant_a):
        memory_correct(tenant=world.tenant_a, memory=old, actor=ACTOR, statement="Alice moved the bicycle.")
    answer = bob.post(reverse("console:memory_correct", args=[old.public_id]), {"statement": "mine now"})
    assert answer.status_code == 404 and b"bicycle" not in answer.content


# --- Favicon, filter labels -----------------------------------------------------------------------

def test_favicon_is_served_from_static(client):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 200
    assert answer["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    body = b"".join(answer.streaming_content) if answer.streaming else answer.content
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO file's header


def test_pages_name_their_icon(world):
    assert b'rel="icon" href="/favicon.ico"' in client_for(world.alice_a).get(reverse("console:home")).content


def test_source_filter_uses_the_words_of_the_source_column(world):
    with as_tenant(world.tenant_a):
        write(world.tenant_a, "alice", "Alice mentioned she plays the cello.", source_kind="user")
    html = client_for(world.alice_a).get(reverse("console:memories")).content.decode()
    label = source_label("user")
    assert f'<option value="user">{label}</option>' in html
    assert f'data-label="Source">{label}</td>' in html  # the same words in the table


# --- An over-long sign-in link ------------------------------------------------------------------

def test_an_over_long_sign_in_link_gets_a_page_that_says_so(client, tenant_a):
    url, _ = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=ACTOR)
    # The link pasted together with the sentence after it, as mail clients do.
    answer = client.get(url + "Thanks-and-see-you-on-Monday" * 150)
    assert answer.status_code == 410
    assert b"longer than any sign-in link" in answer.content and b"new link" in answer.content
    assert "_auth_user_id" not in client.session
    # A link of the right shape that is unknown still gets the usual words.
    answer = client.get(reverse("console:signin_link", args=["x" * 43]))
    assert answer.status_code == 200  # shape only: the page with the button
    assert b"longer than any" not in client.post(reverse("console:signin_link", args=["x" * 43])).content


def _raw_get(port: int, path: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.slow
def test_gunicorn_lets_a_5000_character_link_reach_the_page(django_db_setup):
    from tests.conftest import running_gunicorn

    with running_gunicorn(workers=1) as port:
        answer = _raw_get(port, b"/console/link/" + b"a" * 5000)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 410 "), head[:200]
    assert b"longer than any sign-in link" in body


# --- Signing out --------------------------------------------------------------------------------

def test_signing_out_after_a_link_does_not_offer_a_password_form(client, tenant_a):
    url, _ = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=ACTOR)
    assert client.post(url).status_code == 302
    answer = client.post(reverse("console:logout"), follow=True)
    assert answer.redirect_chain[-1][0] == reverse("console:signed_out")
    html = answer.content.decode()
    assert "You are signed out" in html and "new sign-in link" in html
    assert 'type="password"' not in html
    assert "_auth_user_id" not in client.session


def test_signing_out_after_a_password_goes_back_to_the_password_form(client, world):
    assert client.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD}).status_code == 302
    answer = client.post(reverse("console:logout"), follow=True)
    assert answer.redirect_chain[-1][0] == reverse("console:login")
    assert b'type="password"' in answer.content and b"You are signed out." in answer.content
