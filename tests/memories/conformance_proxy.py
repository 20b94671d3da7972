"""A loopback proxy for the MCP conformance suite, which sends no auth header: every request is
forwarded as sent (Host and Origin included, so the DNS-rebinding scenario reaches MMW's own
checks) to ``/mcp`` of the live server, with ``Authorization: Bearer <key>`` added. Answers are
streamed back as they arrive (SSE), ending with the connection (HTTP/1.0 framing)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}
# the proxy writes its own
OWN = {"server", "date"}


class KeyProxy:
    def __init__(self, upstream: str, key: str) -> None:
        self.upstream, self.key = upstream.rstrip("/"), key
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                # Each header line as sent (a repeated one stays repeated), without the whitespace
                # around its value, which is not part of it (RFC 9110 §5.5): http.server keeps some,
                # and httpx refuses to send a value that starts or ends with it.
                headers = [
                    (name, value.strip(" \t"))
                    for name, value in self.headers.items()
                    if name.lower() not in HOP_BY_HOP | {"authorization"}
                ]
                headers.append(("Authorization", f"Bearer {proxy.key}"))
                with httpx.Client(timeout=httpx.Timeout(60.0), trust_env=False) as client:
                    request = client.build_request(
                        self.command, proxy.upstream + self.path, headers=headers, content=body
                    )
                    response = client.send(request, stream=True)
                    try:
                        self.send_response(response.status_code)
                        for name, value in response.headers.multi_items():
                            if name.lower() not in HOP_BY_HOP | OWN:
                                self.send_header(name, value)
                        self.end_headers()
                        for chunk in response.iter_raw():
                            self.wfile.write(chunk)
                            self.wfile.flush()
                    finally:
                        response.close()

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> KeyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
