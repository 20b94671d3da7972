"""What ``mmw_sync_status`` and ``mmw-agent status`` report (one function for both)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from mmw_agent import consent, sources, state, sync
from mmw_agent.config import Config
from mmw_agent.remote import KeyRefused, Remote, Unreachable


def _iso(stamp: Any) -> str | None:
    if not isinstance(stamp, int | float):
        return None
    return dt.datetime.fromtimestamp(stamp, tz=dt.UTC).isoformat(timespec="seconds")


def check_server(remote: Remote) -> None:
    """Ask the server once (``GET /api/v1/workspaces``: reachability and the key) and note it,
    with what it says still waits for its vector (``note_awaiting``)."""
    try:
        response = remote.rest("GET", "/workspaces")
    except (Unreachable, KeyRefused) as exc:
        state.note_contact(ok=False, error=str(exc))
    else:
        state.note_contact(ok=True)
        if response.status_code == 200:
            note_awaiting(response.json())


def note_awaiting(listed: Any) -> None:
    """Keep what a ``list_workspaces`` answer says is stored but not embedded yet (found by
    keywords only until then): ``{"records": n, "turns": n, "at": time}``. A server that does not
    say (older than issue #37) leaves nothing."""
    if not isinstance(listed, dict) or not isinstance(listed.get("pending_turns"), int):
        return
    rows = listed.get("workspaces") or []
    records = sum(int(w.get("pending_vectors") or 0) for w in rows if isinstance(w, dict))
    state.put("awaiting_vectors", {"records": records, "turns": listed["pending_turns"], "at": time.time()})


def awaiting() -> dict[str, Any] | None:
    """The last ``note_awaiting`` with its time as ISO 8601, or None when never noted."""
    kept = state.get("awaiting_vectors")
    if not isinstance(kept, dict):
        return None
    return {"records": kept.get("records"), "turns": kept.get("turns"), "at": _iso(kept.get("at"))}


def collect(cfg: Config) -> dict[str, Any]:
    given = consent.current()
    progress = state.all_progress()
    found = []
    for source in sources.sources():
        files = sources.files_of(source)
        found.append({"client": source.client, "folder": str(source.folder), "session_files": len(files)})
    pending_files, pending_turns = sync.pending_turns(cfg) if given.get("given") else (None, None)
    last_error = state.get("last_error")
    tool_list = state.get("tool_list") or {}
    return {
        "server": cfg.url,
        "reachable": state.get("reachable"),
        "last_contact": _iso(state.get("last_contact")),
        "consent": {
            "given": bool(given.get("given")),
            "at": _iso(given.get("at")),
            "revoked_at": _iso(given.get("revoked_at")),
            "sources": given.get("sources") or [],
            "recorded_on_server": state.get("consent_server_pending") is None and bool(given),
        },
        "sources": found,
        "sessions": {
            "uploaded": sum(1 for p in progress if p["session_put"]),
            "pending": pending_files,
            "failed": sum(1 for p in progress if p["last_error"]),
        },
        "turns": {
            "uploaded": sum(p["turns_uploaded"] for p in progress),
            "pending": pending_turns,
            "failed": sum(p["turns_failed"] for p in progress),
            "unknown_lines_skipped": sum(p["unknown_lines"] for p in progress),
        },
        "awaiting_vectors": awaiting(),
        "queued_writes": state.queue_counts(),
        "failed_writes": state.failed_writes(),
        "tool_list": {"source": tool_list.get("source"), "at": _iso(tool_list.get("at"))},
        "last_error": (
            {"at": _iso(last_error.get("at")), "message": last_error.get("message")}
            if isinstance(last_error, dict)
            else None
        ),
    }
