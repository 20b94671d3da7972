"""``mmw-agent sync`` against the real session routes: fixture trees of both clients
become sessions found by ``search_sessions`` with context; a second sync uploads nothing; an
append uploads only the new turns; a secret comes back redacted; a malformed line is counted.

The routes come with the sessions work (issue #15); until a server has them, these tests skip —
they check the served OpenAPI schema, so they start running the moment the routes exist."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent.conftest import AGENT_CMD
from tests.conftest import Tenancy
from tests.live import ThreadedServer

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_SESSION = "5f0c3a9e-1b2d-4c3e-8f4a-0a1b2c3d4e5f"


def require_session_routes(url: str) -> None:
    paths = httpx.get(f"{url}/api/v1/schema/?format=json", timeout=30).json().get("paths", {})
    if not any(p.startswith("/api/v1/sessions/") and p.endswith("/turns") for p in paths):
        pytest.skip("this server has no session routes yet (issue #15)")


def agent(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENT_CMD, *args], env=env, capture_output=True, text=True, timeout=120)


def search(url: str, key: str, query: str, **extra: object) -> list[dict[str, Any]]:
    response = httpx.post(
        f"{url}/api/v1/sessions/search",
        json={"query": query, **extra},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def test_sync_uploads_both_clients_once_then_only_appended_turns(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str]
) -> None:
    url, key = mmw_server.url, tenancy.alice.key
    require_session_routes(url)
    shutil.copytree(FIXTURES / "claude", agent_env["MMW_AGENT_CLAUDE_DIR"], dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "codex", agent_env["MMW_AGENT_CODEX_DIR"], dirs_exist_ok=True)
    # Consent is given in a terminal (test_consent.py); here it is written to the state directly.
    script = (
        "from mmw_agent import state, consent; "
        "state.put(consent.KEY, {'given': True, 'sources': ['claude-code', 'codex']})"
    )
    subprocess.run([AGENT_CMD[0], "-c", script], env=agent_env, check=True, timeout=60)

    first = agent(agent_env, "sync", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["turns_created"] == 7
    assert report["unknown_lines"] == 3  # counted, not fatal

    hits = search(url, key, "terraform bastion recreate", client="codex", context=2)
    assert hits, "the Codex session is not found"
    assert hits[0]["session"]["session_id"] == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    around = [t["content"] for t in hits[0]["context_before"] + hits[0]["context_after"]]
    assert any("aws_ami.latest" in c for c in [*around, hits[0]["turn"]["content"]])

    secret = search(url, key, "checkout test payment retry staging key", client="claude-code")
    user_turn = next(h["turn"] for h in secret if h["turn"]["position"] == 0)
    assert "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c" not in user_turn["content"]
    assert "[REDACTED:" in user_turn["content"]

    second = agent(agent_env, "sync", "--json")
    assert json.loads(second.stdout)["turns_created"] == 0
    assert json.loads(second.stdout)["turns_unchanged"] == 0

    claude_file = next(Path(agent_env["MMW_AGENT_CLAUDE_DIR"]).rglob("*.jsonl"))
    with claude_file.open("a") as handle:
        line = {
            "type": "user",
            "timestamp": "2026-01-15T09:05:00Z",
            "message": {"role": "user", "content": "merge the idempotency token fix into the release branch"},
        }
        handle.write(json.dumps(line) + "\n")
    third = json.loads(agent(agent_env, "sync", "--json").stdout)
    assert (third["turns_created"], third["turns_unchanged"]) == (1, 0)
    hit = search(url, key, "merge idempotency token fix release branch", session_id=CLAUDE_SESSION)[0]
    assert hit["turn"]["position"] == 4

    status = json.loads(agent(agent_env, "status", "--json").stdout)
    assert status["turns"]["uploaded"] == 8
    assert status["turns"]["pending"] == 0
    assert status["sessions"]["uploaded"] == 2
