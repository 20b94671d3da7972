"""Overload and outages on a real served app (uvicorn subprocess, pool on): fast 503s, no hang.

- A database that refuses connections (closed port) or never answers (a listening socket that
  never speaks, as a SIGSTOPped PostgreSQL): REST and MCP answer 503 with ``Retry-After``
  within 2 s, ``/healthz`` says ``database: unreachable`` within 1 s.
- A burst of 300 concurrent calls, half REST, half MCP (``tests/burst.py``), on the test
  database with the Free plan's rate limit spent (the 429s that used to starve the pool): nothing
  but 200/201, 429 / rate-limit tool errors and 503 + ``Retry-After``, nobody waits 10 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from tests.burst import run_burst
from tests.conftest import Tenancy

ROOT = Path(__file__).resolve().parents[2]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}}

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def served(log: Path, **env: str) -> Iterator[str]:
    """``uvicorn mmw.asgi:application`` (pool on, as in production) on a free port; its URL."""
    port = free_port()
    full_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mmw.settings.test",
        "MMW_DATA_DIR": str(settings.DATA_DIR),
        "MMW_TEST_BROKER_URL": str(settings.CELERY_BROKER_URL),
        "MMW_LOG_LEVEL": "WARNING",
        **env,
    }
    command = [sys.executable, "-m", "uvicorn", "mmw.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen([*command, "--lifespan", "on"], cwd=ROOT, env=full_env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.TransportError):
                httpx.get(f"{url}/healthz", timeout=2)
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the server did not start: {log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@contextlib.contextmanager
def silent_database() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (a hung PostgreSQL)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


class HangingProxy:
    """TCP on 127.0.0.1 forwarded to the test PostgreSQL's socket; ``hang()`` stops forwarding
    while every connection stays open: a database that neither answers nor fails (SIGSTOP)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.flowing = threading.Event()
        self.flowing.set()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = int(self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def hang(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.flowing.set()
        for sock in self.sockets:
            _shut(sock)

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(self.target)
                self.sockets += [client, upstream]
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                self.flowing.wait()
                sink.sendall(data)
        # One side hung up: hang up the other, so PostgreSQL ends the session of a server that
        # is gone (an open proxied session kept the test database "accessed by other users").
        _shut(source)
        _shut(sink)


def _shut(sock: socket.socket) -> None:
    """Close ``sock`` for real: ``close()`` alone does not wake a thread blocked in ``recv`` on
    it, and the kernel keeps the connection open for as long as that thread waits."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def test_a_hung_database_answers_503_by_the_deadline_and_recovers(
    transactional_db: None, tenancy: Tenancy, tmp_path: Path
) -> None:
    db = connection.settings_dict
    proxy = HangingProxy(f"{db['HOST']}/.s.PGSQL.{db['PORT'] or 5432}")
    database_url = f"postgresql://{db['USER']}@127.0.0.1:{proxy.port}/{db['NAME']}"
    auth = {"Authorization": f"Bearer {tenancy.alice.key}"}
    try:
        with served(tmp_path / "server.log", DATABASE_URL=database_url, MMW_REQUEST_DEADLINE="3") as url:
            assert httpx.get(f"{url}/api/v1/workspaces", headers=auth, timeout=10).status_code == 200
            proxy.hang()
            health, took = timed(lambda: httpx.get(f"{url}/healthz", timeout=10))
            assert health.status_code == 503, health.text
            assert took < 1.0
            assert health.json()["database"] == "unreachable"
            for _ in range(2):
                rest, took = timed(lambda: httpx.get(f"{url}/api/v1/workspaces", headers=auth, timeout=30))
                assert rest.status_code == 503, rest.text
                assert took < 3.5
                assert "retry-after" in rest.headers
                mcp, took = timed(
                    lambda: httpx.post(f"{url}/mcp", json=CALL, headers={**auth, **MCP_HEADERS}, timeout=30)
                )
                assert mcp.status_code == 503, mcp.text
                assert took < 3.5
            proxy.resume()
            deadline = time.monotonic() + 15
            while httpx.get(f"{url}/api/v1/workspaces", headers=auth, timeout=30).status_code != 200:
                assert time.monotonic() < deadline, "no recovery after the database came back"
                time.sleep(0.5)
    finally:
        proxy.close()


def timed(call: object) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    response = call()  # type: ignore[operator]
    return response, time.monotonic() - began


# A refused database is known at once (mmw.db.breaker): its 503 must not wait for the pool's
# 1.0 s timeout; a hung one can only be found out by that timeout, within the 2 s promise.
WITHIN = {"refused": 0.6, "hung": 2.0}


@pytest.mark.parametrize("failure", ["refused", "hung"])
def test_unreachable_database_answers_503_within_2_s_on_rest_and_mcp(tmp_path: Path, failure: str) -> None:
    with contextlib.ExitStack() as stack:
        port = stack.enter_context(silent_database()) if failure == "hung" else free_port()
        url = stack.enter_context(
            served(tmp_path / "server.log", DATABASE_URL=f"postgresql://mmw:mmw@127.0.0.1:{port}/mmw")
        )
        auth = {"Authorization": "Bearer mmw_notreallyakey"}
        for _ in range(3):  # again, past the breaker's 1 s window: nothing piles up behind a dead database
            health, took = timed(lambda: httpx.get(f"{url}/healthz", timeout=10))
            assert health.status_code == 503, health.text
            assert took < 1.0
            assert health.json()["database"] == "unreachable"
            rest, took = timed(lambda: httpx.get(f"{url}/api/v1/workspaces", headers=auth, timeout=10))
            assert rest.status_code == 503, rest.text
            assert took < WITHIN[failure], took
            assert rest.json()["error"]["code"] == "service_unavailable"
            assert int(rest.headers["retry-after"]) >= 1
            mcp, took = timed(lambda: httpx.post(f"{url}/mcp", json=CALL, headers={**auth, **MCP_HEADERS}, timeout=10))
            assert mcp.status_code == 503, mcp.text
            assert took < WITHIN[failure], took
            assert mcp.headers["content-type"] == "application/json"
            assert int(mcp.headers["retry-after"]) >= 1
            time.sleep(1.1)  # past the breaker's window: the next call probes, and is refused again


def spend_the_rate_limit(url: str, key: str) -> None:
    """Call until the key's per-minute limit answers 429: the burst then meets error answers
    (>= 400), the path on which Django's log_response used to wait for a thread while the view
    still held its pooled connection."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as client:
        for _ in range(500):
            if client.get("/api/v1/workspaces").status_code == 429:
                return
    pytest.fail("the Free plan's rate limit never answered 429")


SHED_WITHIN_MS = 3_000
ALLOWED = {"rest 200", "rest 201", "rest 429 retry-after", "rest 503 retry-after", "mcp 200", "mcp 503 retry-after"}


def test_a_burst_of_300_mixed_calls_gets_only_answers_or_503_and_nobody_waits_10_s(
    transactional_db: None, tenancy: Tenancy, tmp_path: Path
) -> None:
    database = str(connection.settings_dict["NAME"])
    auth = {"Authorization": f"Bearer {tenancy.alice.key}"}
    with served(tmp_path / "server.log", MMW_TEST_DATABASE_NAME=database) as url:
        seed = httpx.post(f"{url}/api/v1/memories", json={"content": "seed"}, headers=auth, timeout=30)
        assert seed.status_code == 201, seed.text
        spend_the_rate_limit(url, tenancy.alice.key)
        burst = asyncio.run(run_burst(url, tenancy.alice.key, calls=300, timeout=30, memory_id=seed.json()["id"]))
    summary = burst.summary()
    print(summary)  # shown with -s: the figures of this run
    unexpected = [o for o in burst.outcomes if o.label not in ALLOWED and o.label != "mcp 200 isError"]
    assert not unexpected, (summary, unexpected[:3])
    for outcome in burst.outcomes:  # the only tool errors allowed: the plan's rate limits
        if outcome.label == "mcp 200 isError":
            assert "rate limit exceeded" in outcome.body or "call limit exceeded" in outcome.body, outcome.body
    assert summary["max_ms"] < 10_000, summary
    # Shed load is shed fast: the 2 s of docs/reliability.md, plus slack for this client sharing two cores.
    shed = [o.ms for o in burst.outcomes if "503" in o.label]
    assert max(shed, default=0) < SHED_WITHIN_MS, summary
    admitted = sum(n for label, n in summary["counts"].items() if "503" not in label)
    assert admitted > 0, summary  # some calls were admitted and answered, not all shed
