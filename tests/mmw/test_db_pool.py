"""The web process's connection pool: configured from the environment, on only where safe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on the test settings (settings read env at import)."""
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "mmw.settings.test",
        "MMW_SECRET_KEY": "test-only",
        "MMW_DATA_DIR": os.environ.get("MMW_DATA_DIR", str(ROOT / "var" / "test")),
    }
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


pytestmark = pytest.mark.slow  # each test starts an interpreter that sets Django up

SETUP = "import django; django.setup(); from django.conf import settings as s; from django.db import connection; "


def test_pool_is_off_unless_asked() -> None:
    run = python(SETUP + "print(s.DATABASES['default'].get('OPTIONS', {}).get('pool'))")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "None"


def test_pooled_connections_are_health_checked_and_go_back_to_the_pool() -> None:
    run = python(
        SETUP
        + "print(s.DATABASES['default']['OPTIONS']['pool']['max_size'], s.DATABASES['default']['CONN_HEALTH_CHECKS']);"
        " c = connection.cursor(); c.execute('select 1'); connection.close();"
        " print(connection.pool.get_stats().get('pool_available', 0))",
        MMW_DB_POOL_MAX_SIZE="3",
    )
    assert run.returncode == 0, run.stderr
    settings_line, available = run.stdout.strip().splitlines()[-2:]
    assert settings_line == "3 True"
    assert int(available) >= 1, "the closed connection must be back in the pool, open"


def test_pool_with_persistent_connections_is_refused_at_start_up() -> None:
    run = python(SETUP, MMW_DB_POOL_MAX_SIZE="3", MMW_DB_CONN_MAX_AGE="60")
    assert run.returncode != 0
    assert "MMW_DB_CONN_MAX_AGE must be 0" in run.stderr


def test_the_asgi_entry_point_turns_the_pool_on() -> None:
    run = python(
        "import mmw.asgi; from django.conf import settings as s; print(s.DATABASES['default']['OPTIONS']['pool']['max_size'])"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "8"
