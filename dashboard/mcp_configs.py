"""Ready-to-paste MCP client configurations for a freshly issued key."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings


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
    ]
