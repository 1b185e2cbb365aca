"""One settings module, read from the environment. With no variables at all it runs on the
embedded default: a private PostgreSQL and Redis in the git-ignored data folder."""
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memoryapp import embedded
from memoryapp.env import env_bool, env_float, env_int, env_list, env_str, pg_timeout_options

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = embedded.DATA_DIR

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    # Embedded default: generated once and kept in the data folder, so sessions survive restarts.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
PUBLIC_URL = env_str("PUBLIC_URL", "").rstrip("/")

INSTALLED_APPS = [
    # memoryapp first: its `migrate` command defaults to the owner connection.
    "memoryapp",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "api",
    "console",
    "workers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "memoryapp.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.caching.ConsoleNoStoreMiddleware",
]

ROOT_URLCONF = "memoryapp.urls"
WSGI_APPLICATION = "memoryapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Databases ---------------------------------------------------------------------------
# DATABASE_URL names the owner of the schema (it runs migrations). The application itself
# connects as MEMORY_DB_APP_USER, a role without ownership or BYPASSRLS, so row-level security
# applies to every query it makes. Migrations create that role if it is missing.
# On the embedded default this process is one of the private servers' users while it runs, so a
# test run or benchmark ending beside it never stops them under it (embedded.ServersInUse).
DATABASE_URL = env_str("DATABASE_URL") or embedded.process_user().start(["postgres"])["DATABASE_URL"]
_owner = dj_database_url.parse(DATABASE_URL, conn_max_age=0)
# Django's PostgreSQL backend, aware that a tenant table's primary key in the database is
# (tenant_id, id) (memoryapp/dbbackend/base.py says what that changes).
_owner["ENGINE"] = "memoryapp.dbbackend"
_owner["CONN_HEALTH_CHECKS"] = True
_owner.setdefault("OPTIONS", {})
DB_APP_USER = env_str("MEMORY_DB_APP_USER", "memory_app")
DB_APP_PASSWORD = env_str("MEMORY_DB_APP_PASSWORD", "")
_app_options = {**_owner["OPTIONS"], "connect_timeout": env_int("DB_CONNECT_TIMEOUT", 5)}
# No JIT compilation for the application's statements: a search over a large subject passes the
# JIT's cost threshold, where compiling it cost more than it saved (PostgreSQL 15 with LLVM,
# 100,000 memories: +110 ms on ~400 ms a search). Workers' long statements (erasure's counts, the
# accesses' fold) run without it too; not measured either way.
_app_options["options"] = f"{_app_options.get('options', '')} -c jit=off".strip()
_app = {
    **_owner,
    "USER": DB_APP_USER,
    "PASSWORD": DB_APP_PASSWORD,
    "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
    # Requests and tasks run in one transaction: the tenant set for row-level security
    # with set_config(..., true) lasts exactly as long as that transaction.
    "ATOMIC_REQUESTS": True,
    # No request hangs: a statement that runs too long, or waits too long for a lock, is cancelled
    # and the request answers 503 memory_unavailable. Workers get their own, longer limits
    # (workers/celery.py applies them when a worker starts).
    "OPTIONS": pg_timeout_options(_app_options, statement_ms=env_int("DB_STATEMENT_TIMEOUT_MS", 10_000),
                                  lock_ms=env_int("DB_LOCK_TIMEOUT_MS", 5_000)),
    "TEST": {"NAME": env_str("MEMORY_TEST_DB_NAME", "") or None},
}
DB_WORKER_OPTIONS = pg_timeout_options(_app_options, statement_ms=env_int("DB_WORKER_STATEMENT_TIMEOUT_MS", 600_000),
                                       lock_ms=env_int("DB_WORKER_LOCK_TIMEOUT_MS", 60_000))
DATABASES = {
    "default": _app,
    # The owner runs migrations: none of them may be cut short (an index build on a large table
    # takes minutes), so its connections have no timeouts unless DB_OWNER_*_TIMEOUT_MS says so.
    "owner": {
        **_owner,
        "OPTIONS": pg_timeout_options(_owner["OPTIONS"], statement_ms=env_int("DB_OWNER_STATEMENT_TIMEOUT_MS", 0),
                                      lock_ms=env_int("DB_OWNER_LOCK_TIMEOUT_MS", 0)),
        "TEST": {"NAME": _app["TEST"]["NAME"], "DEPENDENCIES": []},
    },
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Broker -------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL") or f"redis+socket://{embedded.REDIS_SOCKET}"
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A publish must not hang a request when the broker is down: the outbox sweeper re-sends.
CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_connect_timeout": 1, "socket_timeout": 2}
CELERY_BROKER_CONNECTION_TIMEOUT = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)

# --- Auth, sessions, security --------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "console:login"
LOGIN_REDIRECT_URL = "console:home"
# Password sessions: a day, not Django's two weeks. Tenant admins sign in this way; a day covers a
# working day with margin, and a cookie left on a shared machine dies by the next one.
SESSION_COOKIE_AGE = env_int("CONSOLE_SESSION_SECONDS", 24 * 3600)
# Sessions opened by a sign-in link end this long after the click, whatever happens in between:
# the link proves only that someone held it for a moment, so its session is shorter.
CONSOLE_LINK_SESSION_SECONDS = env_int("CONSOLE_LINK_SESSION_SECONDS", 12 * 3600)
SESSION_COOKIE_HTTPONLY = True
# A deployment that says it is served over HTTPS gets cookies that never travel over plain HTTP;
# SECURE_COOKIES overrides that either way (e.g. TLS terminated elsewhere with an http PUBLIC_URL).
SECURE_COOKIES = env_bool("SECURE_COOKIES", PUBLIC_URL.startswith("https://"))
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES


def _proxy_ssl_header(raw: str) -> tuple[str, str] | None:
    """SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https" -> Django's ("HTTP_X_FORWARDED_PROTO",
    "https"). Unset means no proxy header is trusted: any client can send X-Forwarded-Proto, so
    only a deployment whose proxy always sets (or strips) it may name it."""
    if not raw.strip():
        return None
    name, sep, value = raw.partition(":")
    if not sep or not name.strip() or not value.strip():
        raise ImproperlyConfigured(f"SECURE_PROXY_SSL_HEADER must look like 'X-Forwarded-Proto: https', got {raw!r}")
    return "HTTP_" + name.strip().upper().replace("-", "_"), value.strip()


SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(env_str("SECURE_PROXY_SSL_HEADER", ""))
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (memoryapp/csp.py). Pages load htmx and CSS from our static files and
# run no inline script or style (base.html turns off htmx's injected indicator <style>).
SECURE_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
# Swagger UI (drf-spectacular's page at /api/docs/) starts itself with an inline script that
# carries the CSRF token, so no hash can name it, and React styles its elements inline. Only
# that page gets these; it shows no stored data.
CSP_VIEW_OVERRIDES = {
    "docs": {
        **SECURE_CSP,
        "script-src": ["'self'", "'unsafe-inline'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
    },
}
# /metrics: with a token, only `Authorization: Bearer <token>`; without one, loopback callers only.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 8 * 1024 * 1024)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True
# Files browsers ask for at the site root (/favicon.ico), served by WhiteNoise like other static files.
WHITENOISE_ROOT = BASE_DIR / "static" / "root"

# --- API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": env_str("API_THROTTLE_RATE", "6000/min")},
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Memory service API",
    "DESCRIPTION": "Long-term memory for AI agents, governable by the people it is about.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several fields share a name ("status", "kind") across objects; name each choice set once.
    "ENUM_NAME_OVERRIDES": {
        "MemoryStatusEnum": "memoryapp.models.Memory.Status",
        "EventStatusEnum": "memoryapp.models.Event.Status",
        "JobStatusEnum": "memoryapp.models.Job.Status",
        "JobKindEnum": "memoryapp.models.Job.Kind",
        "SourceKindEnum": "memoryapp.models.SourceKind",
        "MemoryTypeEnum": "memoryapp.models.Memory.Type",
        "SensitivityEnum": "memoryapp.models.Memory.Sensitivity",  # a memory's, and a read's max_sensitivity
        "HealthStatusEnum": ["ok", "unavailable"],
    },
}

# --- Shared cache -------------------------------------------------------------------------
# The API's per-key rate counts (api/throttling.py), the keys' last-used stamps and the subject
# caches live in Redis, so every web worker and every host counts against one budget (a cache per
# process gave a key N times its rate with N workers). By default the broker's server, on the next
# database number: the cache's clear() empties its whole database, which must never hold the
# broker's queues. CACHE_URL names another Redis (redis://, rediss:// or unix://).


def _cache_url(broker_url: str) -> str:
    """redis://h:6379/7 -> redis://h:6379/8; redis+socket:///path/redis.sock (database 0) ->
    unix:///path/redis.sock?db=1, the form redis-py reads."""
    parts = urlsplit(broker_url)
    if parts.scheme in ("redis+socket", "socket", "unix"):
        query = dict(parse_qsl(parts.query))
        db = int(query.pop("virtual_host", query.pop("db", "0")) or 0)
        return f"unix://{parts.path}?{urlencode({**query, 'db': db + 1})}"
    if parts.scheme in ("redis", "rediss"):
        db = int(parts.path.strip("/") or 0)
        if db >= 15:
            raise ImproperlyConfigured(f"REDIS_URL uses database {db}, the last one; set CACHE_URL for the cache")
        return urlunsplit((parts.scheme, parts.netloc, f"/{db + 1}", parts.query, ""))
    raise ImproperlyConfigured(f"set CACHE_URL: no cache database can be derived from REDIS_URL {broker_url!r}")


CACHE_URL = env_str("CACHE_URL") or _cache_url(REDIS_URL)
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": "memory",
        "OPTIONS": {
            # Redis down must not take the API down with it (events are still accepted then; the
            # outbox keeps them): cache reads and writes fail fast and are skipped, and the
            # rate limit lets requests through until Redis is back. django-redis logs each one.
            "IGNORE_EXCEPTIONS": True,
            "SOCKET_CONNECT_TIMEOUT": 1,
            "SOCKET_TIMEOUT": 1,
        },
    }
}
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True

# --- Memory behaviour ----------------------------------------------------------------------
MEMORY_EMBEDDING_BATCH_SIZE = env_int("MEMORY_EMBEDDING_BATCH_SIZE", 32)
# The model's runtime: "onnx" (ONNX Runtime, the graph exported once into DATA_DIR/models; falls
# back to torch, logged, if that fails) or "torch". The vectors are the same within 1e-3 cosine.
MEMORY_EMBEDDER = env_str("MEMORY_EMBEDDER", "onnx")
if MEMORY_EMBEDDER not in ("onnx", "torch"):
    raise ImproperlyConfigured(f"MEMORY_EMBEDDER must be 'onnx' or 'torch', not {MEMORY_EMBEDDER!r}")
# Recent texts' vectors kept per process (embeddings.embed_text); 0 turns the cache off.
MEMORY_EMBEDDING_CACHE_SIZE = env_int("MEMORY_EMBEDDING_CACHE_SIZE", 4096)
MEMORY_RECENCY_HALF_LIFE_DAYS = env_float("MEMORY_RECENCY_HALF_LIFE_DAYS", 90.0)
# The second opinion on credentials (memoryapp/credential_classifier.py): a message the rules let
# through but the classifier over its vector takes for a credential is withheld whole. The
# threshold (a probability) defaults to the one trained with it; 0 means that default.
MEMORY_CREDENTIAL_CLASSIFIER = env_bool("MEMORY_CREDENTIAL_CLASSIFIER", True)
MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD = env_float("MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD", 0.0)
if not 0 <= MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD < 1:
    raise ImproperlyConfigured(
        "MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD must be a probability below 1 (0: the trained one)")
MEMORY_SUBJECT_CAP = env_int("MEMORY_SUBJECT_CAP", 10000)
MEMORY_EXPORT_TTL_HOURS = env_int("MEMORY_EXPORT_TTL_HOURS", 24)
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL", "")
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL", "")
MEMORY_LLM_TIMEOUT = env_float("MEMORY_LLM_TIMEOUT", 20.0)
# Jobs and the outbox (services/jobs.py, services/outbox.py). A running job's worker touches the
# job every HEARTBEAT seconds from a thread of its own; a running job silent for STALE seconds
# is presumed dead and its claims go back. The sweeper runs every SWEEP seconds, so a dead
# worker's claims return within STALE + SWEEP (50 s) of its death, and a live one, however slow,
# has four heartbeats of slack. A job is given up (failed, in plain words) after MAX_ATTEMPTS.
MEMORY_JOB_HEARTBEAT_SECONDS = env_float("MEMORY_JOB_HEARTBEAT_SECONDS", 10.0)
MEMORY_JOB_STALE_SECONDS = env_float("MEMORY_JOB_STALE_SECONDS", 40.0)
MEMORY_JOB_MAX_ATTEMPTS = env_int("MEMORY_JOB_MAX_ATTEMPTS", 5)
MEMORY_OUTBOX_SWEEP_SECONDS = env_float("MEMORY_OUTBOX_SWEEP_SECONDS", 10.0)
# A queued job nobody picked up (or whose attempt failed) is published again after this long.
MEMORY_OUTBOX_REPUBLISH_SECONDS = env_float("MEMORY_OUTBOX_REPUBLISH_SECONDS", 60.0)
if not 0 < 2 * MEMORY_JOB_HEARTBEAT_SECONDS <= MEMORY_JOB_STALE_SECONDS or MEMORY_JOB_MAX_ATTEMPTS < 1:
    raise ImproperlyConfigured("MEMORY_JOB_STALE_SECONDS must be at least twice MEMORY_JOB_HEARTBEAT_SECONDS "
                               "(both positive), and MEMORY_JOB_MAX_ATTEMPTS at least 1")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The MCP SDK logs every stateless request's session start and end at INFO.
    "loggers": {"pgserver": {"level": "WARNING"}, "mcp": {"level": "WARNING"}},
}
