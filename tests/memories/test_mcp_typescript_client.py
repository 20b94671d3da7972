"""The official MCP TypeScript SDK client (``@modelcontextprotocol/sdk``, pinned in
scripts/ensure_conformance.sh) with a bearer key against the live ``/mcp`` (issue #18: keys keep
working for non-Python clients). The script calls every tool its key is listed; the SDK client
validates each ``structuredContent`` against the tool's ``outputSchema`` itself, so a drift between
the two fails here too."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from accounts.models import ALL_SCOPES
from interfaces import reference
from tests import live
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import LiveServer
from tests.memories.test_mcp_conformance import ROOT, conformance

live_server = live.live_server
__all__ = ["conformance"]

SCRIPT = Path(__file__).with_name("ts_client.mjs")


def run_client(url: str, key: str) -> dict[str, Any]:
    # ESM resolves packages from the script's folder up: run a copy beside var/conformance's node_modules
    script = ROOT / "var" / "conformance" / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    run = subprocess.run(["node", str(script), f"{url}/mcp", key], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    seen: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return seen


def test_the_typescript_sdk_client_calls_tools_and_reads_resources_with_a_key(
    conformance: Path, live_server: LiveServer, tenancy: Tenancy
) -> None:
    seen = run_client(live_server, tenancy.alice.key)  # a default key: the memory tools
    assert seen["server"]["name"] == "mmw"
    names = [tool["name"] for tool in seen["tools"]]
    assert names == [name for name in reference.TOOLS if not name.startswith("ledger_")]
    assert all(tool["outputSchema"] for tool in seen["tools"])
    assert set(seen["called"]) == set(names)  # each called once, its answer checked against its outputSchema
    assert not any(answer["isError"] for answer in seen["called"].values())
    assert seen["found"]["memory"]["content"] == "written by the TypeScript SDK"
    assert seen["found"]["memory"]["author"]["device_label"] == "alice-laptop"
    assert seen["searched"]["results"][0]["id"] == seen["saved"]["id"]
    uri = f"mmw://memories/{seen['saved']['id']}"
    assert seen["read"] == [uri]


def test_the_typescript_sdk_client_calls_every_tool_with_a_key_of_every_scope(
    conformance: Path, live_server: LiveServer, tenancy: Tenancy
) -> None:
    key = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES)
    seen = run_client(live_server, key)
    assert [tool["name"] for tool in seen["tools"]] == list(reference.TOOLS)
    assert set(seen["called"]) == set(reference.TOOLS)
    assert not any(answer["isError"] for answer in seen["called"].values())
