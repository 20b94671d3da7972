"""``manage.py serve``: the ASGI web server, a Celery worker and beat, started and stopped together.

Each runs as its own child process; when one dies or the command is interrupted, all are stopped
(SIGTERM, then SIGKILL after a grace period) and the command exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

GRACE_SECONDS = 10.0


class Command(BaseCommand):
    help = "Serve MMW: web (uvicorn), Celery worker and Celery beat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.MMW_HOST)
        parser.add_argument("--port", type=int, default=settings.MMW_PORT)
        parser.add_argument("--no-worker", action="store_true", help="web server only")
        parser.add_argument("--web-workers", type=int, default=1)

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        commands = {"web": _web(host, port, options["web_workers"])}
        if not options["no_worker"]:
            settings.BROKER_DIR.mkdir(parents=True, exist_ok=True)
            for sub in ("queue", "processed", "control"):
                (settings.BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
            commands["worker"] = [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "mmw",
                "worker",
                "--loglevel=INFO",
                "--concurrency=2",
            ]
            commands["beat"] = [sys.executable, "-m", "celery", "-A", "mmw", "beat", "--loglevel=INFO"]
        children = {name: subprocess.Popen(cmd, env=_child_env()) for name, cmd in commands.items()}  # noqa: S603
        self.stdout.write(_banner(host, port))
        stopping = False

        def _stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        exit_code = 0
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"{name} exited with code {child.returncode}; stopping MMW")
                    exit_code = child.returncode or 1
                    stopping = True
            time.sleep(0.2)
        _terminate(list(children.values()))
        sys.exit(exit_code)


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
    ]  # fmt: skip


def _terminate(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _banner(host: str, port: int) -> str:
    base = f"http://{host}:{port}"
    return (
        f"\nMMW is serving on {base}\n"
        f"  dashboard:  {base}/\n"
        f"  MCP:        {base}/mcp\n"
        f"  REST:       {base}/api/v1/\n"
        f"  health:     {base}/healthz\n\n"
        "Create a first API key (in another terminal):\n"
        "  .venv/bin/python manage.py quickstart --email you@example.com\n"
    )
