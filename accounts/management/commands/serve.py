"""``manage.py serve``: MMW's supervisor. It runs the web server (uvicorn), a Celery worker, a second
one for the ``imports`` queue (members' imports, docs/export-format.md) and beat, the embedded
Redis-protocol broker (when no ``CELERY_BROKER_URL``/``REDIS_URL`` is set) and keeps the embedded
PostgreSQL running (when no ``DATABASE_URL`` is set).

Contract (docs/reliability.md):

- A child that exits, whatever its code, is restarted after a backoff (0.5 s doubling to 30 s,
  back to 0.5 s once it has stayed up for a minute); every exit and restart is logged with the
  exit code. One dead child is never a reason to stop the others.
- The embedded PostgreSQL is a daemon (pg_ctl), not a child: ``serve`` checks its postmaster every
  0.2 s (``postmaster.pid`` and ``/proc``) and starts it again, with the same backoff, when it is
  gone. It is left running when ``serve`` stops, as before (commands reuse it; ``make stop``).
- The banner ("MMW is serving on …" and the ``quickstart`` line) is printed once the web server
  accepts connections, never before: what it tells you to do next works when you read it. A
  port already in use when ``serve`` starts is refused (``CommandError``), so what accepts the
  connections later is MMW's own web server.
- SIGTERM/SIGINT: web, beat and worker get SIGTERM (SIGKILL after a grace period), the broker
  last, then ``serve`` exits 0.
- No orphans, even if ``serve`` is SIGKILLed: each child is started with PR_SET_PDEATHSIG
  (``mmw.lifeline``), so the kernel kills it with ``serve``; Celery's pool processes do the same
  with the worker. uvicorn runs one process (``--web-workers 1``, the default); with more, its
  worker processes are not covered.
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mmw import embedded_pg, embedded_redis
from mmw.lifeline import die_with_parent

logger = logging.getLogger("mmw.serve")

GRACE_SECONDS = 10.0
TICK_SECONDS = 0.2
BROKER_READY_SECONDS = 10.0
LISTEN_PROBE_SECONDS = 0.2


@dataclass
class Backoff:
    """Exponential restart delays: ``initial`` doubling up to ``ceiling``; a run that lasted
    ``stable`` seconds or more resets the sequence."""

    initial: float = 0.5
    ceiling: float = 30.0
    stable: float = 60.0
    failures: int = 0

    def next_delay(self, uptime: float) -> float:
        if uptime >= self.stable:
            self.failures = 0
        delay = min(self.ceiling, self.initial * float(2**self.failures))
        self.failures += 1
        return delay


@dataclass
class Child:
    """A supervised foreground process; ``step`` starts it when due and notices its exit."""

    name: str
    argv: list[str]
    env: dict[str, str]
    backoff: Backoff = field(default_factory=Backoff)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    due: float = 0.0
    starts: int = 0

    def step(self, now: float) -> None:
        if self.proc is None:
            if now >= self.due:
                self.start(now)
            return
        code = self.proc.poll()
        if code is None:
            return
        delay = self.backoff.next_delay(now - self.started_at)
        logger.warning(
            "%s (pid %d) exited with code %s after %.1f s; restarting in %.1f s",
            self.name, self.proc.pid, code, now - self.started_at, delay,
        )  # fmt: skip
        self.proc = None
        self.due = now + delay

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, now: float) -> None:
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and binaries
            self.argv, env=self.env, preexec_fn=functools.partial(die_with_parent, os.getpid())
        )
        self.started_at = now
        self.starts += 1
        if self.starts > 1:
            logger.warning("%s restarted (start %d, pid %d)", self.name, self.starts, self.proc.pid)

    def signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)


@dataclass
class PostgresWatch:
    """Keeps the embedded PostgreSQL (a daemon, not our child) running: when its postmaster is
    gone, start it again from a helper process (``python -m mmw.embedded_pg``; the other children
    keep being supervised meanwhile, and a start that hangs is killed after ``START_TIMEOUT``),
    with backoff between failed attempts."""

    pgdata: Path
    env: dict[str, str]
    # At most 5 s between attempts: nothing works without the database, and an attempt is cheap.
    backoff: Backoff = field(default_factory=lambda: Backoff(ceiling=5.0))
    up_since: float | None = None
    down_since: float | None = None
    due: float = 0.0
    starter: subprocess.Popen[bytes] | None = None
    starter_since: float = 0.0

    START_TIMEOUT = 60.0

    def step(self, now: float) -> None:
        if self.starter is not None and self.starter.poll() is None:
            if now - self.starter_since > self.START_TIMEOUT:
                logger.warning("embedded PostgreSQL start hung for %.0f s; killing it", now - self.starter_since)
                self.starter.kill()
                self.starter.wait()
            return
        if embedded_pg.postmaster_pid(self.pgdata) is not None:
            if self.down_since is not None:
                logger.warning("embedded PostgreSQL is back after %.1f s", now - self.down_since)
                self.down_since = None
            self.starter = None
            if self.up_since is None:
                self.up_since = now
            return
        if self.down_since is None or self.starter is not None:
            uptime = now - self.up_since if self.up_since is not None else 0.0
            delay = self.backoff.next_delay(uptime)
            if self.down_since is None:
                self.down_since = now
                logger.warning("embedded PostgreSQL (%s) is not running; starting it in %.1f s", self.pgdata, delay)
            else:
                code = self.starter.returncode if self.starter else None
                logger.warning("embedded PostgreSQL did not start (code %s); again in %.1f s", code, delay)
            self.up_since = None
            self.starter = None
            self.due = now + delay
            return
        if now >= self.due:
            self.starter = subprocess.Popen(  # noqa: S603 - our own interpreter
                [sys.executable, "-m", "mmw.embedded_pg", str(self.pgdata)],
                env=self.env,
                preexec_fn=functools.partial(die_with_parent, os.getpid()),
            )
            self.starter_since = now


class Command(BaseCommand):
    help = "Serve MMW: web (uvicorn), Celery worker and beat, embedded broker and PostgreSQL, supervised."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.MMW_HOST)
        parser.add_argument("--port", type=int, default=settings.MMW_PORT)
        parser.add_argument("--no-worker", action="store_true", help="web server only")
        parser.add_argument("--web-workers", type=int, default=1)

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        if _listening(host, port):
            # uvicorn would fail to bind and be restarted for ever, and the banner would point at
            # whatever holds the port.
            raise CommandError(
                f"{host}:{port} is already in use (another MMW, or another server): stop it, or "
                "serve on another port (MMW_PORT=... make run, or --port)"
            )
        stopping = threading.Event()

        def _stop(signum: int, frame: FrameType | None) -> None:
            stopping.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        postgres = None if settings.DATABASE_URL else PostgresWatch(settings.DATA_DIR / "pg", _child_env())
        if postgres is not None:
            _start_postgres(postgres.pgdata)
        broker, children = _children(host, port, options)
        if broker is not None:
            embedded_redis.stop_stale(settings.DATA_DIR)
            broker.start(time.monotonic())
            _wait_for_broker(broker)
        for child in children:
            child.start(time.monotonic())
        supervised: list[Child | PostgresWatch] = [*([broker] if broker else []), *children]
        if postgres is not None:
            supervised.insert(0, postgres)
        web, announced = children[0], False  # _children lists the web server first
        while not stopping.is_set():
            now = time.monotonic()
            for unit in supervised:
                unit.step(now)
            if not announced and web.running() and _listening(host, port):
                # Only now: whoever follows the banner (a person, a script, the quickstart it
                # prints) finds the web server answering, not a refused connection.
                self.stdout.write(_banner(host, port))
                self.stdout.flush()
                announced = True
            stopping.wait(TICK_SECONDS)
        _terminate(children)
        if broker is not None:
            _terminate([broker])
        logger.info("MMW stopped")


def _start_postgres(pgdata: Path) -> None:
    try:
        embedded_pg.ensure_running(pgdata)
    except Exception:
        logger.exception("embedded PostgreSQL did not start; serve will keep trying")


def _children(host: str, port: int, options: dict[str, Any]) -> tuple[Child | None, list[Child]]:
    env = _child_env()
    children = [Child("web", _web(host, port, options["web_workers"]), env)]
    if options["no_worker"]:
        return None, children
    celery = [sys.executable, "-m", "celery", "-A", "mmw"]
    children.append(Child("worker", [*celery, "worker", "--loglevel=INFO", "--concurrency=2"], env))
    # Members' imports (minutes of work each) on a queue and a process of their own.
    imports = [*celery, "worker", "--loglevel=INFO", "--concurrency=1", "-Q", "imports", "-n", "imports@%h"]
    children.append(Child("imports", imports, env))
    children.append(Child("beat", [*celery, "beat", "--loglevel=INFO"], env))
    broker = None
    if embedded_redis.broker_url(settings.DATA_DIR) == settings.CELERY_BROKER_URL:
        broker = Child("broker", embedded_redis.command(settings.DATA_DIR), env)
    return broker, children


def _wait_for_broker(broker: Child) -> None:
    """Give the broker a moment to open its socket (the others would only retry meanwhile)."""
    deadline = time.monotonic() + BROKER_READY_SECONDS
    while time.monotonic() < deadline:
        if embedded_redis.ping(settings.DATA_DIR, timeout=0.5):
            return
        if broker.proc is not None and broker.proc.poll() is not None:
            break
        time.sleep(0.05)
    logger.warning("embedded broker is not answering yet; starting the others anyway")


def _child_env() -> dict[str, str]:
    """One BLAS/OpenMP thread per process unless the operator says otherwise: requests already
    run concurrently, and oversubscribed BLAS threads halved search throughput in bench/."""
    env = dict(os.environ)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, "1")
    return env


def _web(host: str, port: int, workers: int) -> list[str]:
    return [
        sys.executable, "-m", "uvicorn", "mmw.asgi:application",
        "--host", host, "--port", str(port), "--workers", str(workers),
        "--no-server-header", "--lifespan", "on",
        # X-Forwarded-For is MMW's to read (mmw.client_address, MMW_TRUSTED_PROXIES): uvicorn's
        # own handling would believe it from 127.0.0.1, i.e. from anyone behind a local proxy.
        "--no-proxy-headers",
    ]  # fmt: skip


def _listening(host: str, port: int) -> bool:
    """Whether the web server accepts connections on ``host:port`` yet (uvicorn binds after the
    application has loaded). A wildcard host is asked on loopback."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # noqa: S104
    try:
        with socket.create_connection((target, port), timeout=LISTEN_PROBE_SECONDS):
            return True
    except OSError:
        return False


def _terminate(children: list[Child]) -> None:
    """SIGTERM all, then SIGKILL whatever is still running after the grace period."""
    for child in children:
        child.signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for child in children:
        if child.proc is None:
            continue
        try:
            child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.proc.kill()
            child.proc.wait()


def _banner(host: str, port: int, environ: Mapping[str, str] | None = None) -> str:
    base = f"http://{host}:{port}"
    return (
        f"\nMMW is serving on {base}\n"
        f"  dashboard:  {base}/\n"
        f"  MCP:        {base}/mcp\n"
        f"  REST:       {base}/api/v1/\n"
        f"  health:     {base}/healthz\n\n"
        "Create a first API key and a one-time sign-in link to the dashboard (in another terminal):\n"
        f"{quickstart_command(host, port, os.environ if environ is None else environ)}\n"
    )


# What quickstart reads that serve may have been given: the printed command carries them, so it
# works as printed in another terminal. Values that hold a secret are named, never printed.
_CARRIED_DEFAULTS = {"MMW_HOST": "127.0.0.1", "MMW_PORT": "8000", "MMW_PUBLIC_URL": ""}
_SECRETS = ("MMW_SECRET_KEY", "DATABASE_URL")


def quickstart_command(host: str, port: int, environ: Mapping[str, str]) -> str:
    """The ``quickstart`` line for this server: ``MMW_DATA_DIR`` when it is not the default (as an
    absolute path), the host and port it serves on when not the defaults, ``MMW_PUBLIC_URL`` when
    set; a ``DATABASE_URL`` without a password as it is; ``MMW_SECRET_KEY`` or a URL with a
    password as a reference to the variable, with a line saying to set it first."""
    carried: dict[str, str] = {}
    if Path(settings.DATA_DIR).resolve() != (Path(settings.BASE_DIR) / "var").resolve():
        carried["MMW_DATA_DIR"] = str(Path(settings.DATA_DIR).resolve())
    wanted = {"MMW_HOST": host, "MMW_PORT": str(port), "MMW_PUBLIC_URL": environ.get("MMW_PUBLIC_URL", "")}
    carried |= {name: value for name, value in wanted.items() if value and value != _CARRIED_DEFAULTS[name]}
    named = []
    for name in _SECRETS:
        value = environ.get(name, "")
        if not value or (name == "MMW_SECRET_KEY" and (Path(settings.DATA_DIR) / "secret_key").exists()):
            continue  # quickstart needs a secret key, not this one: its sign-in link is stored as a digest
        if name == "DATABASE_URL" and urlsplit(value).password is None:
            carried[name] = value
        else:
            named.append(name)
    words = [f"{name}={shlex.quote(value)}" for name, value in carried.items()]
    words += [f'{name}="${name}"' for name in named]
    line = "  " + " ".join([*words, ".venv/bin/python manage.py quickstart --email you@example.com"])
    if named:
        line += f"\n  (with {' and '.join(named)} set in that terminal as they are here: secrets are not printed)"
    return line
