"""``mmw-agent login``: the key is checked against the server before anything is stored, and the
config file is private (0600)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from tests.agent.conftest import AGENT_CMD
from tests.conftest import Tenancy
from tests.live import ThreadedServer

pytestmark = pytest.mark.slow


def login(env: dict[str, str], url: str, key: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in env.items() if k not in ("MMW_URL", "MMW_API_KEY")}
    return subprocess.run(
        [*AGENT_CMD, "login", "--url", url, "--key", key], env=env, capture_output=True, text=True, timeout=60
    )


def test_login_checks_the_key_then_stores_it_private(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    config = Path(agent_env["XDG_CONFIG_HOME"]) / "mmw-agent" / "config.json"
    refused = login(agent_env, mmw_server.url, "mmw_" + "x" * 43)
    assert refused.returncode == 1
    assert f"MMW server at {mmw_server.url} refused the API key: invalid API key (401)" in refused.stderr
    assert not config.exists()

    done = login(agent_env, f"{mmw_server.url}/mcp", tenancy.alice.key)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert tenancy.alice.key in config.read_text()
    assert str(tenancy.alice.project.pk) in config.read_text()
