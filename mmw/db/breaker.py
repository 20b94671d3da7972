"""Fail fast while the database refuses connections: a per-process circuit breaker.

Why (docs/reliability.md "Overload and errors"): with the pool on, a request that finds no
pooled connection waits up to ``MMW_DB_POOL_TIMEOUT`` (1.0 s; 1.5 s then) for one, even when every attempt
the pool makes to connect is refused in a millisecond (PostgreSQL down, wrong port). That put
a refused database's 503 at 1.5-2.05 s, across the 2 s promise.

Contract:
- Every connection attempt the pool makes goes through ``WatchedConnection.connect``, which
  records the outcome here: a refusal (nothing listens: ``Connection refused``, or no Unix
  socket) *opens* the breaker, a success *closes* it. Other failures (a timeout, a full server,
  a wrong password) leave it as it is.
- ``Breaker.admit(address)`` is asked before each borrow from the pool. Closed: go on.
  Open, for ``window`` seconds after the last refusal: raise ``psycopg.OperationalError`` at
  once (REST and MCP turn it into 503 + ``Retry-After``). Open and older than the window, or
  never connected yet in this process: *probe* — one TCP (or Unix socket) connect to the
  server's address with a short timeout, closed at once without a word (PostgreSQL >= 13 logs
  nothing for it). Refused: open again and raise. Anything else (accepted, timed out): closed,
  and the borrow waits for the pool as usual — a hung server keeps its pool timeout bound.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings

PROBE_TIMEOUT = 0.2
REFUSAL_MARKERS = ("connection refused", "no such file or directory")
REFUSED_ERRNOS = frozenset({errno.ECONNREFUSED, errno.ENOENT})


def is_refusal(exc: BaseException) -> bool:
    """True when ``exc`` (a connect failure) says nothing listens at the server's address."""
    text = str(exc).lower()
    return any(marker in text for marker in REFUSAL_MARKERS)


class Breaker:
    """The last connection outcome of this process, and whether to try the database at all."""

    def __init__(self, window: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._refused_at: float | None = None
        self._connected = False  # a connection (or probe) has succeeded since the last refusal

    @property
    def window(self) -> float:
        """Seconds a refusal keeps the breaker open (``settings.DB_BREAKER_SECONDS`` unless given)."""
        return self._window if self._window is not None else float(settings.DB_BREAKER_SECONDS)

    def record_refused(self) -> None:
        with self._lock:
            self._refused_at = self._clock()
            self._connected = False

    def record_connected(self) -> None:
        with self._lock:
            self._refused_at = None
            self._connected = True

    def is_open(self) -> bool:
        """Refused less than ``window`` seconds ago: do not even try."""
        with self._lock:
            return self._refused_at is not None and self._clock() - self._refused_at < self.window

    def admit(self, address: tuple[str, int]) -> None:
        """Return if the database may be tried now; raise ``psycopg.OperationalError`` if not."""
        with self._lock:
            if self._connected and self._refused_at is None:
                return  # the common case: one attribute read under an uncontended lock
        if self.is_open():
            raise psycopg.OperationalError(
                f"database refused connections less than {self.window:g} s ago; not retried yet"
            )
        if probe_refused(address):
            self.record_refused()
            raise psycopg.OperationalError("database refused the connection (probe)")
        self.record_connected()


def server_address(params: dict[str, Any]) -> tuple[str, int]:
    """(host, port) from libpq connect parameters; a host starting with "/" is a socket folder."""
    host = str(params.get("host") or "localhost").split(",")[0]
    port = int(str(params.get("port") or 5432).split(",")[0])
    return host, port


def probe_refused(address: tuple[str, int], timeout: float = PROBE_TIMEOUT) -> bool:
    """True when a bare connect to ``address`` is refused (nothing listens there).

    Timeouts and other errors are not refusals: the pool's own bounded wait decides those.
    """
    host, port = address
    try:
        if host.startswith("/"):
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(timeout)
                sock.connect(f"{host}/.s.PGSQL.{port}")
        else:
            socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return exc.errno in REFUSED_ERRNOS
    return False


# One database per process (settings.DATABASES["default"]).
BREAKER = Breaker()


class WatchedConnection(psycopg.Connection[Any]):
    """``psycopg.Connection`` whose ``connect`` tells ``BREAKER`` how it went (the pool's
    ``connection_class``)."""

    @classmethod
    def connect(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            conn = super().connect(*args, **kwargs)
        except psycopg.OperationalError as exc:
            if is_refusal(exc):
                BREAKER.record_refused()
            raise
        BREAKER.record_connected()
        return conn
