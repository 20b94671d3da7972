"""The importers on files the other services' own libraries write, installed from PyPI into
var/peers by scripts/ensure_peers.sh (pinned): mem0's ``Memory.get_all`` (``infer=False``, no
hosted model), basic-memory's ``write_note``, and Supermemory SDK 5's ``ListResponse``. Each file
goes into MMW and comes back out of MMW's own export — the round trip — and importing it again
adds nothing. (Letta's agent files are copied from Letta's own tests: test_import_from.py.)"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from accounts.keys import Principal
from dashboard.principals import principal_for_user
from datarights import export
from datarights.importers.items import Upload
from datarights.importers.services import peer_import
from tests.conftest import Tenancy

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "var" / "peers"
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def peers() -> Path:
    subprocess.run(["bash", str(ROOT / "scripts" / "ensure_peers.sh")], check=True, timeout=1800)
    return PEERS


def principal(tenancy: Tenancy) -> Principal:
    found = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    assert found is not None
    return found


def exported_memories(tenancy: Tenancy) -> dict[str, dict[str, Any]]:
    """The project's records as MMW's own export writes them, by source_id."""
    scope = export.scope_for_member(
        user=tenancy.alice.user, account=tenancy.alice.account, project=tenancy.alice.project
    )
    data = gzip.decompress(b"".join(export.gzip_chunks(export.export_lines(scope))))
    lines = [json.loads(line) for line in data.splitlines()]
    return {line["source_id"]: line for line in lines if line["type"] == "memory" and not line["forgotten"]}


def make(python: Path, script: str, out: Path) -> None:
    run = subprocess.run(
        [str(python), str(HERE / "peers" / script), str(out)], capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_a_file_written_by_mem0_round_trips(peers: Path, tenancy: Tenancy, tmp_path: Path) -> None:
    made = tmp_path / "get_all.json"
    make(peers / "py" / "bin" / "python", "make_mem0.py", made)
    memories = json.loads(made.read_text())["results"]
    report = peer_import(principal=principal(tenancy), service="mem0", upload=Upload.of_path(made))
    assert (report.created, report.redacted, report.refused_count) == (len(memories), 1, 0)
    out = exported_memories(tenancy)
    for memory in memories:
        line = out[f"mem0:{memory['id']}"]
        assert line["occurred_at"] == memory["created_at"]
        assert line["source"] == "mem0"
        assert f"user:{memory['user_id']}" in line["tags"]
        if "password" in memory["memory"]:
            assert "[REDACTED:password_assignment:" in line["content"]
        else:
            assert line["content"] == memory["memory"]
    again = peer_import(principal=principal(tenancy), service="mem0", upload=Upload.of_path(made))
    assert (again.created, again.unchanged) == (0, len(memories))


def test_notes_written_by_basic_memory_round_trip(peers: Path, tenancy: Tenancy, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    make(peers / "basic-memory" / "bin" / "python", "make_basic_memory.py", folder)
    notes = sorted(folder.rglob("*.md"))
    assert len(notes) == 3
    report = peer_import(principal=principal(tenancy), service="basic-memory", upload=Upload.of_path(folder))
    assert (report.created, report.redacted, report.refused_count) == (3, 1, 0)
    out = exported_memories(tenancy)
    deploy = out["basic-memory:main/engineering/deploy-process"]
    assert deploy["content"].startswith("# Deploy process\n\nDeploys go through staging first.")
    assert sorted(deploy["tags"]) == ["deploy", "ops", "type:note"]
    assert "[REDACTED:stripe_key:" in out["basic-memory:main/ops/vendor-access"]["content"]
    again = peer_import(principal=principal(tenancy), service="basic-memory", upload=Upload.of_path(folder))
    assert (again.created, again.unchanged) == (0, 3)


def test_what_the_supermemory_sdk_serializes_round_trips(peers: Path, tenancy: Tenancy, tmp_path: Path) -> None:
    made = tmp_path / "list.json"
    code = (
        "import json, sys\n"
        "from supermemory.types.list_response import ListResponse\n"
        "pages = [ListResponse.model_validate(p) for p in json.load(open(sys.argv[1]))]\n"
        "json.dump([p.model_dump(by_alias=True, mode='json') for p in pages], open(sys.argv[2], 'w'))\n"
    )
    fixture = HERE / "fixtures" / "peers" / "supermemory" / "list.json"
    run = subprocess.run(
        [str(peers / "py" / "bin" / "python"), "-c", code, str(fixture), str(made)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = peer_import(principal=principal(tenancy), service="supermemory", upload=Upload.of_path(made))
    assert (report.created, report.skipped, report.refused_count) == (3, 2, 0)
    out = exported_memories(tenancy)
    assert out["supermemory:mem_9c8d7e"]["occurred_at"] == "2025-03-15T09:31:00+00:00"
    assert out["supermemory:doc_4f1a2b"]["content"].startswith("# Incident review: March outage")
