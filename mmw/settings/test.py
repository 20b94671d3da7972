"""Test settings: the real embedded PostgreSQL and the machine's Redis as broker."""

from __future__ import annotations

import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent.parent
os.environ.setdefault("MMW_SECRET_KEY", "test-only-not-a-secret")
os.environ.setdefault("MMW_DATA_DIR", str(_ROOT / "var" / "test"))

from mmw.settings.base import *  # noqa: E402,F403

# Each pytest-xdist worker (gw0, gw1, ...) has a Redis database of its own, 15 counting down, as
# it has a test database of its own: a Celery worker one of them starts must not take the other's
# tasks (their records are not in its database). Processes a test starts inherit
# PYTEST_XDIST_WORKER, so they land on the same one; MMW_TEST_BROKER_URL, when set, wins. Taken:
# 15 down to 4 (twelve workers; more share), 2 (tests/mmw/test_task_logs.py); the docs' commands
# that may run beside `make test` use 3.
_XDIST_INDEX = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
CELERY_BROKER_URL = os.environ.get("MMW_TEST_BROKER_URL") or f"redis://127.0.0.1:6379/{15 - _XDIST_INDEX % 12}"
MMW_WARM_MODELS = False  # tests pick their model per test; loading the default in the background only costs CPU
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# A Celery worker started by tests/worker.py writes its e-mails as files there (tests read them
# with CeleryWorker.emails()); pytest-django's own process keeps the in-memory outbox.
if os.environ.get("MMW_TEST_EMAIL_DIR"):
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = os.environ["MMW_TEST_EMAIL_DIR"]
# A Celery worker started by tests/worker.py uses pytest-django's test database; a killed worker's
# unacknowledged task comes back after seconds, not the default hour.
DATABASES["default"]["NAME"] = os.environ.get("MMW_TEST_DATABASE_NAME", DATABASES["default"]["NAME"])  # noqa: F405
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 5,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
# Tests change plans and subscriptions with QuerySet.update() (as another process would, no signal)
# and expect the very next call to see it; billing.state_cache's own tests turn the cache on.
MMW_BILLING_CACHE_SECONDS = 0.0
