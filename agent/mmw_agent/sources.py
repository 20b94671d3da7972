"""The session files the agent may upload: Claude Code's and Codex's transcript folders.

Finding them only lists file names (nothing is opened); ``mmw-agent status`` shows these counts
with or without consent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mmw_agent import config

CLAUDE = "claude-code"
CODEX = "codex"


@dataclass(frozen=True)
class Source:
    client: str  # the server's <client> segment
    label: str
    folder: Path


@dataclass(frozen=True)
class SessionFile:
    client: str
    path: Path


def sources() -> list[Source]:
    return [
        Source(CLAUDE, "Claude Code", config.claude_dir()),
        Source(CODEX, "Codex", config.codex_dir()),
    ]


def files_of(source: Source) -> list[SessionFile]:
    """Claude Code: ``<project>/<session>.jsonl``, subagents beside them (``agent-*.jsonl``) or under
    ``<project>/<session>/subagents/``. Codex: ``YYYY/MM/DD/rollout-*.jsonl``. Sorted by path."""
    folder = source.folder
    if not folder.is_dir():
        return []
    pattern = "rollout-*.jsonl" if source.client == CODEX else "*.jsonl"
    found = [p for p in folder.rglob(pattern) if p.is_file() and not p.is_symlink()]
    return [SessionFile(source.client, p) for p in sorted(found)]


def all_files() -> list[SessionFile]:
    return [f for source in sources() for f in files_of(source)]
