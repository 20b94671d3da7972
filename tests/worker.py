"""A real Celery worker subprocess on the real Redis broker, and a breakable proxy to that broker.

``celery_worker`` (module scope) starts ``python -m celery -A mmw worker`` with the test settings,
the same ``MMW_DATA_DIR`` (so the same embedded PostgreSQL) and ``MMW_TEST_DATABASE_NAME`` set to
pytest-django's test database, after emptying the broker's Redis database. Tests that use it need
``transactional_db`` (the worker only sees committed rows). The worker logs to a file;
``outcomes(memory_id)`` reads what the archivist reported for a record there, ``succeeded(task)``
what a task returned; the worker writes its e-mails as files (``MMW_TEST_EMAIL_DIR``, the
file-based backend of the test settings) and ``emails()`` reads them back.

``BrokerProxy`` forwards TCP to Redis and can be broken on purpose: ``refuse()`` closes the port
(connection refused, as when Redis is stopped), ``hang()`` accepts connections and never answers
(a hung or partitioned broker), ``up()`` forwards again. Point the test process's Celery app at
``proxy.url`` to make *publishing* fail while the worker keeps its own direct connection.

In a test module: ``from tests.worker import celery_worker, broker_proxy  # noqa: F401``.
"""

from __future__ import annotations

import contextlib
import email
import email.message
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import redis
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
SETTLE_TIMEOUT = 60.0
_OUTCOME = re.compile(r"archivist ([0-9a-f-]{36}): (.+?)\s*$")
_SUCCEEDED = re.compile(r"Task ([\w.]+)\[[0-9a-f-]+\] succeeded in [\d.]+s: (.*?)\s*$")
_MESSAGE_SEPARATOR = "\n" + "-" * 79 + "\n"


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.1, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


class CeleryWorker:
    """One ``celery worker`` process group; ``start`` may be called again after ``kill``/``stop``."""

    def __init__(self, log_dir: Path, database_name: str) -> None:
        self.log_dir = log_dir
        self.database_name = database_name
        self.process: subprocess.Popen[bytes] | None = None
        self.logs: list[Path] = []
        self.email_dir = log_dir / "emails"
        self.email_dir.mkdir(exist_ok=True)

    def start(self) -> None:
        log = self.log_dir / f"worker-{len(self.logs) + 1}.log"
        self.logs.append(log)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "mmw.settings.test",
            "MMW_DATA_DIR": str(settings.DATA_DIR),
            "MMW_TEST_BROKER_URL": str(settings.CELERY_BROKER_URL),
            "MMW_TEST_DATABASE_NAME": self.database_name,
            "MMW_TEST_EMAIL_DIR": str(self.email_dir),
            "PYTHONUNBUFFERED": "1",
            "MMW_TASK_LOG_LEVEL": "INFO",  # succeeded() reads the "Task … succeeded" lines
        }
        command = [
            sys.executable, "-m", "celery", "-A", "mmw", "worker",
            "--loglevel=INFO", "--pool=prefork", "--concurrency=2", "-Q", "celery,imports",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-n", f"mmw-test-{uuid.uuid4().hex[:8]}@%h",
        ]  # fmt: skip
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_for(self._ready, READY_TIMEOUT, 0.1, "the Celery worker to be ready")

    def _ready(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            pytest.fail(f"the Celery worker exited:\n{self.log_text()[-4000:]}")
        return " ready." in self.logs[-1].read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children) at once."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT)

    def busy(self) -> bool:
        """Whether the broker still holds work for this worker: a message queued, or one delivered
        and not yet acknowledged (tasks acknowledge late, so one running is still in ``unacked``)."""
        broker = redis.Redis.from_url(str(settings.CELERY_BROKER_URL))
        queued = sum(int(broker.llen(key)) for key in broker.scan_iter() if broker.type(key) == b"list")
        return queued > 0 or int(broker.hlen("unacked")) > 0

    def settle(self, timeout: float = SETTLE_TIMEOUT) -> None:
        """Wait (at most ``timeout`` s) until a live worker has nothing queued or running. A test
        ends with it: the database is emptied after each transactional test, and TRUNCATE beside a
        task still writing (the archivist after an import) deadlocked the teardown once."""
        deadline, idle = time.monotonic() + timeout, 0
        while self.process is not None and self.process.poll() is None and time.monotonic() < deadline:
            # Twice in a row: a message is popped from its queue a moment before it is recorded
            # as unacknowledged, and one look could fall in between.
            idle = 0 if self.busy() else idle + 1
            if idle == 2:
                return
            time.sleep(0.1)

    def log_text(self) -> str:
        return "\n".join(log.read_text(errors="replace") for log in self.logs if log.exists())

    def succeeded(self, task: str) -> list[str]:
        """The return values (as logged) of every run of ``task`` that succeeded, across all starts."""
        found = []
        for line in self.log_text().splitlines():
            match = _SUCCEEDED.search(line)
            if match and match.group(1) == task:
                found.append(match.group(2))
        return found

    def emails(self) -> list[email.message.Message]:
        """Every e-mail the worker sent (Django's file backend: one file per connection, messages
        separated by a line of 79 dashes), oldest file first."""
        found = []
        for path in sorted(self.email_dir.glob("*.log"), key=lambda p: p.stat().st_mtime_ns):
            for chunk in path.read_text(errors="replace").split(_MESSAGE_SEPARATOR):
                if chunk.strip():
                    found.append(email.message_from_string(chunk.strip("\n")))
        return found

    def outcomes(self, memory_id: object) -> list[str]:
        """What every run of ``archive_memory`` for this record reported, across all starts."""
        found = []
        for line in self.log_text().splitlines():
            match = _OUTCOME.search(line)
            if match and match.group(1) == str(memory_id):
                found.append(match.group(2))
        return found


@pytest.fixture(scope="module")
def celery_worker(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorker]:
    redis.Redis.from_url(str(settings.CELERY_BROKER_URL)).flushdb()  # this run's own Redis database
    worker = CeleryWorker(tmp_path_factory.mktemp("celery"), str(connection.settings_dict["NAME"]))
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


class BrokerProxy:
    """A TCP proxy to Redis whose failures the test controls (see the module docstring)."""

    def __init__(self, target: tuple[str, int], path: str) -> None:
        self.target = target
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}{path}"
        self.mode = "down"
        self.accepted = 0  # connections accepted, whatever the mode
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def up(self) -> None:
        self._switch("up")

    def hang(self) -> None:
        self._switch("hang")

    def refuse(self) -> None:
        self._switch("down")

    def _switch(self, mode: str) -> None:
        with self._lock:
            self.mode = mode
            for sock in self._sockets:
                _close(sock)
            self._sockets.clear()
            if mode == "down" and self._listener is not None:
                _close(self._listener)
                self._listener = None
            if mode != "down" and self._listener is None:
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind(("127.0.0.1", self.port))
                listener.listen(64)
                self._listener = listener
                threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            with self._lock:
                self.accepted += 1
                self._sockets.append(client)
                if self.mode != "up":
                    continue  # "hang": hold the connection, never answer
                upstream = socket.create_connection(self.target)
                self._sockets.append(upstream)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(src, dst), daemon=True).start()

    def close(self) -> None:
        self._switch("down")


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        _close(src)
        _close(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def broker_proxy() -> Iterator[BrokerProxy]:
    parsed = urlparse(str(settings.CELERY_BROKER_URL))
    proxy = BrokerProxy((parsed.hostname or "127.0.0.1", parsed.port or 6379), parsed.path)
    proxy.up()
    try:
        yield proxy
    finally:
        proxy.close()
