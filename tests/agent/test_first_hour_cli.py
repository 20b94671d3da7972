"""``mmw-agent`` in a real pseudo-terminal against a real server (issue #40, item 8): the key is
asked for, never put on the command line; ``status`` says what it does not count yet; ``sync``
sends the queued writes and reports in words; a contact error goes when the server is back; the
consent screen names the account and project; a refused key says why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from accounts import services
from accounts.models import ApiKey
from memories.models import Memory
from tests.agent.conftest import AGENT_CMD
from tests.agent.terminal import in_terminal
from tests.conftest import Tenancy
from tests.live import ThreadedServer

pytestmark = pytest.mark.slow


def without_key(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in ("MMW_URL", "MMW_API_KEY")}


def agent(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENT_CMD, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120)


def test_login_asks_for_the_key_without_echo_so_it_stays_out_of_shell_history(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    env = without_key(agent_env)
    code, out = in_terminal(env, ["login", "--url", mmw_server.url], b"API key", tenancy.alice.key)
    assert code == 0, out
    assert "Logged in to" in out
    assert "Alice & Co" in out  # the account and project by name
    assert tenancy.alice.key not in out  # not echoed
    config = Path(env["XDG_CONFIG_HOME"]) / "mmw-agent" / "config.json"
    assert tenancy.alice.key in config.read_text()


def test_login_reads_the_key_from_stdin_when_it_is_piped(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    done = agent(without_key(agent_env), "login", "--url", mmw_server.url, stdin=tenancy.bob.key + "\n")
    assert done.returncode == 0, done.stderr
    assert tenancy.bob.key not in done.stdout + done.stderr


def test_a_refused_key_says_why(mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]) -> None:
    services.api_key_revoke(api_key=ApiKey.objects.get(prefix=tenancy.alice.key[4:12]), actor=tenancy.alice.user)
    done = agent(without_key(agent_env), "login", "--url", mmw_server.url, stdin=tenancy.alice.key + "\n")
    assert done.returncode == 1
    assert f"MMW server at {mmw_server.url} refused the API key: API key revoked (401)" in done.stderr


def test_status_before_consent_says_what_it_does_not_count(
    mmw_server: ThreadedServer, agent_env: dict[str, str]
) -> None:
    out = agent(agent_env, "status").stdout
    assert "None" not in out
    assert "pending: counted after consent" in out


def test_status_and_sync_say_what_waits_for_its_vector_on_the_server(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    records = [{"content": f"the release train note {i}"} for i in range(3)]
    response = httpx.post(f"{mmw_server.url}/api/v1/memories/batch", json={"records": records},
                          headers={"Authorization": f"Bearer {tenancy.alice.key}"}, timeout=30)  # fmt: skip
    assert response.json()["queued_for_vectors"] == 3  # no worker runs here: they stay unembedded
    assert (
        "vectors       0 turns and 3 records awaiting their vectors on the server" in agent(agent_env, "status").stdout
    )
    assert json.loads(agent(agent_env, "status", "--json").stdout)["awaiting_vectors"]["records"] == 3
    assert "Vectors: 0 turns and 3 records awaiting their vectors" in agent(agent_env, "sync").stdout
    Memory.objects.update(embedding_model="ngram-test")  # as if the worker had embedded them
    assert "vectors       everything uploaded is findable by meaning" in agent(agent_env, "status").stdout


def test_sync_sends_the_queued_writes_and_says_what_it_did(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    script = (
        "from mmw_agent import state; "
        "state.enqueue('remember', {'content': 'staging deploys from the release branch'}, state.new_idempotency_key())"
    )
    subprocess.run([AGENT_CMD[0], "-c", script], env=agent_env, check=True, timeout=60)
    done = agent(agent_env, "sync")
    assert done.returncode == 2, done.stderr  # uploads are off; the writes went anyway
    assert "uploads are off" in done.stderr
    assert "Queued writes: 1 sent, 0 refused, 0 still waiting." in done.stdout
    assert "Sessions: not uploaded (no consent; run `mmw-agent consent`)." in done.stdout
    assert not done.stdout.lstrip().startswith("{")
    assert Memory.objects.filter(content="staging deploys from the release branch").exists()
    report = json.loads(agent(agent_env, "sync", "--json").stdout)
    assert report["queued_writes"] == {"sent": 0, "refused": 0, "waiting": 0}


def test_the_last_contact_error_goes_when_the_server_is_back(
    mmw_server: ThreadedServer, agent_env: dict[str, str]
) -> None:
    mmw_server.stop()
    try:
        down = agent(agent_env, "status").stdout
    finally:
        mmw_server.start()
    assert "last error" in down
    assert "unreachable" in down
    back = agent(agent_env, "status").stdout
    assert "reachable: True" in back
    assert "last error" not in back


def test_the_consent_screen_names_the_account_and_the_project(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    code, out = in_terminal(agent_env, ["consent"], b"Type yes", "no")
    assert code == 1
    assert "project alpha of Alice & Co" in out
    assert str(tenancy.alice.project.pk) not in out
