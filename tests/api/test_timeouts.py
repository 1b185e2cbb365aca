"""No request hangs: every connection the application opens has a statement and a lock timeout
(workers longer ones, the migrating owner none), and a request that runs into one answers 503
memory_unavailable within it, instead of waiting for whoever holds the lock."""
import time

import pytest
from django.conf import settings
from django.db import connections

from memoryapp.env import pg_timeout_options
from memoryapp.models import Memory, Subject
from tests.api.conftest import assert_error, post, write
from tests.conftest import as_tenant

# Transactional where another session must see committed rows, or a connection is reopened.
blocking = pytest.mark.django_db(transaction=True, databases=["default", "owner"])

# Short, and far apart: a request that waited for the lock once answers after LOCK_MS, one that
# retried would take a multiple of it, and the statement timeout never fires first.
LOCK_MS = 1000
STATEMENT_MS = 20_000


def _show(alias, name):
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return cursor.fetchone()[0]


@pytest.fixture
def short_timeouts():
    """The application's connection reopened with short timeouts, as DB_*_TIMEOUT_MS would set."""
    conn = connections["default"]
    configured = conn.settings_dict["OPTIONS"]
    conn.close()
    conn.settings_dict["OPTIONS"] = pg_timeout_options(configured, statement_ms=STATEMENT_MS, lock_ms=LOCK_MS)
    yield
    conn.close()
    conn.settings_dict["OPTIONS"] = configured


@pytest.mark.django_db(databases=["default", "owner"])
def test_every_application_connection_has_timeouts_and_the_owner_has_none():
    assert _show("default", "statement_timeout") == "10s" and _show("default", "lock_timeout") == "5s"
    assert _show("owner", "statement_timeout") == "0" and _show("owner", "lock_timeout") == "0"
    assert "statement_timeout=600000" in settings.DB_WORKER_OPTIONS["options"]


@blocking
def test_a_worker_process_connects_with_the_worker_timeouts():
    from workers.celery import _worker_db_timeouts

    conn = connections["default"]
    configured = conn.settings_dict["OPTIONS"]
    try:
        _worker_db_timeouts()
        assert _show("default", "statement_timeout") == "10min" and _show("default", "lock_timeout") == "1min"
    finally:
        conn.close()
        conn.settings_dict["OPTIONS"] = configured


def test_a_bad_timeout_fails_loudly():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        pg_timeout_options({}, statement_ms=-1, lock_ms=0)


def _held_by_owner(sql, params):
    """Another session (the owner's connection) takes a lock and keeps it until released."""
    owner = connections["owner"]
    owner.set_autocommit(False)
    with owner.cursor() as cursor:
        cursor.execute(sql, params)
    return owner


def _release(owner):
    owner.rollback()
    owner.set_autocommit(True)


@blocking
def test_a_write_waiting_on_a_held_row_lock_answers_503_within_the_lock_timeout(
        client_a, client_b, tenant_a, short_timeouts):
    write(client_a, "alice", "I like green tea.")
    with as_tenant(tenant_a):
        alice = Subject.objects.get(tenant=tenant_a, external_id="alice").pk
    owner = _held_by_owner("SELECT 1 FROM memoryapp_subject WHERE id = %s FOR UPDATE", [alice])
    try:
        started = time.monotonic()
        response = post(client_a, "subjects/alice/memories", {"statement": "I like black coffee."})
        elapsed = time.monotonic() - started
        assert_error(response, 503, "memory_unavailable")
        assert LOCK_MS / 1000 <= elapsed < LOCK_MS / 1000 * 3, elapsed  # one wait, not one per attempt
        # Nobody else waits on alice's lock: another subject and another tenant write as usual.
        write(client_a, "bob", "I like black coffee.")
        write(client_b, "alice", "I like black coffee.")
    finally:
        _release(owner)
    with as_tenant(tenant_a):
        assert list(Memory.objects.filter(subject_id=alice).values_list("statement", flat=True)) == [
            "I like green tea."]  # the timed-out write left nothing
    write(client_a, "alice", "I like black coffee.")  # the lock is gone: writes go through again


@blocking
def test_a_search_behind_a_table_lock_answers_503_within_the_timeout(client_a, short_timeouts):
    write(client_a, "alice", "I like green tea.")
    owner = _held_by_owner("LOCK TABLE memoryapp_memory IN ACCESS EXCLUSIVE MODE", [])
    try:
        started = time.monotonic()
        response = post(client_a, "subjects/alice/search", {"query": "What do I like?"})
        elapsed = time.monotonic() - started
    finally:
        _release(owner)
    assert_error(response, 503, "memory_unavailable")
    assert LOCK_MS / 1000 <= elapsed < LOCK_MS / 1000 * 3, elapsed


@blocking
def test_a_console_page_behind_a_table_lock_answers_503_within_the_timeout(client_a, tenant_a, short_timeouts):
    from django.test import Client
    from django.urls import reverse

    from memoryapp.services.signin import console_subject_user_get_or_create

    write(client_a, "alice", "I like green tea.")
    console = Client()
    console.force_login(console_subject_user_get_or_create(tenant=tenant_a, subject_ref="alice"))
    owner = _held_by_owner("LOCK TABLE memoryapp_memory IN ACCESS EXCLUSIVE MODE", [])
    try:
        started = time.monotonic()
        response = console.get(reverse("console:memories"))
        elapsed = time.monotonic() - started
    finally:
        _release(owner)
    assert response.status_code == 503 and b"briefly unavailable" in response.content
    assert LOCK_MS / 1000 <= elapsed < LOCK_MS / 1000 * 3, elapsed
    assert console.get(reverse("console:memories")).status_code == 200  # and it answers again


@pytest.mark.django_db(databases=["default", "owner"])
def test_application_statements_are_never_jit_compiled():
    # A search over a large subject passes the JIT's cost threshold, where compiling it cost more
    # than it saved (docs/benchmarks.md, issue 16); the owner's migrations keep the server's choice.
    assert _show("default", "jit") == "off"
    assert "jit=off" in settings.DB_WORKER_OPTIONS["options"]
