"""The official MCP TypeScript SDK client (``@modelcontextprotocol/sdk``, pinned in
scripts/ensure_conformance.sh) with a bearer key against the live ``/mcp`` (issue #18: keys keep
working for non-Python clients). The SDK client validates every ``structuredContent`` against the
tool's ``outputSchema`` itself, so a drift between the two fails here too."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer
from tests.memories.test_mcp_conformance import ROOT, conformance

live_server = live.live_server
__all__ = ["conformance"]

SCRIPT = Path(__file__).with_name("ts_client.mjs")


def test_the_typescript_sdk_client_calls_tools_and_reads_resources_with_a_key(
    conformance: Path, live_server: LiveServer, tenancy: Tenancy
) -> None:
    # ESM resolves packages from the script's folder up: run a copy beside var/conformance's node_modules
    script = ROOT / "var" / "conformance" / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    run = subprocess.run(
        ["node", str(script), f"{live_server}/mcp", tenancy.alice.key], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["server"]["name"] == "mmw"
    names = {tool["name"] for tool in seen["tools"]}
    assert {"remember", "search", "get_memory", "ledger_record"} <= names
    assert all(tool["outputSchema"] for tool in seen["tools"])
    assert seen["found"]["memory"]["content"] == "written by the TypeScript SDK"
    assert seen["found"]["memory"]["author"]["device_label"] == "alice-laptop"
    assert seen["searched"]["results"][0]["id"] == seen["saved"]["id"]
    uri = f"mmw://memories/{seen['saved']['id']}"
    assert seen["read"] == [uri]
