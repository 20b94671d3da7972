"""A tiny stand-in for the session routes, for the sync client's progress and resume
logic only: it stores turns by position and can be told to fail (503) after N turn batches."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote


class FakeSessions:
    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], dict[str, Any]] = {}
        self.turns: dict[tuple[str, str], dict[int, tuple[str, str]]] = {}
        self.turn_posts = 0
        self.fail_after: int | None = None  # answer 503 to turn batches after this many
        self.consents: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def all_turns(self) -> int:
        return sum(len(t) for t in self.turns.values())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

            def _session(self) -> tuple[str, str] | None:
                parts = self.path.split("/")
                if len(parts) >= 6 and parts[3] == "sessions":
                    return unquote(parts[4]), unquote(parts[5])
                return None

            def do_GET(self) -> None:
                self._reply(200, {"workspaces": [], "tenant_id": "t-fake", "project_id": "p-fake"})

            def do_PUT(self) -> None:
                key = self._session()
                assert key is not None
                with fake.lock:
                    fake.sessions.setdefault(key, {}).update(self._body())
                    fake.turns.setdefault(key, {})
                self._reply(200, {"session": {}})

            def do_POST(self) -> None:
                if self.path.endswith("/agent/consent"):
                    fake.consents.append(self._body())
                    self._reply(201, {})
                    return
                key = self._session()
                assert key is not None
                body = self._body()
                with fake.lock:
                    if fake.fail_after is not None and fake.turn_posts >= fake.fail_after:
                        self._reply(503, {"error": {"code": "unavailable", "message": "down"}})
                        return
                    fake.turn_posts += 1
                    stored = fake.turns[key]
                    results = []
                    for i, turn in enumerate(body["turns"]):
                        pos, value = turn["position"], (turn["role"], turn["content"])
                        if pos in stored and stored[pos] != value:
                            results.append(
                                {
                                    "index": i,
                                    "position": pos,
                                    "error": {
                                        "code": "conflict",
                                        "message": f"409 Conflict: turn {pos} was stored with other content",
                                    },
                                }
                            )
                        else:
                            results.append(
                                {"index": i, "position": pos, "status": "unchanged" if pos in stored else "created"}
                            )
                            stored[pos] = value
                self._reply(200, {"results": results})

        return Handler
