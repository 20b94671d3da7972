"""``mmw-agent consent`` through a real pseudo-terminal against a real server: ``yes`` gives
consent (stored locally, an audit row on the server), anything else does not, no terminal is
refused, ``--revoke`` stops uploads and tells the server."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from accounts.models import AuditEvent
from tests.agent.conftest import AGENT_CMD
from tests.agent.terminal import in_terminal
from tests.conftest import Tenancy
from tests.live import ThreadedServer

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def with_sessions(agent_env: dict[str, str]) -> dict[str, str]:
    shutil.copytree(FIXTURES / "claude", agent_env["MMW_AGENT_CLAUDE_DIR"], dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "codex", agent_env["MMW_AGENT_CODEX_DIR"], dirs_exist_ok=True)
    return agent_env


def consent_rows() -> list[str]:
    return list(
        AuditEvent.objects.filter(action__startswith="agent.consent").order_by("id").values_list("action", flat=True)
    )


def status_json(env: dict[str, str]) -> str:
    return subprocess.run(
        [*AGENT_CMD, "status", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout


def test_yes_gives_consent_after_showing_folders_counts_server_and_redaction(
    mmw_server: ThreadedServer, tenancy: Tenancy, with_sessions: dict[str, str]
) -> None:
    code, out = in_terminal(with_sessions, ["consent"], b"Type yes", "yes")
    assert code == 0, out
    assert with_sessions["MMW_AGENT_CLAUDE_DIR"] in out
    assert with_sessions["MMW_AGENT_CODEX_DIR"] in out
    assert "1 sessions, 4 turns found" in out
    assert "1 sessions, 3 turns found" in out
    assert mmw_server.url in out
    assert "redacts secrets" in out
    assert "withheld" in out
    assert consent_rows() == ["agent.consent_given"]
    assert '"given": true' in status_json(with_sessions)

    code, out = (
        subprocess.run(
            [*AGENT_CMD, "consent", "--revoke"], env=with_sessions, capture_output=True, text=True, timeout=60
        ).returncode,
        "",
    )
    assert code == 0
    assert consent_rows() == ["agent.consent_given", "agent.consent_revoked"]
    sync = subprocess.run([*AGENT_CMD, "sync"], env=with_sessions, capture_output=True, text=True, timeout=60)
    assert sync.returncode == 2
    assert "uploads are off" in sync.stderr


@pytest.mark.parametrize("answer", ["no", "y", "YES please", ""])
def test_anything_but_yes_gives_no_consent(
    mmw_server: ThreadedServer, tenancy: Tenancy, with_sessions: dict[str, str], answer: str
) -> None:
    code, out = in_terminal(with_sessions, ["consent"], b"Type yes", answer)
    assert code == 1, out
    assert "nothing will be uploaded" in out
    assert consent_rows() == []
    sync = subprocess.run([*AGENT_CMD, "sync"], env=with_sessions, capture_output=True, text=True, timeout=60)
    assert sync.returncode == 2


def test_without_a_terminal_consent_is_refused_even_with_yes_piped_in(
    mmw_server: ThreadedServer, tenancy: Tenancy, with_sessions: dict[str, str]
) -> None:
    done = subprocess.run(
        [*AGENT_CMD, "consent"], env=with_sessions, input="yes\n", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "must be run in a terminal" in done.stderr
    assert consent_rows() == []
    assert '"given": false' in status_json(with_sessions)
