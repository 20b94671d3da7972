"""A receiver that answers one byte at a time: the slow-drip attack on a per-read timeout.

``DripServer`` is a raw TCP server on 127.0.0.1 (a thread per connection). It reads the request
(headers and a ``Content-Length`` body), then sends ``head`` — a status line and headers — and
``body`` one byte every ``interval`` seconds, so no single read ever waits long. ``connections``
counts the requests it accepted, ``started`` holds when each began (``time.monotonic``) and
``finished`` counts the answers it sent to the end (a client that cut one off never finishes it).
``close`` stops it and cuts every connection still dripping.
"""

from __future__ import annotations

import socket
import threading
import time

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 64\r\n\r\n"


class DripServer:
    def __init__(self, *, head: bytes = HEAD, head_at_once: bool = False, interval: float = 0.1) -> None:
        self.head = head
        self.head_at_once = head_at_once
        self.interval = interval
        self.started: list[float] = []
        self.finished = 0
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def connections(self) -> int:
        return len(self.started)

    def close(self) -> None:
        self._closed.set()
        for sock in [self._listener, *self._sockets]:
            sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(conn)
            self.started.append(time.monotonic())
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            _read_request(conn)
            if self.head_at_once:
                conn.sendall(self.head)
                tail = b"x" * 64
            else:
                tail = self.head + b"x" * 64
            for byte in tail:
                if self._closed.wait(self.interval):
                    return
                conn.sendall(bytes([byte]))
            self.finished += 1
        except OSError:
            return  # the client gave up: what the deadline is for
        finally:
            conn.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk
