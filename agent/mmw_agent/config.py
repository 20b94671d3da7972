"""Where the agent keeps its files, and the per-user configuration (server URL and key).

Config: ``$XDG_CONFIG_HOME/mmw-agent/config.json`` (default ``~/.config``), mode 0600, written by
``mmw-agent login``. State (the write queue, upload progress, consent, the cached tool list):
``$XDG_STATE_HOME/mmw-agent/`` (default ``~/.local/state``). ``MMW_URL`` / ``MMW_API_KEY``
override the stored server and key; the folders read for sessions are
``MMW_AGENT_CLAUDE_DIR`` (default ``~/.claude/projects``) and ``MMW_AGENT_CODEX_DIR``
(default ``~/.codex/sessions``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

APP = "mmw-agent"


class ConfigError(Exception):
    """The agent is not configured (no server or key): the message says what to run."""


def _base(env: str, default: str) -> Path:
    value = os.environ.get(env, "").strip()
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def config_dir() -> Path:
    return _base("XDG_CONFIG_HOME", ".config") / APP


def state_dir() -> Path:
    return _base("XDG_STATE_HOME", ".local/state") / APP


def config_path() -> Path:
    return config_dir() / "config.json"


def claude_dir() -> Path:
    value = os.environ.get("MMW_AGENT_CLAUDE_DIR", "").strip()
    return Path(value) if value else Path.home() / ".claude" / "projects"


def codex_dir() -> Path:
    value = os.environ.get("MMW_AGENT_CODEX_DIR", "").strip()
    return Path(value) if value else Path.home() / ".codex" / "sessions"


def _flag(env: str, stored: Any) -> bool:
    value = os.environ.get(env)
    if value is not None and value.strip():
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(stored)


@dataclass(frozen=True)
class Config:
    url: str  # the server's base URL, no trailing slash
    key: str
    project_id: str = ""
    tenant_id: str = ""
    include_tool_output: bool = False
    include_reasoning: bool = False

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v1"


def normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    for suffix in ("/mcp", "/api/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"the server URL must start with http:// or https:// (got {url!r})")
    return url


def read_stored() -> dict[str, Any]:
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {config_path()}: {exc}") from None
    return data if isinstance(data, dict) else {}


def load() -> Config:
    """The configuration: the stored file, overridden by ``MMW_URL`` / ``MMW_API_KEY``."""
    stored = read_stored()
    url = os.environ.get("MMW_URL", "").strip() or str(stored.get("url") or "")
    key = os.environ.get("MMW_API_KEY", "").strip() or str(stored.get("key") or "")
    if not url or not key:
        raise ConfigError(
            "not configured: run `mmw-agent login --url URL` (it asks for the key), or set MMW_URL and MMW_API_KEY"
        )
    return Config(
        url=normalise_url(url),
        key=key,
        project_id=str(stored.get("project_id") or ""),
        tenant_id=str(stored.get("tenant_id") or ""),
        include_tool_output=_flag("MMW_AGENT_INCLUDE_TOOL_OUTPUT", stored.get("include_tool_output")),
        include_reasoning=_flag("MMW_AGENT_INCLUDE_REASONING", stored.get("include_reasoning")),
    )


def save(data: dict[str, Any]) -> Path:
    """Write the config file with mode 0600 (created so; an existing file is tightened first)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path
