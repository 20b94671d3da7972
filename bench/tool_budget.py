"""What ``tools/list`` costs an agent, per kind of MMW key, beside a peer MCP memory server, in one run.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/tool_budget.py [--no-peer] [--json]

MMW: ``manage.py serve --no-worker`` on the bench database (``common.Server``), one key of each
kind issued through ``api_key_create`` (``KINDS``), each listing fetched with the official MCP
Python client over HTTP. The peer: ``basic-memory`` (``PEER_VERSION``) from PyPI, installed by
this script into ``var/peers/basic-memory`` (a Python 3.12 virtualenv; it needs 3.12 or newer:
``--python``), run over stdio with a home of its own (``var/peers/basic-memory-home``, so no
file of the user's is read or written) and listed with the same client. Both answers are
measured by ``interfaces.mcp_server.budget.measure``: the same byte count for both (its docstring says
which), tokens estimated as bytes / 4. A benchmark, not a test: the budget itself is held by
``tests/memories/test_mcp_budget.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.common import log, markdown_table

PEER = "basic-memory"
PEER_VERSION = "0.24.1"
PEERS_DIR = common.ROOT / "var" / "peers"
PYTHON_312 = "/root/.pyenv/versions/3.12.1/bin/python3.12"

# kind of key → its scopes
KINDS: dict[str, tuple[str, ...]] = {
    "default (memory:read, memory:write)": ("memory:read", "memory:write"),
    "read-only (memory:read)": ("memory:read",),
    "ledger only (ledger:read, ledger:write)": ("ledger:read", "ledger:write"),
    "all four scopes": ("memory:read", "memory:write", "ledger:read", "ledger:write"),
}


def issue_keys() -> dict[str, str]:
    """A key of each kind on the bench account's ``tool-budget`` project."""
    from accounts import services
    from accounts.models import Project

    tenant = common.bench_tenant("tool-budget")
    user, _ = services.user_get_or_create(email=common.BENCH_EMAIL)
    project = Project.objects.get(id=tenant.project_id)
    return {
        kind: services.api_key_create(user=user, project=project, name=f"tool-budget {kind}", scopes=scopes).raw
        for kind, scopes in KINDS.items()
    }


async def _listing(client: Any) -> dict[str, Any]:
    result = await client.list_tools()
    answer: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answer


def mmw_listings(data_dir: Path, keys: dict[str, str]) -> dict[str, dict[str, Any]]:
    import asyncio

    with common.Server(data_dir, os.environ.get("MMW_EMBEDDING_BACKEND", "use"), "tool-budget") as server:
        return {kind: asyncio.run(common.mcp_session(server.url, key, _listing)) for kind, key in keys.items()}


def install_peer(python: str) -> Path:
    """``basic-memory`` in its own virtualenv under var/peers (git-ignored); pip only when missing."""
    venv = PEERS_DIR / PEER
    executable = venv / "bin" / PEER
    installed = subprocess.run([str(venv / "bin" / "pip"), "show", PEER], capture_output=True, text=True)
    if executable.exists() and f"Version: {PEER_VERSION}" in installed.stdout:
        return executable
    log(f"installing {PEER}=={PEER_VERSION} into {venv} (with {python})")
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{PEER}=={PEER_VERSION}"], check=True)
    return executable


def peer_listing(executable: Path) -> dict[str, Any]:
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    home = PEERS_DIR / f"{PEER}-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "BASIC_MEMORY_HOME": str(home / "notes"),
        "BASIC_MEMORY_CONFIG_DIR": str(home / "config"),
        "BASIC_MEMORY_NO_PROMOS": "1",
        "BASIC_MEMORY_LOG_LEVEL": "WARNING",
    }
    params = StdioServerParameters(command=str(executable), args=["mcp", "--transport", "stdio"], env=env)

    async def run() -> dict[str, Any]:
        with (home / "stderr.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await _listing(client)

    listing: dict[str, Any] = anyio.run(run)
    return listing


def row(label: str, answer: dict[str, Any], measure: Callable[[dict[str, Any]], Any]) -> list[Any]:
    sizes = measure(answer)
    return [
        label,
        sizes.tools,
        f"{sizes.model_reads:,} (~{sizes.model_reads_tokens:,})",
        f"{sizes.output_schemas:,}",
        f"{sizes.whole:,} (~{sizes.whole_tokens:,})",
        f"{sizes.wire:,}",
        f"{sizes.longest_description:,}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    parser.add_argument("--no-peer", action="store_true", help="measure MMW only")
    parser.add_argument("--python", default=PYTHON_312, help="a Python >= 3.12 for the peer's virtualenv")
    parser.add_argument("--json", action="store_true", help="also print each listing's sizes as JSON")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    os.environ.setdefault("MMW_WARM_MODELS", "0")  # a listing embeds nothing
    common.setup_django(data_dir)
    from interfaces.mcp_server.budget import BUDGET, measure

    keys = issue_keys()
    listings = {f"MMW, {kind}": answer for kind, answer in mmw_listings(data_dir, keys).items()}
    if not args.no_peer:
        listings[f"{PEER} {PEER_VERSION} (PyPI, stdio)"] = peer_listing(install_peer(args.python))
    notes = common.machine_notes()
    print(
        f"`bench/tool_budget.py`, {notes['date']}, {notes['cpu']} ({notes['cores']} cores), git {notes['git']}; "
        f"bytes = Python's json.dumps of the client's parsed answer, tokens ~ bytes / 4; "
        f"budget for a default key: ≤ {BUDGET.model_reads:,} / ≤ {BUDGET.whole:,} bytes, "
        f"descriptions ≤ {BUDGET.description_chars:,} characters"
    )
    header = [
        "server, key",
        "tools",
        "names + descriptions + input schemas, bytes (~tokens)",
        "output schemas, bytes",
        "whole answer, bytes (~tokens)",
        "compact UTF-8, bytes",
        "longest description, chars",
    ]
    print(markdown_table(header, [row(label, answer, measure) for label, answer in listings.items()]))
    if args.json:
        print(json.dumps({label: vars(measure(answer)) for label, answer in listings.items()}, indent=2))


if __name__ == "__main__":
    main()
