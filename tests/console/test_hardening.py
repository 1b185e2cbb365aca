"""What a security probe asked of the console: a Content-Security-Policy that pages really live
under, bounded sessions, cookies that stay on HTTPS, sign-in links that only a person's click
uses up, and a sign-in lockout that holds across web processes."""
import http.client
import re
import runpy
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console import throttle
from console.models import LoginFailure
from memoryapp.models import Job, SignInLink
from tests.conftest import as_tenant, gunicorn_errors, gunicorn_process, gunicorn_workers, served_by
from tests.console.conftest import ACTOR, PASSWORD, account, client_for

pytestmark = pytest.mark.django_db

SETTINGS_FILE = Path(__file__).resolve().parents[2] / "memoryapp" / "settings.py"


def csp_of(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {name: sources for name, *sources in (part.split() for part in header.split(";") if part.strip())}


def new_link(tenant, subject_ref="alice") -> str:
    from memoryapp.services.signin import signin_link_create

    return signin_link_create(tenant=tenant, subject_ref=subject_ref, actor=ACTOR)[0]


# --- Content-Security-Policy ---------------------------------------------------------------

def test_console_pages_carry_a_strict_content_security_policy(world):
    for response in (Client().get(reverse("console:login")), client_for(world.alice_a).get(reverse("console:home"))):
        policy = csp_of(response)
        assert policy["default-src"] == ["'self'"]
        assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
        assert policy["frame-ancestors"] == ["'none'"] and policy["form-action"] == ["'self'"]
        assert policy["base-uri"] == ["'none'"] and policy["object-src"] == ["'none'"]
        assert "'unsafe-eval'" not in response["Content-Security-Policy"]


def test_pages_have_no_inline_style_or_script_the_policy_would_block(world):
    client = client_for(world.alice_a)
    client.post(reverse("console:data_erase"), {"confirm": "erase"})
    with as_tenant(world.tenant_a):
        job = Job.objects.get(kind="deletion")
        Job.objects.filter(pk=job.pk).update(progress_done=1, progress_total=3)
    pages = [reverse("console:home"), reverse("console:memories"), reverse("console:data"),
             reverse("console:job", args=[job.public_id])]
    for url in pages:
        html = client.get(url).content.decode()
        assert " style=" not in html and "<style" not in html, url
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), url  # every script is a file of ours
    job_page = client.get(reverse("console:job", args=[job.public_id])).content.decode()
    assert '<progress class="progress" max="100" value="33"' in job_page


def test_htmx_is_told_not_to_inject_its_indicator_style_or_eval():
    html = Client().get(reverse("console:login")).content.decode()
    config = re.search(r'<meta name="htmx-config" content=\'([^\']*)\'', html).group(1)
    assert '"includeIndicatorStyles":false' in config and '"allowEval":false' in config


def test_only_the_swagger_page_gets_the_relaxed_policy():
    docs = csp_of(Client().get("/api/docs/"))
    assert "'unsafe-inline'" in docs["script-src"] and docs["frame-ancestors"] == ["'none'"]
    assert docs["object-src"] == ["'none'"] and "'unsafe-eval'" not in docs["script-src"]
    for url in ("/api/schema/?format=json", "/api/v1/health", reverse("console:login")):
        assert "'unsafe-inline'" not in Client().get(url)["Content-Security-Policy"], url


# --- Sessions --------------------------------------------------------------------------------

def test_a_link_session_ends_after_the_link_bound_not_two_weeks(tenant_a, client):
    url = new_link(tenant_a)
    client.post(url)
    bound = django_settings.CONSOLE_LINK_SESSION_SECONDS
    assert bound <= 12 * 3600
    assert bound - 60 < client.session.get_expiry_age() <= bound
    assert 0 < int(client.cookies[django_settings.SESSION_COOKIE_NAME]["max-age"]) <= bound


def test_a_link_session_end_does_not_move_when_the_session_changes(tenant_a, client, settings):
    settings.CONSOLE_LINK_SESSION_SECONDS = 600
    client.post(new_link(tenant_a))
    session = client.session
    ends = session.get_expiry_date()
    session["something"] = "changed later"
    session.save()
    assert client.session.get_expiry_date() == ends


def test_a_password_session_is_bounded_to_a_day(world, client):
    client.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD})
    assert django_settings.SESSION_COOKIE_AGE <= 24 * 3600
    assert client.session.get_expiry_age() <= 24 * 3600
    assert int(client.cookies[django_settings.SESSION_COOKIE_NAME]["max-age"]) <= 24 * 3600


# --- Cookies over HTTPS ------------------------------------------------------------------------

def settings_with(monkeypatch, **env) -> dict:
    """The settings module evaluated afresh under `env`, without touching the running settings."""
    monkeypatch.setenv("DATABASE_URL", django_settings.DATABASE_URL)  # never start another server
    monkeypatch.setenv("SECRET_KEY", "x" * 50)
    for name in ("PUBLIC_URL", "SECURE_COOKIES", "SECURE_PROXY_SSL_HEADER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS_FILE))


@pytest.mark.parametrize("env, secure", [
    ({"PUBLIC_URL": "https://memory.example.com"}, True),
    ({"PUBLIC_URL": "http://localhost:8000"}, False),
    ({}, False),
    ({"PUBLIC_URL": "https://memory.example.com", "SECURE_COOKIES": "false"}, False),
    ({"PUBLIC_URL": "http://internal:8000", "SECURE_COOKIES": "true"}, True),
])
def test_cookies_are_secure_when_the_deployment_says_https(monkeypatch, env, secure):
    values = settings_with(monkeypatch, **env)
    assert values["SESSION_COOKIE_SECURE"] is secure and values["CSRF_COOKIE_SECURE"] is secure


def test_a_forwarded_proto_header_is_trusted_only_when_named(monkeypatch):
    assert settings_with(monkeypatch)["SECURE_PROXY_SSL_HEADER"] is None
    named = settings_with(monkeypatch, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https")
    assert named["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    with pytest.raises(ImproperlyConfigured):
        settings_with(monkeypatch, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto")


def test_without_the_setting_a_forwarded_proto_header_does_not_make_a_request_secure(client):
    response = client.get(reverse("console:login"), HTTP_X_FORWARDED_PROTO="https")
    assert response.wsgi_request.is_secure() is False


# --- Sign-in links: a GET shows a button, only its POST signs in --------------------------------

def test_opening_a_link_neither_signs_in_nor_uses_it_up(tenant_a, client):
    url = new_link(tenant_a)
    for _ in range(3):  # a mail scanner, a preview, the person
        page = client.get(url)
        assert page.status_code == 200 and b"Continue to your memories" in page.content
        assert page["Cache-Control"] == "no-store"
    assert "_auth_user_id" not in client.session
    with as_tenant(tenant_a):
        assert SignInLink.objects.get().used_at is None
    assert client.post(url).status_code == 302 and "_auth_user_id" in client.session


def test_the_continue_button_posts_with_the_csrf_token(tenant_a):
    url = new_link(tenant_a)
    browser = Client(enforce_csrf_checks=True)
    html = browser.get(url).content.decode()
    assert f'<form method="post" action="{url}">' in html
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    response = browser.post(url, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == reverse("console:home")


def test_another_site_cannot_post_a_link_for_the_visitor(tenant_a):
    url = new_link(tenant_a)
    forged = Client(enforce_csrf_checks=True).post(url)  # no CSRF cookie or token: login CSRF
    assert forged.status_code == 403
    with as_tenant(tenant_a):
        assert SignInLink.objects.get().used_at is None


def test_opening_an_unknown_link_looks_like_opening_a_real_one(tenant_a, client):
    real = client.get(new_link(tenant_a))
    unknown = client.get("/console/link/" + "A" * 43)
    assert real.status_code == unknown.status_code == 200
    assert [t.name for t in real.templates] == [t.name for t in unknown.templates]
    assert client.post("/console/link/" + "A" * 43).status_code == 410


def test_a_malformed_link_is_refused_without_a_button(client):
    response = client.get("/console/link/not a token!")
    assert response.status_code == 410 and b"invalid or has been used" in response.content


# --- Sign-in lockout shared by every web process -------------------------------------------------

def fail(client, username="alice@a.example", times=1):
    for _ in range(times):
        client.post(reverse("console:login"), {"username": username, "password": "wrong"})


def test_failures_are_counted_in_the_database_not_the_process_cache(world, client):
    fail(client, times=5)
    # Another worker (or a restart) has an empty cache of its own; the lockout must still hold.
    cache.clear()
    blocked = client.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD})
    assert blocked.status_code == 429 and b"Too many failed sign-ins" in blocked.content
    row = LoginFailure.objects.get(key=throttle._key("alice@a.example", "127.0.0.1"))
    assert row.failures == 5 and "alice" not in row.key and "127.0.0.1" not in row.key


def _sign_in_over_http(port: int, password: str) -> int:
    csrf = "c" * 32  # a cookie secret of our own, echoed in the form as Django's CSRF check wants
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/console/login/",
                           urlencode({"username": "alice@a.example", "password": password, "csrfmiddlewaretoken": csrf}),
                           {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}",
                            "Connection": "close"})
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_two_web_workers_share_one_lockout(tenant_a):
    """A probe once got ten attempts with two workers: each counted five of its own."""
    account(tenant_a, "alice@a.example", subject_ref="alice")
    with gunicorn_process(workers=2, ready_timeout=60) as (port, master):
        first, second = gunicorn_workers(master, 2)
        statuses = []
        for pid, times in ((first, 3), (second, 2)):
            with served_by(pid, [first, second]):
                statuses += [_sign_in_over_http(port, "wrong") for _ in range(times)]
        for pid in (first, second):
            with served_by(pid, [first, second]):
                statuses.append(_sign_in_over_http(port, PASSWORD))  # the right one, too late
    assert statuses == [400] * 5 + [429, 429], (statuses, gunicorn_errors())


def test_the_lockout_ends_when_its_window_passes(world, client):
    fail(client, times=5)
    LoginFailure.objects.update(window_started_at=timezone.now() - timedelta(seconds=throttle.WINDOW + 1))
    response = client.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD})
    assert response.status_code == 302
    assert not LoginFailure.objects.filter(key=throttle._key("alice@a.example", "127.0.0.1")).exists()  # forgotten


def test_a_new_window_counts_from_one(world, client):
    fail(client, times=4)
    LoginFailure.objects.update(window_started_at=timezone.now() - timedelta(seconds=throttle.WINDOW + 1))
    fail(client)
    assert LoginFailure.objects.get(key=throttle._key("alice@a.example", "127.0.0.1")).failures == 1


def test_expired_failures_of_other_pairs_are_swept(world, client):
    LoginFailure.objects.create(key="0" * 64, failures=3,
                                window_started_at=timezone.now() - timedelta(seconds=throttle.WINDOW + 1))
    fail(client)
    assert not LoginFailure.objects.filter(key="0" * 64).exists()
    assert LoginFailure.objects.get(key=throttle._key("alice@a.example", "127.0.0.1")).failures == 1


def test_an_address_trying_many_accounts_is_locked_out_too(world):
    guesser = Client(REMOTE_ADDR="192.0.2.9")
    for n in range(throttle.MAX_ADDRESS_FAILURES):
        fail(guesser, username=f"nobody{n}@a.example")  # never 5 on one account
    response = guesser.post(reverse("console:login"), {"username": "alice@a.example", "password": PASSWORD})
    assert response.status_code == 429
    other = Client(REMOTE_ADDR="192.0.2.10").post(reverse("console:login"),
                                                  {"username": "alice@a.example", "password": PASSWORD})
    assert other.status_code == 302


def test_one_address_locked_out_does_not_lock_out_another(world):
    fail(Client(REMOTE_ADDR="192.0.2.1"), times=5)
    other = Client(REMOTE_ADDR="192.0.2.2").post(reverse("console:login"),
                                                 {"username": "alice@a.example", "password": PASSWORD})
    assert other.status_code == 302
