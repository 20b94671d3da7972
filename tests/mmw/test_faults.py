"""Fault tests on one real ``manage.py serve`` with its own embedded PostgreSQL and embedded broker.

One serve (module scope, a fresh ``MMW_DATA_DIR``, the production settings ``mmw.settings.base``
with no DATABASE_URL / broker URL: the default path of ``make run``) is hurt in turn: SIGKILL of
the worker, beat, the broker, the postmaster; PostgreSQL crash-looping for 20 s under a stream of
writes; finally SIGKILL of serve itself. Every acknowledged write (201) is remembered by id; the
last checks are that each is stored and archived (``archived_at`` set by the worker, through the
broker or the outbox sweep), and that no process survives serve.

Each fault prints one line (``FAULT ...``) with writes acknowledged / lost and time to recover;
run with ``-s`` to see them (docs/reliability.md quotes them).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest

from mmw import embedded_pg
from tests.mmw.test_serve import free_port, kill_group
from tests.worker import wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# Until every acknowledged write is archived: the sweep runs every minute for records older than
# 30 s, so one round lost to the faults (or to a loaded machine) plus the work fits in 4 minutes.
SWEEP_WAIT = 240
ANSWER_LIMIT = 2.5  # docs/reliability.md: a 503 within 2 s; 0.5 s of slack for a busy 2-CPU machine


@dataclass
class Answer:
    status: int  # 0: no answer (timeout or connection error)
    seconds: float
    content_type: str = ""
    retry_after: str | None = None
    memory_id: str | None = None


@dataclass
class Served:
    data_dir: Path
    port: int
    proc: subprocess.Popen[bytes]
    key: str
    log: Path
    acknowledged: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def child(self, name: str) -> psutil.Process | None:
        """serve's current child process called ``name`` (web, worker, beat, broker)."""
        marks = {"web": "uvicorn", "worker": " worker ", "beat": " beat ", "broker": "valkey-server"}
        for proc in psutil.Process(self.proc.pid).children():
            with contextlib.suppress(psutil.Error):
                if marks[name] in " ".join(proc.cmdline()) + " " and proc.status() != psutil.STATUS_ZOMBIE:
                    return proc
        return None

    def write(self, client: httpx.Client, content: str) -> Answer:
        started = time.monotonic()
        try:
            response = client.post(
                f"{self.base}/api/v1/memories",
                json={"content": content},
                headers={"Authorization": f"Bearer {self.key}"},
            )
        except httpx.HTTPError:
            return Answer(0, time.monotonic() - started)
        answer = Answer(
            response.status_code,
            time.monotonic() - started,
            response.headers.get("content-type", ""),
            response.headers.get("retry-after"),
        )
        if response.status_code == 201:
            answer.memory_id = response.json()["id"]
            self.acknowledged.append(answer.memory_id)
        return answer

    def healthz(self, timeout: float = 5) -> int:
        try:
            return httpx.get(f"{self.base}/healthz", timeout=timeout).status_code
        except httpx.HTTPError:
            return 0

    def unarchived(self, ids: list[str]) -> str:
        """What a failed archiving wait saw: how many are left and the oldest one's age."""
        row = self.sql(
            "SELECT count(*), extract(epoch FROM now() - min(created_at)) FROM memories_memory"
            " WHERE id = ANY(%s::uuid[]) AND archived_at IS NULL",
            ids,
        )
        return f"{row[0]} unarchived, the oldest stored {row[1] or 0:.0f} s ago"

    def log_tail(self, lines: int = 60) -> str:
        """The last warnings and errors serve's children logged."""
        wanted = [x for x in self.log.read_text(errors="replace").splitlines() if "WARNING" in x or "ERROR" in x]
        return "\n".join(wanted[-lines:])

    def sql(self, query: str, *params: Any) -> Any:
        """Run ``query`` on serve's database, waiting up to 30 s for it (it may be recovering)."""
        host = embedded_pg.database_settings(self.data_dir / "pg")["HOST"]
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(dbname="mmw", user="postgres", host=host, connect_timeout=5) as conn:
                    cursor = conn.execute(query, params)
                    return cursor.fetchone() if cursor.description else None
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def stored(self, ids: list[str]) -> tuple[int, int]:
        """(rows stored, rows archived) among ``ids``."""
        row = self.sql("SELECT count(*), count(archived_at) FROM memories_memory WHERE id = ANY(%s::uuid[])", ids)
        return int(row[0]), int(row[1])


class Writer:
    """``threads`` clients writing in a loop until ``stop()``; every answer is kept."""

    def __init__(self, served: Served, tag: str, threads: int = 2) -> None:
        self.served, self.tag = served, tag
        self.answers: list[tuple[float, Answer]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)]

    def _run(self, n: int) -> None:
        with httpx.Client(timeout=15) as client:
            i = 0
            while not self._stop.is_set():
                sent = time.monotonic()  # answers are keyed by when they were asked
                answer = self.served.write(client, f"{self.tag} writer {n} note {i}: the deploy runs on Fridays")
                self.answers.append((sent, answer))
                i += 1
                time.sleep(0.05)

    def __enter__(self) -> Writer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def acknowledged(self) -> list[str]:
        return [a.memory_id for _, a in self.answers if a.memory_id]


def report(fault: str, acknowledged: int, lost: int, recover: float, extra: str = "") -> None:
    print(f"\nFAULT {fault}: {acknowledged} writes acknowledged, {lost} lost, recovered in {recover:.1f} s {extra}")


def _manage(env: dict[str, str], *args: str, timeout: float = 180) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    # Not under pytest's basetemp: every pytest session (another run on this machine) resets
    # /tmp/pytest-of-<user> to 0700, and the embedded PostgreSQL runs as another user under root.
    data_dir = Path(tempfile.mkdtemp(prefix="mmw-faults-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL", "DATABASE_URL")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "mmw.settings.base",
        "MMW_DATA_DIR": str(data_dir),
        "MMW_SECRET_KEY": "fault-tests-only",
        "MMW_PORT": str(port),
        "MMW_CACHE_URL": "",
        "PYTHONUNBUFFERED": "1",
    }
    log = data_dir / "serve.log"
    proc = None
    try:
        _manage(env, "migrate", "--noinput")
        setup = json.loads(_manage(env, "quickstart", "--email", "faults@example.com", "--json"))
        served = Served(data_dir, port, proc, setup["api_key"], log)  # type: ignore[arg-type]
        # The free plan's 60 calls a minute would answer these streams 429: not what is tested here.
        served.sql("UPDATE billing_plan SET calls_per_minute_per_key = NULL, calls_per_minute_per_project = NULL")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--port", str(port)],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        served.proc = proc
        wait_for(lambda: served.healthz() == 200 or proc.poll() is not None, 150, what="serve's /healthz")
        assert proc.poll() is None, log.read_text()[-3000:]
        for name in ("web", "worker", "beat", "broker"):
            assert served.child(name) is not None, f"{name} is not running"
        yield served
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        if proc is not None:
            kill_group(proc)  # never leave a worker behind, whatever happened
        embedded_pg.stop(data_dir / "pg")
        with contextlib.suppress(OSError):  # kept for a look after a failure
            (ROOT / "var").mkdir(exist_ok=True)
            shutil.copy(log, ROOT / "var" / "faults-serve.log")
        shutil.rmtree(data_dir, ignore_errors=True)


def _dead(proc: psutil.Process) -> bool:
    try:
        return bool(proc.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def test_killed_worker_comes_back_and_does_the_work_queued_meanwhile(served: Served) -> None:
    worker = served.child("worker")
    assert worker is not None
    pool = worker.children()
    assert pool, "the prefork pool has processes"
    killed = time.monotonic()
    worker.kill()
    ids: list[str] = []
    with httpx.Client(timeout=15) as client:
        for i in range(10):  # published while no worker is consuming: they wait in the broker
            answer = served.write(client, f"worker-fault note {i}: the staging database is Postgres 18")
            assert answer.status == 201, answer
            assert answer.memory_id is not None
            ids.append(answer.memory_id)
    assert all(_dead(p) for p in pool), "the pool processes die with the worker's main process"
    wait_for(lambda: (c := served.child("worker")) is not None and c.pid != worker.pid, 15, what="a new worker")
    wait_for(lambda: served.stored(ids)[1] == len(ids), 90, what="the queued writes archived")
    recover = time.monotonic() - killed
    assert served.stored(ids) == (len(ids), len(ids))
    assert served.healthz() == 200
    report("worker SIGKILL", len(ids), 0, recover, "(until the 10 writes made meanwhile were archived)")


def test_killed_beat_comes_back(served: Served) -> None:
    beat = served.child("beat")
    assert beat is not None
    killed = time.monotonic()
    beat.kill()
    assert served.healthz() == 200
    wait_for(lambda: (c := served.child("beat")) is not None and c.pid != beat.pid, 15, what="a new beat")
    report("beat SIGKILL", 0, 0, time.monotonic() - killed, "(new beat process)")
    assert "beat (pid" in served.log.read_text()


def test_killed_broker_comes_back_and_writes_never_notice(served: Served) -> None:
    broker = served.child("broker")
    assert broker is not None
    with Writer(served, "broker-fault") as writer:
        time.sleep(1)
        killed = time.monotonic()
        broker.kill()
        wait_for(lambda: (c := served.child("broker")) is not None and c.pid != broker.pid, 15, what="a new broker")
        recover = time.monotonic() - killed
        time.sleep(3)
    statuses = [a.status for _, a in writer.answers]
    assert statuses
    assert set(statuses) == {201}, statuses
    ids = writer.acknowledged()
    assert served.stored(ids)[0] == len(ids)
    report("broker SIGKILL", len(ids), len(ids) - served.stored(ids)[0], recover, "(new broker process)")


def test_killed_postgres_is_restarted_and_no_acknowledged_write_is_lost(served: Served) -> None:
    pgdata = served.data_dir / "pg"
    pid = embedded_pg.postmaster_pid(pgdata)
    assert pid is not None
    with Writer(served, "pg-kill") as writer:
        time.sleep(1)
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: embedded_pg.postmaster_pid(pgdata) not in (None, pid), 30, what="a new postmaster")
        wait_for(lambda: any(t > killed and a.status == 201 for t, a in writer.answers[-4:]), 30, what="a write after")
        recover = time.monotonic() - killed
        time.sleep(1)
    ids = writer.acknowledged()
    stored = served.stored(ids)[0]
    others = sorted({a.status for _, a in writer.answers} - {201})
    report(
        "postgres SIGKILL", len(ids), len(ids) - stored, recover, f"(first 201 after the kill; other answers: {others})"
    )
    assert stored == len(ids)
    assert set(others) <= {503}, "the database is away: 503 (+ Retry-After), never a 500"
    assert served.healthz() == 200


def test_postgres_down_for_20s_answers_503_fast_and_loses_nothing(served: Served) -> None:
    """PostgreSQL crash-looping for 20 s (the postmaster SIGKILLed whenever serve brings it back)."""
    pgdata = served.data_dir / "pg"
    stop = threading.Event()

    def keep_killing() -> None:
        while not stop.is_set():
            pid = embedded_pg.postmaster_pid(pgdata)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    killer = threading.Thread(target=keep_killing, daemon=True)
    with Writer(served, "pg-outage", threads=3) as writer:
        time.sleep(1)
        started = time.monotonic()
        killer.start()
        health = []
        while time.monotonic() - started < 20:
            t0 = time.monotonic()
            health.append((served.healthz(timeout=10), time.monotonic() - t0))
            time.sleep(0.5)
        stop.set()
        killer.join()
        back = time.monotonic()
        wait_for(lambda: any(t > back and a.status == 201 for t, a in writer.answers[-6:]), 60, what="a write after")
        recover = time.monotonic() - back
        time.sleep(1)
    ids = writer.acknowledged()
    stored = served.stored(ids)[0]
    during = [a for t, a in writer.answers if started <= t <= back]
    counts = {s: sum(1 for a in during if a.status == s) for s in sorted({a.status for a in during})}
    slowest = max(a.seconds for a in during)
    report(
        "postgres down 20 s", len(ids), len(ids) - stored, recover,
        f"(after the outage ended; answers during it: {counts}, slowest {slowest:.1f} s, "
        f"healthz slowest {max(s for _, s in health):.1f} s)",
    )  # fmt: skip
    assert stored == len(ids), "every acknowledged write is stored"
    bad = [a for a in during if a.status not in (201, 503)]
    assert not bad, f"only 201 or 503 while the database is down: {bad[:5]}"
    assert all("json" in a.content_type and a.retry_after for a in during if a.status == 503)
    assert slowest <= ANSWER_LIMIT, f"an answer took {slowest:.1f} s"
    assert max(s for _, s in health) <= ANSWER_LIMIT


def test_every_acknowledged_write_is_stored_and_archived(served: Served) -> None:
    """Whatever the faults did to the broker's messages, the outbox sweep (beat, every minute)
    gets every stored write archived."""
    ids = list(served.acknowledged)
    assert ids
    started = time.monotonic()
    try:
        wait_for(lambda: served.stored(ids)[1] == len(ids), SWEEP_WAIT, what="every acknowledged write archived")
    except pytest.fail.Exception:
        pytest.fail(
            f"{served.stored(ids)} (stored, archived) of {len(ids)}; {served.unarchived(ids)}\n{served.log_tail()}"
        )
    assert served.stored(ids) == (len(ids), len(ids))
    report("all of the above", len(ids), 0, time.monotonic() - started, "(until every write was archived)")


def test_sigkill_of_serve_leaves_no_process_behind(served: Served) -> None:
    tree = psutil.Process(served.proc.pid).children(recursive=True)
    assert len(tree) >= 6, "web, worker (+ pool), beat, broker"
    os.kill(served.proc.pid, signal.SIGKILL)
    served.proc.wait(timeout=10)
    wait_for(lambda: all(_dead(p) for p in tree), 10, what="serve's children to die with it")
    marks = (str(served.data_dir), f"--port {served.port}")
    survivors = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if any(m in cmdline for m in marks) and proc.info["name"] != "postgres" and not _dead(proc):
            survivors.append((proc.pid, cmdline))
    # The embedded PostgreSQL is a daemon shared by all commands, never serve's child: it keeps
    # running on purpose (the fixture stops it). Nothing else may.
    assert not survivors, survivors
