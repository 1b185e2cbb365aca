"""Login throttling: after MAX_FAILURES failed sign-ins for one username from one address within
WINDOW seconds, that pair is refused until the window passes. Counted in the cache, so a
restart forgives; the password hasher's cost still bounds guessing."""
import hashlib

from django.core.cache import cache

MAX_FAILURES = 5
WINDOW = 300


def _key(username: str, ip: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}|{ip}".encode()).hexdigest()
    return f"console:login-failures:{digest}"


def client_ip(request) -> str:
    # Behind a proxy, the proxy should set REMOTE_ADDR (gunicorn --forwarded-allow-ips);
    # X-Forwarded-For is caller-controlled and not trusted here.
    return request.META.get("REMOTE_ADDR", "")


def login_blocked(username: str, ip: str) -> bool:
    return cache.get(_key(username, ip), 0) >= MAX_FAILURES


def login_failed(username: str, ip: str) -> None:
    key = _key(username, ip)
    if cache.add(key, 1, WINDOW):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add() and incr()
        cache.add(key, 1, WINDOW)


def login_succeeded(username: str, ip: str) -> None:
    cache.delete(_key(username, ip))
