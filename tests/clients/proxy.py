"""A TCP proxy in front of the live server that loses answers: the fault a retrying client must
survive without writing twice.

``AnswerDroppingProxy(port, drop=1)`` forwards every connection to ``127.0.0.1:port``. On the
first ``drop`` connections it forwards the request, reads the server's *whole* answer (so the
server has done the work and committed: it answers after its transaction), and then closes the
client's side without sending a byte of it — a connection dropped after the server committed.
Later connections are forwarded both ways unchanged.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class AnswerDroppingProxy:
    def __init__(self, target_port: int, *, drop: int = 1) -> None:
        self.target_port = target_port
        self.drops_left = drop
        self.dropped = 0
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._closing = False
        self._thread = threading.Thread(target=self._accept, name="answer-dropping-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> AnswerDroppingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self._thread.join(5)

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                drop = self.drops_left > 0
                self.drops_left -= int(drop)
            threading.Thread(target=self._serve, args=(client, drop), daemon=True).start()

    def _serve(self, client: socket.socket, drop: bool) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target_port))
        threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
        if drop:
            _read_one_answer(upstream)
            with self._lock:
                self.dropped += 1
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            return
        _pump(upstream, client)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _read_one_answer(upstream: socket.socket) -> bytes:
    """The server's complete answer (headers, then ``Content-Length`` bytes or chunks to the end)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = upstream.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while (length is None and not rest.endswith(b"0\r\n\r\n")) or (length is not None and len(rest) < length):
        chunk = upstream.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest
