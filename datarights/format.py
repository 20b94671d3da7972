"""The export format's lines (docs/export-format.md): one JSON object per line, each with a
``type``. The exporter writes these and the importer compares an existing row with a line
through the same functions, so "the same record" means the same bytes on both sides.

Lines are dumped with sorted keys, no blanks and UTF-8 as is, so one record always gives the
same bytes. Times are RFC 3339 in UTC with microseconds when the row has them."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from accounts.models import Account, AuditEvent, Project, Workspace
from ledger.currencies import format_amount
from ledger.models import Entry
from memories.models import Memory, MemoryRelation
from transcripts.models import Session, Turn

FORMAT = "mmw-export"
FORMAT_VERSION = 1
# What a forgotten record's content becomes once purged (docs/data.md), and what an imported
# stub holds: the column may not be empty, and this says why there is nothing.
PURGED_CONTENT = "[forgotten: content purged]"

Line = dict[str, Any]


def dumps(line: Line) -> str:
    return json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def time(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.UTC).isoformat() if value is not None else None


def header(*, scope: str, exported_at: dt.datetime, project_id: str | None, tenant_id: str) -> Line:
    return {
        "type": "header",
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "scope": scope,
        "tenant_id": tenant_id,
        "project": project_id,
        "exported_at": time(exported_at),
    }


def account_line(account: Account) -> Line:
    return {
        "type": "account",
        "tenant_id": account.tenant_id,
        "name": account.name,
        "kind": account.kind,
        "created_at": time(account.created_at),
    }


def project_line(project: Project) -> Line:
    return {
        "type": "project",
        "id": str(project.pk),
        "name": project.name,
        "guard_secrets_mode": project.guard_secrets_mode,
        "created_at": time(project.created_at),
        "deleted_at": time(project.deleted_at),
    }


def workspace_line(workspace: Workspace, project_id: str) -> Line:
    return {
        "type": "workspace",
        "id": str(workspace.public_id),
        "project": project_id,
        "name": workspace.name,
        "created_at": time(workspace.created_at),
        "deleted_at": time(workspace.deleted_at),
    }


def memory_line(memory: Memory, *, workspace_id: str, author: str | None, forgotten_by: str | None) -> Line:
    """A record version; a forgotten one as a stub: its identity, version and times, no content."""
    common = {
        "type": "memory",
        "id": str(memory.pk),
        "project": str(memory.project_id),
        "workspace": workspace_id,
        "version": memory.version,
        "visibility": memory.visibility,
        "author": author,
        "created_at": time(memory.created_at),
        "occurred_at": time(memory.occurred_at),
        "forgotten_at": time(memory.forgotten_at),
    }
    if memory.forgotten_at is not None:
        return {**common, "forgotten": True, "forgotten_by": forgotten_by}
    return {
        **common,
        "forgotten": False,
        "content": memory.content,
        "scope": memory.scope,
        "source": memory.source,
        "source_id": memory.source_id,
        "source_hash": memory.source_hash,
        "source_revision": memory.source_revision,
        "fact_key": memory.fact_key,
        "expected_version": memory.expected_version,
        "superseded_at": time(memory.superseded_at),
        "confidence": memory.confidence,
        "importance": memory.importance,
        "derived_from": [str(i) for i in memory.derived_from],
        "tags": list(memory.tags),
        "reason": memory.reason,
        "expires_at": time(memory.expires_at),
        "department_ids": list(memory.department_ids),
        "device_label": memory.device_label,
        "position": memory.position,
        "archived_at": time(memory.archived_at),
    }


def relation_line(relation: MemoryRelation) -> Line:
    return {
        "type": "relation",
        "from": str(relation.from_memory_id),
        "to": str(relation.to_memory_id),
        "relation": relation.relation,
        "score": relation.score,
        "created_at": time(relation.created_at),
    }


def session_line(session: Session, *, author: str | None) -> Line:
    common = {
        "type": "session",
        "id": str(session.pk),
        "project": str(session.project_id),
        "client": session.client,
        "author": author,
        "created_at": time(session.created_at),
        "forgotten_at": time(session.forgotten_at),
    }
    if session.forgotten_at is not None:
        return {**common, "forgotten": True}
    return {
        **common,
        "forgotten": False,
        "client_session_id": session.client_session_id,
        "title": session.title,
        "working_directory": session.working_directory,
        "device": session.device,
        "started_at": time(session.started_at),
        "ended_at": time(session.ended_at),
        "shared_with_project": session.shared_with_project,
        "turn_count": session.turn_count,
        "updated_at": time(session.updated_at),
    }


def turn_line(turn: Turn) -> Line:
    return {
        "type": "turn",
        "session": str(turn.session_id),
        "position": turn.position,
        "role": turn.role,
        "occurred_at": time(turn.occurred_at),
        "content": turn.content,
        "content_hash": turn.content_hash,
        "is_stub": turn.is_stub,
        "stub_reason": turn.stub_reason,
        "created_at": time(turn.created_at),
    }


def ledger_entry_line(entry: Entry, *, author: str | None) -> Line:
    """A ledger entry, every column (entries are append-only: there is no stub). ``amount`` is a
    decimal string with exactly the currency's minor units, never a JSON number."""
    return {
        "type": "ledger_entry",
        "id": str(entry.pk),
        "project": str(entry.project_id),
        "kind": entry.kind,
        "amount": format_amount(entry.amount, entry.currency),
        "currency": entry.currency,
        "occurred_at": time(entry.occurred_at),
        "due_at": time(entry.due_at),
        "repeat": entry.repeat,
        "counterparty": entry.counterparty,
        "category": entry.category,
        "memo": entry.memo,
        "reference": entry.reference,
        "content_digest": entry.content_digest,
        "tags": list(entry.tags),
        "visibility": entry.visibility,
        "department_ids": list(entry.department_ids),
        "author": author,
        "device_label": entry.device_label,
        "reverses": str(entry.reverses_id) if entry.reverses_id else None,
        "completes": str(entry.completes_id) if entry.completes_id else None,
        "completes_due_at": time(entry.completes_due_at),
        "created_at": time(entry.created_at),
    }


def audit_line(event: AuditEvent, *, actor: str | None) -> Line:
    return {
        "type": "audit_event",
        "action": event.action,
        "actor": actor,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "data": event.data,
        "created_at": time(event.created_at),
    }


def parse_time(value: object, name: str) -> dt.datetime | None:
    """A time of a line (RFC 3339), or None for null; anything else is the file's error."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a time or null")
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"{name} must carry a time zone")
    return parsed
