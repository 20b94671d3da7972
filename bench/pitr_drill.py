"""A point-in-time recovery drill with the PostgreSQL binaries the wheel ships (docs/scale.md, runbook):

    .venv/bin/python bench/pitr_drill.py [--root var/pitr-drill] [--rows 20000]

1. a fresh cluster (``initdb``) with WAL archiving on (``archive_mode = on``, ``archive_command``
   copying each finished segment into ``<root>/archive``), pgvector created, a table with vectors;
2. a base backup (``pg_basebackup -X stream``) while it runs;
3. ``--rows`` rows written after the backup (batch A), the target time noted, then batch B and a
   table dropped by mistake; the last segment switched out so the archive holds all of it;
4. the restore: the base backup copied into a new directory, ``restore_command`` reading the
   archive, ``recovery_target_time`` = the noted time, ``recovery.signal``; started on its own
   socket, it replays the archive up to the target and is promoted.

It checks that the restored cluster holds batch A, not batch B, and the dropped table, and that its
vectors answer a nearest-neighbour query; prints each step's seconds. Everything lives under
``--root`` (removed first) and both servers are stopped at the end. A drill, not a test: exits 1
when the restored data is not what it should be.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.standby import _bin, _run


def own(path: Path) -> None:
    if os.geteuid() == 0:
        for p in [path, *path.rglob("*")]:
            shutil.chown(p, "pgserver", "pgserver")


def start(data: Path, log: Path) -> None:
    _run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "120", "start", timeout=180)


def stop(data: Path) -> None:
    if (data / "postmaster.pid").exists():
        _run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop", timeout=120)


def connect(socket_dir: Path) -> psycopg.Connection:
    return psycopg.connect(host=str(socket_dir), dbname="postgres", user="postgres", autocommit=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("var/pitr-drill"))
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    root = args.root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    primary, backup, restored, archive = root / "primary", root / "base", root / "restored", root / "archive"
    sock_p, sock_r = root / "sock-p", root / "sock-r"
    for d in (root, archive, sock_p, sock_r):
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o700)
    own(root)
    steps: dict[str, float] = {}
    t = time.perf_counter()
    _run("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust", timeout=120)
    with (primary / "postgresql.conf").open("a") as conf:
        conf.write(
            f"\nlisten_addresses = ''\nunix_socket_directories = '{sock_p}'\nwal_level = replica\n"
            f"archive_mode = on\narchive_command = 'test ! -f {archive}/%f && cp %p {archive}/%f'\n"
            "archive_timeout = 0\nmax_wal_senders = 4\n"
        )
    start(primary, root / "primary.log")
    steps["initdb and start"] = time.perf_counter() - t
    n = args.rows
    with connect(sock_p) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE note (id bigserial PRIMARY KEY, batch text, v vector(8))")
        conn.execute("CREATE TABLE precious (id int)")
        conn.execute("INSERT INTO precious SELECT generate_series(1, 100)")
        conn.execute(
            "INSERT INTO note (batch, v) SELECT 'before', "
            "array_fill(random()::real, ARRAY[8])::vector FROM generate_series(1, %s)",
            [n],
        )
        t = time.perf_counter()
        _run("pg_basebackup", "-h", str(sock_p), "-U", "postgres", "-D", str(backup), "-X", "stream", "-c", "fast")
        steps["pg_basebackup"] = time.perf_counter() - t
        conn.execute(
            "INSERT INTO note (batch, v) SELECT 'A', array_fill(random()::real, ARRAY[8])::vector "
            "FROM generate_series(1, %s)",
            [n],
        )
        time.sleep(1.1)
        target = conn.execute("SELECT now()::text").fetchone()[0]  # type: ignore[index]
        time.sleep(1.1)
        conn.execute(
            "INSERT INTO note (batch, v) SELECT 'B', array_fill(random()::real, ARRAY[8])::vector "
            "FROM generate_series(1, %s)",
            [n],
        )
        conn.execute("DROP TABLE precious")
        conn.execute("SELECT pg_switch_wal()")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            last, _failed = conn.execute("SELECT last_archived_wal, failed_count FROM pg_stat_archiver").fetchone()  # type: ignore[misc]
            current = conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0]  # type: ignore[index]
            if last is not None and last < current:
                break
            time.sleep(0.2)
        archived = len(list(archive.iterdir()))
    stop(primary)
    t = time.perf_counter()
    shutil.copytree(backup, restored)
    with (restored / "postgresql.conf").open("a") as conf:
        conf.write(
            f"\nunix_socket_directories = '{sock_r}'\narchive_mode = off\n"
            f"restore_command = 'cp {archive}/%f %p'\nrecovery_target_time = '{target}'\n"
            "recovery_target_action = 'promote'\n"
        )
    (restored / "recovery.signal").touch()
    own(restored)
    start(restored, root / "restored.log")
    with connect(sock_r) as conn:
        deadline = time.monotonic() + 120
        while conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] and time.monotonic() < deadline:  # type: ignore[index]
            time.sleep(0.2)
        steps["restore to the target time"] = time.perf_counter() - t
        counts: dict[str, int] = dict(conn.execute("SELECT batch, count(*) FROM note GROUP BY batch").fetchall())
        precious = conn.execute("SELECT to_regclass('precious') IS NOT NULL").fetchone()[0]  # type: ignore[index]
        nearest = conn.execute(
            "SELECT id FROM note ORDER BY v <-> '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' LIMIT 3"
        ).fetchall()
        version = conn.execute("SELECT version()").fetchone()[0]  # type: ignore[index]
    stop(restored)
    ok = counts.get("before") == n and counts.get("A") == n and "B" not in counts and precious and len(nearest) == 3
    print(f"{version.split(' on ')[0]}, pg_basebackup {_bin('pg_basebackup')}")
    print(f"target time {target}; {archived} WAL segments archived")
    print(
        f"restored: {counts} (expected before={n}, A={n}, no B); "
        f"dropped table back: {precious}; nearest: {len(nearest)} rows"
    )
    for name, seconds in steps.items():
        print(f"{name}: {seconds:.1f} s")
    print("PITR drill: " + ("OK" if ok else "FAILED"))
    shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"timed out: {exc}") from exc
