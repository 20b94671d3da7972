"""The TypeScript SDK (clients/typescript): its types are those of the served OpenAPI schema (a
drift fails), its committed build is its source compiled, and its Node tests pass against a live
server (every operation; an answer lost after the commit retried without a second record). The
build tools are pinned in scripts/ensure_ts_sdk.sh and installed into var/ts-sdk (git-ignored);
everything built here goes to pytest's temporary folder."""

from __future__ import annotations

import filecmp
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from accounts.models import ALL_SCOPES
from tests import live
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import LiveServer

live_server = live.live_server
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "clients" / "typescript"
REFRESH = (
    "refresh it: save GET /api/v1/schema/ (Accept: application/vnd.oai.openapi+json) to a file, then "
    "scripts/ts_sdk.sh generate FILE && scripts/ts_sdk.sh build"
)


@pytest.fixture(scope="module")
def tools() -> None:
    subprocess.run(["bash", str(ROOT / "scripts" / "ensure_ts_sdk.sh")], check=True, timeout=600, capture_output=True)


def sh(*args: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ts_sdk.sh"), *args], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run


def test_the_types_are_generated_from_the_served_schema(tools: None, live_server: LiveServer, tmp_path: Path) -> None:
    served = httpx.get(f"{live_server}/api/v1/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})
    assert served.status_code == 200
    (tmp_path / "schema.json").write_bytes(served.content)
    sh("generate", str(tmp_path / "schema.json"), str(tmp_path / "schema.ts"))
    fresh, committed = (tmp_path / "schema.ts").read_text(), (SDK / "src" / "schema.ts").read_text()
    assert fresh == committed, f"clients/typescript/src/schema.ts differs from the served schema: {REFRESH}"


OPERATIONS = {  # operationId → the client's method
    "remember": "remember", "remember_batch": "rememberBatch", "memory_get": "getMemory",
    "memory_forget_by_id": "forgetById", "forget": "forget", "memory_history_by_id": "history",
    "memory_history_by_fact_key": "historyByFactKey", "search": "search", "validate_memory": "validate",
    "recall_context": "recall", "list_workspaces": "workspaces", "list_sessions": "listSessions",
    "get_session": "getSession", "upsert_session": "upsertSession", "forget_session_by_path": "forgetSession",
    "add_session_turns": "addTurns", "search_sessions": "searchSessions", "ledger_record": "ledgerRecord",
    "ledger_list": "ledgerList", "ledger_balance": "ledgerBalance", "ledger_reverse": "ledgerReverse",
    "ledger_upcoming": "ledgerUpcoming", "ledger_complete": "ledgerComplete", "agent_consent": "agentConsent",
    "agent_consent_scope": "agentConsentScope",
    "healthz": "healthz",
}  # fmt: skip


def test_every_operation_of_the_schema_has_a_method() -> None:
    schema = (SDK / "src" / "schema.ts").read_text()
    declared = (SDK / "dist" / "index.d.ts").read_text()
    operations = set(
        re.findall(r"^    ([a-z_]+): \{$", schema.split("export interface operations {", 1)[1], flags=re.M)
    )
    assert operations == set(OPERATIONS)
    missing = [m for m in OPERATIONS.values() if not re.search(rf"^    {m}\(", declared, flags=re.M)]
    assert not missing


def test_the_committed_build_is_the_source_compiled(tools: None, tmp_path: Path) -> None:
    sh("build", str(tmp_path / "dist"))
    compared = filecmp.dircmp(tmp_path / "dist", SDK / "dist")
    stale = compared.diff_files + compared.left_only + compared.right_only
    assert not stale, f"clients/typescript/dist is not src compiled ({stale}): scripts/ts_sdk.sh build"
    assert not filecmp.cmpfiles(tmp_path / "dist", SDK / "dist", os.listdir(SDK / "dist"), shallow=False)[1]


def test_the_node_tests_pass_against_a_live_server(tools: None, live_server: LiveServer, tenancy: Tenancy) -> None:
    key = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES, device_label="ts-sdk")
    run = subprocess.run(
        ["node", "--test", "--test-concurrency=1", *sorted(str(p) for p in (SDK / "test").glob("*.test.mjs"))],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MMW_URL": str(live_server), "MMW_API_KEY": key},
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout
    assert "ok 1 - every operation" in run.stdout
    assert "ok 2 - an answer lost after the commit is retried without a second record" in run.stdout
