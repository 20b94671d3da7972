"""Consent to upload session history: asked in a terminal only, stored locally, recorded on the
server (``POST /api/v1/agent/consent``, an audit event in the account).

There is no flag that answers the question: ``mmw-agent consent`` refuses to run without a
terminal on both stdin and stdout, and only the typed word ``yes`` gives consent. ``--revoke``
turns uploads off locally first (a running sync stops before its next batch), then tells the
server; it needs no terminal, since stopping must always be possible.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

from mmw_agent import parsers, sources, state
from mmw_agent.config import Config
from mmw_agent.remote import KeyRefused, Remote, Unreachable, error_message

KEY = "consent"


def current() -> dict[str, Any]:
    value = state.get(KEY, {})
    return value if isinstance(value, dict) else {}


def uploads_allowed() -> bool:
    return current().get("given") is True


def allowed_sources() -> list[str]:
    value = current().get("sources")
    return [str(s) for s in value] if isinstance(value, list) else []


def _survey(cfg: Config) -> list[dict[str, Any]]:
    """Per source: its folder, sessions and turns found (read here, on this machine; nothing is sent)."""
    options = parsers.Options(include_tool_output=cfg.include_tool_output, include_reasoning=cfg.include_reasoning)
    found = []
    for source in sources.sources():
        files = sources.files_of(source)
        turns = 0
        for f in files:
            try:
                turns += len(parsers.parse(f.client, f.path.read_bytes(), 0, options).turns)
            except OSError:
                continue
        found.append(
            {
                "client": source.client,
                "label": source.label,
                "folder": str(source.folder),
                "sessions": len(files),
                "turns": turns,
            }
        )
    return found


def scope_words(remote: Remote, project_id: str) -> str:
    """The key's project and account by name ("project alpha of Acme"), as the server names them
    (``GET /api/v1/agent/consent``); the project's id when the server cannot say."""
    try:
        response = remote.rest("GET", "/agent/consent")
        data = response.json() if response.status_code == 200 else {}
    except (Unreachable, KeyRefused, ValueError):
        data = {}
    if isinstance(data, dict) and isinstance(data.get("project"), str) and isinstance(data.get("account"), str):
        return f"project {data['project']} of {data['account']}"
    return f"project {project_id}" if project_id else "the project of your API key"


def _tell_server(remote: Remote, given: bool, client_sources: list[str]) -> str:
    """Record the decision on the server; returns what to tell the user about it."""
    try:
        response = remote.rest("POST", "/agent/consent", json={"given": given, "sources": client_sources})
    except (Unreachable, KeyRefused) as exc:
        state.put("consent_server_pending", {"given": given, "sources": client_sources})
        return f"not yet recorded on the server: {exc}; it will be when the agent next reaches it"
    if response.status_code >= 400:
        state.put("consent_server_pending", {"given": given, "sources": client_sources})
        return f"not recorded on the server: {error_message(response)}"
    state.put("consent_server_pending", None)
    return "recorded in your account's audit log on the server"


def flush_pending(remote: Remote) -> None:
    """Send a consent decision the server missed (it was unreachable at the time)."""
    pending = state.get("consent_server_pending")
    if isinstance(pending, dict):
        _tell_server(remote, bool(pending.get("given")), list(pending.get("sources") or []))


def ask(cfg: Config, remote: Remote, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    if not (os.isatty(stdin.fileno()) and os.isatty(stdout.fileno())):
        print(
            "mmw-agent consent must be run in a terminal: it asks you a question and only your typed answer counts.",
            file=sys.stderr,
        )
        return 2
    found = _survey(cfg)
    project = scope_words(remote, cfg.project_id)
    out = stdout
    out.write("mmw-agent will upload your coding sessions to MMW.\n\n")
    out.write("It will read these folders:\n")
    for item in found:
        out.write(f"  {item['label']}: {item['folder']} — {item['sessions']} sessions, {item['turns']} turns found\n")
    out.write(f"\nThey go to: {cfg.url} ({project}), as your sessions (visible to you only unless you share them).\n")
    out.write(
        "Uploaded: your messages and the assistant's, and one line per tool call. "
        f"Tool outputs: {'uploaded' if cfg.include_tool_output else 'not uploaded'}. "
        f"Reasoning: {'uploaded' if cfg.include_reasoning else 'not uploaded'}.\n"
    )
    out.write(
        "On the server, Memory Guard redacts secrets (API keys, tokens, passwords, private keys) in every turn, "
        "and withholds turns it would refuse (instructions aimed at agents, role tags, invisible characters): "
        "they are kept only as a '[withheld by Memory Guard: <reason>]' stub.\n"
    )
    out.write("Stop at any time with `mmw-agent consent --revoke`; delete uploaded sessions in the dashboard.\n\n")
    out.write("Type yes to allow uploads: ")
    out.flush()
    answer = stdin.readline().strip()
    if answer != "yes":
        out.write("No consent given: nothing will be uploaded.\n")
        return 1
    chosen = [item["client"] for item in found]
    state.put(KEY, {"given": True, "at": time.time(), "sources": chosen, "server": cfg.url})
    out.write(f"Consent given for {', '.join(chosen)}; {_tell_server(remote, True, chosen)}.\n")
    out.write("Run `mmw-agent sync` to upload now (the MCP server also uploads in the background).\n")
    return 0


def revoke(cfg: Config, remote: Remote) -> int:
    before = current()
    state.put(KEY, {"given": False, "revoked_at": time.time(), "sources": [], "server": cfg.url})
    told = _tell_server(remote, False, [str(s) for s in before.get("sources") or []])
    print(f"Consent revoked: uploads stopped; {told}.")
    print("Sessions already uploaded stay on the server until you delete them (dashboard → Sessions).")
    return 0
