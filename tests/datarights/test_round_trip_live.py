"""The round trip between two live servers, each on its own fresh data directory (its own
embedded PostgreSQL): export from A over REST, import into B with ``manage.py import``, export
from B over REST → the same lines apart from the header (its time)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mmw.test_serve import free_port, kill_group

ROOT = Path(__file__).resolve().parents[2]
EMAIL = "alice@example.com"


def manage(data_dir: Path, *args: str) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mmw.settings.test", "MMW_DATA_DIR": str(data_dir)}
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@contextmanager
def server(data_dir: Path) -> Iterator[str]:
    """``manage.py serve --no-worker`` on ``data_dir`` (web only: the two servers share the test
    broker, and neither must run the other's tasks); stopped with its PostgreSQL afterwards."""
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mmw.settings.test", "MMW_DATA_DIR": str(data_dir)}
    with (data_dir / "serve.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-worker", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            pytest.fail(f"serve did not start: {(data_dir / 'serve.log').read_text()[-3000:]}")
        yield url
    finally:
        kill_group(proc)
        proc.wait(timeout=30)
        manage(data_dir, "pg", "stop")


def call(url: str, key: str, method: str, path: str, body: Any = None) -> httpx.Response:
    answer = httpx.request(
        method, f"{url}/api/v1/{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
    )
    assert answer.status_code < 300, answer.text
    return answer


def fill(url: str, key: str) -> None:
    records = [{"content": f"fact number {i}", "tags": ["bulk"], "workspace": "bench"} for i in range(50)]
    call(url, key, "POST", "memories/batch", {"records": records})
    first = call(url, key, "POST", "memories", {"content": "deploys go through staging", "fact_key": "deploy"})
    call(url, key, "POST", "memories", {"content": "deploys go straight to prod", "fact_key": "deploy"})
    call(
        url,
        key,
        "POST",
        "memories",
        {"content": "a draft", "visibility": "author", "occurred_at": "2020-01-01T00:00:00Z"},
    )
    call(url, key, "DELETE", f"memories/{first.json()['id']}")
    call(url, key, "PUT", "sessions/codex/s-1", {"title": "Deploy chat"})
    turns = [{"position": i, "role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} ✓"} for i in range(6)]
    call(url, key, "POST", "sessions/codex/s-1/turns", {"turns": turns})


def body_lines(data: bytes) -> list[str]:
    lines = gzip.decompress(data).decode().splitlines()
    assert json.loads(lines[0])["type"] == "header"
    return lines[1:]


@pytest.mark.slow
def test_export_import_export_between_two_fresh_servers_gives_the_same_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    manage(a, "migrate", "--noinput")
    quick = json.loads(manage(a, "quickstart", "--email", EMAIL, "--json"))
    with server(a) as url:
        fill(url, quick["api_key"])
        first = call(url, quick["api_key"], "GET", "export").content
    export_file = tmp_path / "a.jsonl.gz"
    export_file.write_bytes(first)

    manage(b, "migrate", "--noinput")
    manage(b, "quickstart", "--email", EMAIL, "--project", "landing", "--json")  # alice's account on B
    manage(b, "import", str(export_file), "--account", EMAIL)
    again = manage(b, "import", str(export_file), "--account", EMAIL)
    assert "created: nothing" in again  # idempotent
    key_b = json.loads(manage(b, "quickstart", "--email", EMAIL, "--project", "default", "--json"))["api_key"]
    with server(b) as url:
        second = call(url, key_b, "GET", "export").content
    assert len(body_lines(first)) > 60
    assert body_lines(second) == body_lines(first)
