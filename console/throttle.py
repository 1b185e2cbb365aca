"""Login throttling: after MAX_FAILURES failed sign-ins for one username from one address within
WINDOW seconds of the first, that pair is refused until the window passes.

Counted in a database table (console.LoginFailure), not a per-process cache: with N web workers
a cache count gave N times the attempts. A small table of our own rather than django-axes: the
view keeps its own message and 429, no authentication backend or middleware changes, and no
log of usernames and addresses is kept. Times come from the database's clock, which every
process shares (clock_timestamp(), since now() is when the request's transaction began).
These functions assume that transaction (ATOMIC_REQUESTS): it holds the row lock below."""
import hashlib

from django.db import connection

from console.models import LoginFailure

MAX_FAILURES = 5
# Failures from one address across all usernames: trying many accounts is guessing too.
MAX_ADDRESS_FAILURES = 20
WINDOW = 300
# Expired rows are swept a bounded batch at a time, by failed sign-ins, so the table holds about
# one window's worth of failures without a scheduled job.
SWEEP_BATCH = 500

TABLE = LoginFailure._meta.db_table
FRESH = f"{TABLE}.window_started_at > clock_timestamp() - make_interval(secs => %s)"


def _key(username: str, ip: str) -> str:
    return hashlib.sha256(f"{username.strip().lower()}|{ip}".encode()).hexdigest()


def _address_key(ip: str) -> str:
    return hashlib.sha256(f"\x00any-user|{ip}".encode()).hexdigest()


def client_ip(request) -> str:
    # Behind a proxy, the proxy should set REMOTE_ADDR (gunicorn --forwarded-allow-ips);
    # X-Forwarded-For is caller-controlled and not trusted here.
    return request.META.get("REMOTE_ADDR", "")


def login_blocked(username: str, ip: str) -> bool:
    """Whether the pair, or the address across all usernames, has used up its failures. Also
    takes their row locks until the request's transaction ends, so concurrent attempts are
    judged one after another and a burst cannot all pass this check before the first failure
    is counted."""
    return (_count(_key(username, ip)) >= MAX_FAILURES) | (_count(_address_key(ip)) >= MAX_ADDRESS_FAILURES)


def _count(key: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {TABLE} (key, failures, window_started_at) VALUES (%s, 0, clock_timestamp())
                ON CONFLICT (key) DO UPDATE SET
                    failures = CASE WHEN {FRESH} THEN {TABLE}.failures ELSE 0 END,
                    window_started_at = CASE WHEN {FRESH} THEN {TABLE}.window_started_at ELSE clock_timestamp() END
                RETURNING failures""",
            [key, WINDOW, WINDOW],
        )
        return cursor.fetchone()[0]


def login_failed(username: str, ip: str) -> None:
    with connection.cursor() as cursor:
        for key in (_key(username, ip), _address_key(ip)):
            cursor.execute(
                f"""INSERT INTO {TABLE} (key, failures, window_started_at) VALUES (%s, 1, clock_timestamp())
                    ON CONFLICT (key) DO UPDATE SET
                        failures = CASE WHEN {FRESH} THEN {TABLE}.failures + 1 ELSE 1 END,
                        window_started_at = CASE WHEN {FRESH} THEN {TABLE}.window_started_at
                                                 ELSE clock_timestamp() END""",
                [key, WINDOW, WINDOW],
            )
        # SKIP LOCKED: never wait on a row another sign-in is deciding about.
        cursor.execute(
            f"""DELETE FROM {TABLE} WHERE key IN (
                    SELECT key FROM {TABLE} WHERE NOT ({FRESH}) LIMIT %s FOR UPDATE SKIP LOCKED)""",
            [WINDOW, SWEEP_BATCH],
        )


def login_succeeded(username: str, ip: str) -> None:
    LoginFailure.objects.filter(key=_key(username, ip)).delete()
