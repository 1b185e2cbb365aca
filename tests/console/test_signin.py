"""Signing in: single-use links minted for a subject (opened with a GET, used up by the POST of
the page it shows), passwords with throttling, and the create_console_user command."""
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from memoryapp.models import AuditEntry, ConsoleAccount, SignInLink
from memoryapp.services.signin import signin_link_consume, signin_link_create, token_hash
from tests.conftest import as_tenant
from tests.console.conftest import ACTOR, PASSWORD, SECRET_TEXT

pytestmark = pytest.mark.django_db


def test_link_stores_only_the_token_hash_and_expires_within_15_minutes(tenant_a):
    url, expires_at = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=ACTOR)
    token = url.rsplit("/", 1)[-1]
    assert url.startswith("/console/link/")
    assert timedelta(minutes=14) < expires_at - timezone.now() <= timedelta(minutes=15)
    with as_tenant(tenant_a):
        link = SignInLink.objects.get()
        assert link.token_hash == token_hash(token) and token not in link.token_hash
        assert AuditEntry.objects.filter(action="console_link_created", subject_ref="alice").exists()


def test_link_is_single_use(tenant_a):
    url, _ = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=ACTOR)
    token = url.rsplit("/", 1)[-1]
    assert signin_link_consume(token) == (tenant_a.pk, "alice")
    assert signin_link_consume(token) is None


def test_expired_or_unknown_link_is_refused(tenant_a):
    url, _ = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=ACTOR)
    with as_tenant(tenant_a):
        SignInLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert signin_link_consume(url.rsplit("/", 1)[-1]) is None
    assert signin_link_consume("not-a-token") is None
    assert signin_link_consume("") is None


def test_link_opens_the_console_as_that_subject_and_only_that_subject(world, client):
    url, _ = signin_link_create(tenant=world.tenant_b, subject_ref="alice", actor=ACTOR)
    page = client.get(url)
    assert page.status_code == 200 and b"Continue to your memories" in page.content
    assert "_auth_user_id" not in client.session
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == reverse("console:home")
    # Tenant B's Alice already has an account: the link opens that one rather than a second.
    account = ConsoleAccount.objects.get(tenant=world.tenant_b, subject_ref="alice")
    assert client.session["_auth_user_id"] == str(account.user_id) and not account.is_admin
    html = client.get(reverse("console:memories")).content.decode()
    assert SECRET_TEXT[("b", "alice")] in html and SECRET_TEXT[("a", "alice")] not in html
    again = client.post(url)
    assert again.status_code == 410 and b"no longer works" in again.content


def test_second_link_for_the_same_subject_reuses_the_account(tenant_a, client):
    for _ in range(2):
        url, _ = signin_link_create(tenant=tenant_a, subject_ref="dave", actor=ACTOR)
        client.post(url)
    assert ConsoleAccount.objects.filter(tenant=tenant_a, subject_ref="dave").count() == 1


def test_very_long_subject_ids_get_a_valid_username(tenant_a, client):
    subject = "s" * 200
    url, _ = signin_link_create(tenant=tenant_a, subject_ref=subject, actor=ACTOR)
    assert client.post(url).status_code == 302
    account = ConsoleAccount.objects.get(subject_ref=subject)
    assert len(account.user.username) <= 150


def test_password_login_and_logout(world, client):
    response = client.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD})
    assert response.status_code == 302
    assert SECRET_TEXT[("a", "alice")] in client.get(reverse("console:memories")).content.decode()
    client.post(reverse("console:logout"))
    assert client.get(reverse("console:memories")).status_code == 302


def test_wrong_password_is_an_error_not_a_500(world, client):
    response = client.post(reverse("console:login"), {"username": "alice@a.example", "password": "nope"})
    assert response.status_code == 400 and b"Please enter a correct" in response.content


def test_login_is_throttled_after_five_failures(world, client):
    for _ in range(5):
        client.post(reverse("console:login"), {"username": "alice@a.example", "password": "wrong"})
    blocked = client.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD})
    assert blocked.status_code == 429 and b"Too many failed sign-ins" in blocked.content
    # Another account from the same address is not locked out by Alice's failures.
    other = client.post(reverse("console:login"), {"username": "bob@a.example", "password": PASSWORD})
    assert other.status_code == 302


def test_login_redirects_only_to_this_site(world, client):
    evil = client.post(reverse("console:login") + "?next=https://evil.example/",
                       {"username": "alice@a.example", "password": PASSWORD, "next": "https://evil.example/"})
    assert evil["Location"] == reverse("console:home")


def test_create_console_user_command(tenant_a, capsys):
    call_command("create_console_user", "--tenant", tenant_a.slug, "--admin", "--email", "root@a.example",
                 "--password", "a long enough password")
    call_command("create_console_user", "--tenant", tenant_a.slug, "--subject", "alice", "--email", "al@a.example")
    out = capsys.readouterr().out
    assert "Created root@a.example (admin)" in out and "Password: " in out
    assert ConsoleAccount.objects.get(user__username="root@a.example").is_admin
    assert ConsoleAccount.objects.get(user__username="al@a.example").subject_ref == "alice"


def test_create_console_user_refuses_unknown_tenant_and_weak_password(tenant_a):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No tenant"):
        call_command("create_console_user", "--tenant", "nope", "--admin", "--email", "x@x", "--password", "x" * 20)
    with pytest.raises(CommandError, match="too short"):
        call_command("create_console_user", "--tenant", tenant_a.slug, "--admin", "--email", "x@x", "--password", "ab")
