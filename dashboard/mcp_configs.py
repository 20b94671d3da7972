"""Ready-to-paste MCP client configurations for a freshly issued key, and a curl call that checks it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings

from accounts.models import SCOPE_WRITE


@dataclass(frozen=True)
class ClientConfig:
    client: str
    where: str
    text: str


def mcp_url() -> str:
    return f"{settings.PUBLIC_URL}/mcp"


def configs_for(raw_key: str, *, name: str = "mmw") -> list[ClientConfig]:
    url = mcp_url()
    auth = f"Bearer {raw_key}"
    generic = {"mcpServers": {name: {"type": "http", "url": url, "headers": {"Authorization": auth}}}}
    cursor = {"mcpServers": {name: {"url": url, "headers": {"Authorization": auth}}}}
    codex = f'[mcp_servers.{name}]\nurl = "{url}"\nhttp_headers = {{ "Authorization" = "{auth}" }}\n'
    return [
        ClientConfig(
            "Claude Code",
            "run in a terminal",
            f'claude mcp add --transport http {name} {url} --header "Authorization: {auth}"',
        ),
        ClientConfig("Cursor", "~/.cursor/mcp.json (or .cursor/mcp.json in a project)", json.dumps(cursor, indent=2)),
        ClientConfig("Codex", "~/.codex/config.toml", codex),
        ClientConfig("Any MCP client (JSON)", "the client's MCP servers file", json.dumps(generic, indent=2)),
        agent_config(),
    ]


def agent_config() -> ClientConfig:
    """The local agent ``mmw-agent`` (docs/agent.md): the same tools through a stdio server, writes
    queued on disk while the server is unreachable, session upload after consent. Its ``login``
    asks for the key, so the key is pasted at a prompt, never left in a shell's history."""
    text = (
        "pip install ./agent                 # from a checkout of MMW (Python 3.11+)\n"
        f"mmw-agent login --url {settings.PUBLIC_URL}   # asks for the key: paste it there\n"
        "claude mcp add mmw -- mmw-agent     # Codex, Cursor: the command is mmw-agent"
    )
    return ClientConfig("Local agent (mmw-agent)", "offline queue and session upload, on your computer", text)


def curl_for(raw_key: str, scopes: list[str]) -> ClientConfig:
    """One REST call that proves the key works: a write key remembers a first record (then visible
    under Memories), a read-only key searches."""
    base = f"{settings.PUBLIC_URL}/api/v1/memories"
    if SCOPE_WRITE in scopes:
        url, body = base, {"content": "MMW is connected: this key can remember", "source": "curl"}
    else:
        url, body = f"{base}/search", {"query": "MMW"}
    text = (
        f"curl -sS -X POST {url} \\\n"
        f'  -H "Authorization: Bearer {raw_key}" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        f"  -d '{json.dumps(body)}'"
    )
    return ClientConfig("REST (curl)", "any terminal: checks the key now", text)
