"""The shipped balancer configuration, ``deploy/haproxy.cfg``, pointed at local ports: what
``tests/mmw/test_client_address.py`` and ``bench/scaleout.py`` run HAProxy with."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

HAPROXY_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "haproxy.cfg"


def haproxy_binary() -> str | None:
    """Where haproxy is: on PATH, or Debian's ``/usr/sbin``, which a normal user's PATH lacks."""
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")


def haproxy_config(port: int, webs: list[int]) -> str:
    """``deploy/haproxy.cfg`` with its frontend on ``port`` and its servers on ``webs`` (the
    shipped file's other settings unchanged, so the bench runs what production is told to run)."""
    text = HAPROXY_CONFIG.read_text()
    text, bound = re.subn(r"bind 127\.0\.0\.1:\d+", f"bind 127.0.0.1:{port}", text)
    lines = [line for line in text.splitlines() if not re.match(r"\s+server web\d+ ", line)]
    servers = [f"    server web{i} 127.0.0.1:{p} check" for i, p in enumerate(webs, start=1)]
    if bound != 1 or len(lines) == len(text.splitlines()):
        raise RuntimeError(f"{HAPROXY_CONFIG} no longer has one bind line and server lines to rewrite")
    return "\n".join([*lines, *servers]) + "\n"
