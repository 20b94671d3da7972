"""Fixtures for the local agent's tests.

``mmw_server``: the real ASGI app on a fixed 127.0.0.1 port, in a thread of the pytest process
(it shares the test database, like ``tests.live.live_server``), which a test can ``stop()`` and
``start()`` again on the same port — the agent keeps one URL while the server goes away.

``agent_env``: the environment an ``mmw-agent`` process runs in: its own config and state dirs
(``XDG_CONFIG_HOME`` / ``XDG_STATE_HOME``), its own Claude Code and Codex folders, the server's
URL and a key; ``mmw_agent`` comes from the repository's ``agent/`` (installed or not).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from django.test.utils import modify_settings

from memories import vectors
from tests.conftest import Tenancy
from tests.live import ThreadedServer

ROOT = Path(__file__).resolve().parents[2]
AGENT_DIR = ROOT / "agent"
AGENT_CMD = [sys.executable, "-m", "mmw_agent"]


@pytest.fixture
def mmw_server(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadedServer]:
    monkeypatch.setitem(connections.settings[DEFAULT_DB_ALIAS], "CONN_MAX_AGE", 0)
    # Load the embedding model first: a first write loading it can pass the 5 s request deadline
    # on a busy machine, and the agent would (rightly) queue it instead.
    vectors.warm_up()
    with modify_settings(ALLOWED_HOSTS={"append": "127.0.0.1"}):
        server = ThreadedServer("MMW server")
        server.start()
        try:
            yield server
        finally:
            server.stop()


def agent_environment(tmp_path: Path, url: str, key: str) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "claude").mkdir(parents=True, exist_ok=True)
    (home / "codex").mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(AGENT_DIR),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "MMW_AGENT_CLAUDE_DIR": str(home / "claude"),
        "MMW_AGENT_CODEX_DIR": str(home / "codex"),
        "MMW_URL": url,
        "MMW_API_KEY": key,
        "MMW_AGENT_REPLAY_INTERVAL": "0.2",
        "MMW_AGENT_SYNC_INTERVAL": "3600",
    }


@pytest.fixture
def agent_env(tmp_path: Path, mmw_server: ThreadedServer, tenancy: Tenancy) -> dict[str, str]:
    return agent_environment(tmp_path, mmw_server.url, tenancy.alice.key)


@pytest.fixture
def local_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The same isolation for code run in-process (no server): the dirs only, set on os.environ."""
    env = agent_environment(tmp_path, "http://127.0.0.1:9", "mmw_test")
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "MMW_AGENT_CLAUDE_DIR", "MMW_AGENT_CODEX_DIR"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.delenv("MMW_URL", raising=False)
    monkeypatch.delenv("MMW_API_KEY", raising=False)
    return env
