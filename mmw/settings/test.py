"""Test settings: the real embedded PostgreSQL and the machine's Redis as broker."""

from __future__ import annotations

import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent.parent
os.environ.setdefault("MMW_SECRET_KEY", "test-only-not-a-secret")
os.environ.setdefault("MMW_DATA_DIR", str(_ROOT / "var" / "test"))

from mmw.settings.base import *  # noqa: E402,F403

CELERY_BROKER_URL = os.environ.get("MMW_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
