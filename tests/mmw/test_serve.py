from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL serve and every process it started (its own session: start_new_session=True)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def wait_in_log(proc: subprocess.Popen[bytes], log: Path, text: str, timeout: float) -> float:
    """Wait until ``text`` appears in a serve's ``log``; fail with the log's tail if the process
    exits first or ``timeout`` s pass. Returns the deadline, for what the test waits on next."""
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
        time.sleep(0.1)
    return deadline


def concurrent_healthz(url: str, calls: int) -> list[int]:
    async def go() -> list[int]:
        async with httpx.AsyncClient(timeout=30) as client:
            answers = await asyncio.gather(*(client.get(url) for _ in range(calls)))
        return [a.status_code for a in answers]

    return asyncio.run(go())


@pytest.mark.slow
def test_serve_answers_healthz_and_stops_web_worker_and_beat_together(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mmw.settings.test", "MMW_PORT": str(port)}
    # To a file, not a pipe: nobody reads a pipe while the test runs, and once its 64 KiB filled
    # (a worker logging other tests' leftover tasks) the web process blocked in its access log.
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # The banner is the promise: once it is printed, the first request is answered (no
        # refused connection, no retry on one); 200 once the first database and broker
        # connections are open, which /healthz's 0.8 s deadline may not allow the very first time.
        deadline = wait_in_log(proc, log, "MMW is serving on", 120)
        status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code
        while status != 200 and time.monotonic() < deadline:
            assert status == 503, status
            time.sleep(0.3)
            status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code
        assert status == 200
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 4, "web, worker, the imports worker and beat must all be running"
        # The web process pools its connections (mmw/asgi.py): 40 concurrent database calls,
        # more than the pool holds, all answered.
        statuses = concurrent_healthz(f"http://127.0.0.1:{port}/healthz", 40)
        assert statuses == [200] * 40
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(proc)  # never leave a web server, worker or beat behind (they'd eat the test broker's tasks)
            proc.wait(timeout=30)
    output = log.read_text(errors="replace")
    assert "manage.py quickstart" in output
    for pid in children:
        assert subprocess.run(["kill", "-0", pid], capture_output=True).returncode != 0, output[-2000:]


@pytest.mark.slow  # runs manage.py serve in a process of its own
def test_serve_refuses_a_port_already_in_use() -> None:
    """Before anything starts: else uvicorn would fail to bind for ever and the banner would point
    at whatever holds the port."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mmw.settings.test"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            kill_group(proc)  # a serve that did not refuse must not outlive the test
    assert proc.returncode != 0
    assert f"127.0.0.1:{port} is already in use" in err.decode(), err.decode()[-2000:]


def test_backoff_doubles_to_a_ceiling_and_resets_after_a_stable_run() -> None:
    from accounts.management.commands.serve import Backoff

    backoff = Backoff(initial=0.5, ceiling=30.0, stable=60.0)
    assert [backoff.next_delay(uptime=1.0) for _ in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert backoff.next_delay(uptime=61.0) == 0.5


@pytest.mark.slow  # runs manage.py in a process of its own
def test_pg_status_only_reports_and_starts_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mmw.settings.base",
        "MMW_DATA_DIR": str(tmp_path),
        "MMW_SECRET_KEY": "test-only",
    }
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "pg", "status"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("stopped"), done.stdout
    assert not (tmp_path / "pg" / "PG_VERSION").exists(), "no cluster was created"
    assert not (tmp_path / "pg" / "postmaster.pid").exists(), "no server was started"
