"""Upload session files to the server, incrementally, only with consent.

Per file the state keeps the byte offset after the last line whose turns the server
acknowledged, the next turn position, and a fingerprint of the file's head. A run reads only the
bytes after the offset, so a re-run uploads nothing twice and an interrupted one resumes after
the last acknowledged batch (a batch re-sent after a crash is a no-op on the server: turns are
idempotent by position). A file that shrank or whose head changed was rewritten: it is read
again from the start under the same session; turns the server already holds come back
``unchanged``, and a position that now holds other text is a per-turn 409 — counted as failed
and reported, never overwritten.

Routes: ``PUT /api/v1/sessions/<client>/<session_id>`` (title, working directory,
started/ended), then ``POST …/turns`` ``{"turns": [{position, role, occurred_at, content}]}``,
at most 500 a call.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from mmw_agent import consent as consent_mod
from mmw_agent import parsers, sources, state
from mmw_agent.config import Config
from mmw_agent.remote import Remote, error_message

BATCH = 500
HEAD_BYTES = 4096
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)

Progress = Callable[[str, int, int], None]  # (file label, turns done, turns in this file's new part)


class NoConsent(Exception):
    """Uploads are off: consent was never given, or it was revoked."""


@dataclass
class Report:
    files: int = 0
    sessions: int = 0
    turns_created: int = 0
    turns_unchanged: int = 0
    turns_failed: int = 0
    unknown_lines: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "sessions": self.sessions,
            "turns_created": self.turns_created,
            "turns_unchanged": self.turns_unchanged,
            "turns_failed": self.turns_failed,
            "unknown_lines": self.unknown_lines,
            "errors": self.errors,
        }


def fingerprint(data: bytes, offset: int) -> str:
    return hashlib.sha256(data[: min(offset, HEAD_BYTES)]).hexdigest()


def session_id_for(f: sources.SessionFile, parsed: parsers.Parsed) -> str:
    stem = f.path.stem
    if f.client == sources.CODEX:
        if parsed.session_id:
            return parsed.session_id
        match = _UUID.search(stem)
        return match.group(1) if match else stem
    if stem.startswith("agent-"):
        parent = f.path.parent.parent.name if f.path.parent.name == "subagents" else parsed.session_id
        return f"{parent}:{stem}" if parent and parent != stem else stem
    return stem


def _options(cfg: Config) -> parsers.Options:
    return parsers.Options(include_tool_output=cfg.include_tool_output, include_reasoning=cfg.include_reasoning)


def _path(client: str, session_id: str) -> str:
    return f"/sessions/{quote(client, safe='')}/{quote(session_id, safe='')}"


def pending_turns(cfg: Config) -> tuple[int, int]:
    """(files with unread bytes, turns in them) — read locally, nothing is sent."""
    files = turns = 0
    for f in sources.all_files():
        prog = state.file_progress(str(f.path)) or {}
        try:
            data = f.path.read_bytes()
        except OSError:
            continue
        offset = int(prog.get("offset") or 0)
        if offset > len(data) or (offset and fingerprint(data, offset) != prog.get("head")):
            offset = 0
        parsed = parsers.parse(f.client, data, offset, _options(cfg))
        if parsed.turns:
            files += 1
            turns += len(parsed.turns)
    return files, turns


def run(cfg: Config, remote: Remote, progress: Progress | None = None) -> Report:
    """Upload every new turn of every session file. Raises ``NoConsent`` without consent and
    ``remote.Unreachable`` when the server stops answering (what was acknowledged is kept)."""
    if not consent_mod.uploads_allowed():
        raise NoConsent("uploads are off: run `mmw-agent consent` in a terminal first")
    report = Report()
    for f in sources.all_files():
        if not consent_mod.uploads_allowed():
            raise NoConsent("uploads stopped: consent was revoked")
        if f.client not in consent_mod.allowed_sources():
            continue
        _sync_file(cfg, remote, f, report, progress)
    return report


def _sync_file(cfg: Config, remote: Remote, f: sources.SessionFile, report: Report, progress: Progress | None) -> None:
    key = str(f.path)
    try:
        data = f.path.read_bytes()
    except OSError as exc:
        report.errors.append(f"{key}: {exc}")
        return
    prog = state.file_progress(key) or {}
    offset = int(prog.get("offset") or 0)
    position = int(prog.get("next_position") or 0)
    if offset > len(data) or (offset and fingerprint(data, offset) != prog.get("head")):
        offset, position = 0, 0  # rewritten: read again from the start (see the module's doc)
    if offset == len(data):
        return
    parsed = parsers.parse(f.client, data, offset, _options(cfg))
    report.files += 1
    report.unknown_lines += parsed.unknown
    unknown = int(prog.get("unknown_lines") or 0) + parsed.unknown
    session_id = str(prog.get("session_id") or "") or session_id_for(f, parsed)
    if not parsed.turns:
        state.save_progress(
            key,
            client=f.client,
            session_id=session_id,
            offset=parsed.end,
            next_position=position,
            head=fingerprint(data, parsed.end),
            unknown_lines=unknown,
        )
        return
    path = _path(f.client, session_id)
    meta = _session_meta(parsed, fresh=offset == 0)
    response = remote.rest("PUT", path, json=meta)
    if response.status_code == 409:  # forgotten on the server: the user's deletion stands
        _refused(key, f, session_id, parsed.end, data, unknown, error_message(response), report)
        return
    if response.status_code >= 400:  # a limit or a bound: nothing advanced, tried again next run
        error = f"{f.client}/{session_id}: {error_message(response)}"
        report.errors.append(error)
        state.save_progress(key, client=f.client, session_id=session_id, last_error=error)
        return
    report.sessions += 1
    uploaded = int(prog.get("turns_uploaded") or 0)
    failed = int(prog.get("turns_failed") or 0)
    last_error: str | None = prog.get("last_error")
    label = f"{f.client}/{session_id}"
    total = len(parsed.turns)
    for start in range(0, total, BATCH):
        if not consent_mod.uploads_allowed():
            raise NoConsent("uploads stopped: consent was revoked")
        batch = parsed.turns[start : start + BATCH]
        body = {
            "turns": [
                {"position": position + i, "role": t.role, "content": t.content}
                | ({"occurred_at": t.occurred_at} if t.occurred_at else {})
                for i, t in enumerate(batch)
            ]
        }
        response = remote.rest("POST", f"{path}/turns", json=body)
        if response.status_code >= 400:
            # The whole call was refused (a bound, a limit): keep the offset, try again next run.
            last_error = f"{label}: {error_message(response)}"
            report.errors.append(last_error)
            state.save_progress(key, last_error=last_error, unknown_lines=unknown)
            return
        for result in response.json().get("results", []):
            if "error" in result:
                failed += 1
                report.turns_failed += 1
                last_error = f"{label} turn {result.get('position')}: {result['error'].get('message')}"
                report.errors.append(last_error)
            elif result.get("status") == "unchanged":
                report.turns_unchanged += 1
            else:
                uploaded += 1
                report.turns_created += 1
        position += len(batch)
        end = parsed.end if start + BATCH >= total else batch[-1].end
        state.save_progress(
            key,
            client=f.client,
            session_id=session_id,
            offset=end,
            next_position=position,
            head=fingerprint(data, end),
            session_put=1,
            turns_uploaded=uploaded,
            turns_failed=failed,
            unknown_lines=unknown,
            last_error=last_error,
        )
        if progress is not None:
            progress(label, min(start + BATCH, total), total)


def _session_meta(parsed: parsers.Parsed, *, fresh: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    title = parsed.title
    if title is None and fresh:
        first_user = next((t.content for t in parsed.turns if t.role == "user"), None)
        title = parsers.one_line(first_user, 100) if first_user else None
    if title:
        meta["title"] = title[:1000]
    if parsed.working_directory:
        meta["working_directory"] = parsed.working_directory[:1000]
    if fresh and parsed.started_at:
        meta["started_at"] = parsed.started_at
    if parsed.ended_at:
        meta["ended_at"] = parsed.ended_at
    return meta


def _refused(
    key: str,
    f: sources.SessionFile,
    session_id: str,
    end: int,
    data: bytes,
    unknown: int,
    message: str,
    report: Report,
) -> None:
    """The server refused the session itself (e.g. it was forgotten: never uploaded again)."""
    error = f"{f.client}/{session_id}: {message}"
    report.errors.append(error)
    state.save_progress(
        key,
        client=f.client,
        session_id=session_id,
        offset=end,
        head=fingerprint(data, end),
        unknown_lines=unknown,
        last_error=error,
    )


def terminal_progress(label: str, done: int, total: int) -> None:
    """A one-line progress bar on stderr (only when it is a terminal)."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r{label[:50]:<50} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()
