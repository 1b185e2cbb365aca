"""Small typed readers for the environment that fail loudly on a bad value."""
import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def pg_timeout_options(options: dict, *, statement_ms: int, lock_ms: int) -> dict:
    """`options` (a DATABASES entry's OPTIONS) with statement and lock timeouts set as libpq
    startup parameters: every connection has them from its first statement, at no round trip.
    0 means none (PostgreSQL's own meaning)."""
    for name, value in (("statement", statement_ms), ("lock", lock_ms)):
        if value < 0:
            raise ImproperlyConfigured(f"the {name} timeout must be 0 (none) or a number of milliseconds, got {value}")
    timeouts = f"-c statement_timeout={statement_ms} -c lock_timeout={lock_ms}"
    return {**options, "options": f"{options.get('options', '')} {timeouts}".strip()}
