"""``make run``'s printed next step works as printed (issue #40, item 2): the ``quickstart`` line
carries the data directory, host, port and public URL serve was given, names secrets without
printing them, and the one-time sign-in link it prints opens the dashboard of the server it
belongs to."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from accounts.management.commands.serve import quickstart_command
from tests.mmw.test_serve import free_port, kill_group, wait_in_log

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ".venv/bin/python manage.py quickstart --email you@example.com"


def test_on_the_defaults_the_line_is_the_readme_s(settings: Any) -> None:
    settings.DATA_DIR = settings.BASE_DIR / "var"
    assert quickstart_command("127.0.0.1", 8000, {"MMW_DATA_DIR": str(settings.BASE_DIR / "var")}) == f"  {QUICKSTART}"


def test_a_data_dir_port_and_public_url_are_carried(settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path / "my data"
    environ = {"MMW_DATA_DIR": "my data", "MMW_PORT": "9000", "MMW_PUBLIC_URL": "http://mmw.local:9000"}
    line = quickstart_command("127.0.0.1", 9000, environ)
    assert (
        line == f"  MMW_DATA_DIR='{tmp_path}/my data' MMW_PORT=9000 MMW_PUBLIC_URL=http://mmw.local:9000 {QUICKSTART}"
    )


def test_a_port_given_on_the_command_line_is_carried_too(settings: Any) -> None:
    settings.DATA_DIR = settings.BASE_DIR / "var"
    assert quickstart_command("0.0.0.0", 8123, {}) == f"  MMW_HOST=0.0.0.0 MMW_PORT=8123 {QUICKSTART}"  # noqa: S104


def test_secrets_are_named_never_printed(settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path  # no secret_key file here: quickstart needs MMW_SECRET_KEY
    environ = {"DATABASE_URL": "postgres://mmw:s3cret@db:5432/mmw", "MMW_SECRET_KEY": "k3y"}
    line = quickstart_command("127.0.0.1", 8000, environ)
    assert "s3cret" not in line
    assert "k3y" not in line
    assert 'MMW_SECRET_KEY="$MMW_SECRET_KEY" DATABASE_URL="$DATABASE_URL"' in line
    assert "with MMW_SECRET_KEY and DATABASE_URL set in that terminal as they are here" in line
    (tmp_path / "secret_key").write_text("from make run")
    peer = quickstart_command("127.0.0.1", 8000, {"DATABASE_URL": "postgres:///mmw", "MMW_SECRET_KEY": "k3y"})
    assert peer == f"  MMW_DATA_DIR={tmp_path} DATABASE_URL=postgres:///mmw {QUICKSTART}"


@contextlib.contextmanager
def serving(data_dir: Path, port: int) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``make run`` with ``MMW_DATA_DIR`` and ``MMW_PORT`` set: the secret, migrate, serve."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMW_", "DJANGO_", "DATABASE_URL"))}
    env |= {"MMW_DATA_DIR": str(data_dir), "MMW_PORT": str(port), "MMW_WARM_MODELS": "0"}
    (data_dir / "secret_key").write_text("a-secret-make-run-wrote")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    log = data_dir / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-worker"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc, log
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait(timeout=30)
        subprocess.run([sys.executable, "manage.py", "pg", "stop"], cwd=ROOT, env=env, check=False, timeout=60)


@pytest.mark.slow  # a fresh data directory: its own PostgreSQL, migrations and server
def test_make_run_with_a_data_dir_and_a_port_prints_a_quickstart_that_works_in_a_fresh_terminal() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="mmw-run-"))  # short: the database's socket lives there
    port = free_port()
    try:
        with serving(data_dir, port) as (proc, log):
            wait_in_log(proc, log, "--email you@example.com", 180)
            printed = re.search(r"^  (.*manage\.py quickstart.*)$", log.read_text(), re.MULTILINE)
            assert printed is not None
            fresh = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}  # another terminal
            done = subprocess.run(
                ["bash", "-c", printed.group(1)], cwd=ROOT, env=fresh, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, done.stderr[-3000:]
            assert f"claude mcp add --transport http mmw http://127.0.0.1:{port}/mcp" in done.stdout
            link = re.search(rf"Dashboard:  (http://127\.0\.0\.1:{port}/sign-in/\S+/)", done.stdout)
            assert link is not None, done.stdout
            answer = httpx.get(link.group(1), timeout=30)
            assert answer.status_code == 200
            assert "signs you in as <strong>you@example.com</strong>" in answer.text
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
