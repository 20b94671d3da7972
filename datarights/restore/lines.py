"""The door every import line passes before anything is written: the same parameter tables,
bounds, product rules and Memory Guard as the route that would write the same row.

Each ``check_<type>`` takes one line of the file (docs/export-format.md) and returns its values
as they will be stored, or raises a domain error that the importer reports with the line number.
The rules, by field:

- fields a write route also takes (a record's content, tags, confidence, ...; a turn's role and
  content; a session's labels; a ledger entry's amount, currency, repeat, ...) go through that
  route's own ``Param`` table (``memories.inputs.parse``) and its product rules
  (``remember.check_fields``, ``ledger.services.entry_fields``, ``transcripts.inputs``);
- names a write creates (workspaces) follow ``mmw.text.check_name``: printable, no ``*``;
- what only an import carries is checked against explicit rules: ids are UUIDs, versions and
  counters positive and within PostgreSQL's ``integer``, times RFC 3339 with an offset between the
  year 1900 and one day from now (``expires_at``: up to 100 years ahead, as ``remember`` allows),
  scores and importance finite within 0..1;
- text a person or agent wrote passes Memory Guard as on its route: a record's or ledger entry's
  secret is redacted and a poisoning attempt refused (as ``remember`` / ``ledger_record``); a
  session's labels are redacted; a turn is redacted, or withheld as a stub, as an upload would.

Unknown fields of a known type are ignored (the format's version policy); unknown types are the
importer's to refuse.

Why one module of this length: one short ``check_<type>`` per line type of the export format,
sharing the field rules listed above.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from accounts.models import Project
from ledger import inputs as ledger_inputs
from ledger import services as ledger_services
from ledger.currencies import format_amount
from memories import inputs, record_rules
from memories.inputs import ID_CHARS, MAX_INT, NAME_CHARS, TIME_CHARS, Param
from memories.models import RelationType, Visibility
from memories.remember import RememberInput, check_fields
from mmw import text
from mmw.errors import InvalidInput
from transcripts import inputs as session_inputs
from transcripts.services import screen_turn

Line = dict[str, Any]

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_DUE = datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC)  # a reminder's occurrence, as due_at allows
AHEAD = timedelta(days=1)  # a clock a little ahead is tolerated; a time years ahead is a mistake
EMAIL_CHARS = 254
MAX_DEPARTMENTS = 100
MAX_BIGINT = 2**63 - 1
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

# --- the fields only an import carries ----------------------------------------------------------

ID = Param("id", "string", "The row's id (a UUID).", required=True, nullable=False, max_length=ID_CHARS)
PROJECT = Param("project", "string", "The project's id in the file.", max_length=ID_CHARS)
AUTHOR = Param("author", "string", "The author's e-mail.", max_length=EMAIL_CHARS)
CREATED_AT = Param("created_at", "string", "When it was written.", required=True, nullable=False, max_length=TIME_CHARS)
FORGOTTEN = Param("forgotten", "boolean", "A stub of a forgotten row.", default=False, nullable=True)
FORGOTTEN_AT = Param("forgotten_at", "string", "When it was forgotten.", max_length=TIME_CHARS)


def _time_param(name: str) -> Param:
    return Param(name, "string", f"{name} (RFC 3339).", max_length=TIME_CHARS)


@dataclass(frozen=True)
class Door:
    """What the rules depend on besides the line: the time of the import and the project's
    Guard mode (``redact`` or ``reject``)."""

    now: datetime
    secrets_mode: str = Project.GuardSecrets.REDACT
    redacted: list[str] = field(default_factory=list)  # "line N: field: rule" of every redaction


def _fields(line: Mapping[str, Any], params: tuple[Param, ...]) -> dict[str, Any]:
    """The line's values for ``params`` (unknown fields ignored), through ``inputs.parse`` (every
    declared bound)."""
    known = {p.name for p in params}
    return inputs.parse(params, {k: v for k, v in line.items() if k in known})


def uuid_of(name: str, value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a UUID") from None


def _time(name: str, value: str | None, *, latest: datetime, required: bool = False) -> datetime | None:
    """An RFC 3339 time with an offset between 1900 and ``latest``, in UTC; None for null."""
    if value is None:
        if required:
            raise InvalidInput(f"{name} is required")
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{name} must be an RFC 3339 time such as 2026-01-31T09:30:00Z") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{name} must include a time zone offset (e.g. Z or +02:00)")
    # The year first: comparing a time near year 1 or 9999 with an offset could overflow.
    if not EARLIEST.year <= parsed.year <= latest.year or not EARLIEST <= parsed <= latest:
        raise InvalidInput(f"{name} must lie between the year 1900 and {_latest_text(latest)}")
    return parsed.astimezone(UTC)


def _latest_text(latest: datetime) -> str:
    return f"{latest:%Y-%m-%d %H:%M} UTC"


def past(name: str, value: str | None, door: Door, *, required: bool = False) -> datetime | None:
    """A time that has happened: at most one day after the import (``AHEAD``)."""
    return _time(name, value, latest=door.now + AHEAD, required=required)


def _expiry(value: str | None, door: Door) -> datetime | None:
    return _time("expires_at", value, latest=door.now + record_rules.MAX_EXPIRY)


def _email(value: str | None) -> str | None:
    if value is None:
        return None
    text.check_text("author", value, EMAIL_CHARS)
    return value.strip().lower() or None


def _department_ids(line: Mapping[str, Any]) -> list[int]:
    value = line.get("department_ids")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise InvalidInput("department_ids must be a list of integers")
    if len(value) > MAX_DEPARTMENTS or not all(0 < i <= MAX_BIGINT for i in value):
        raise InvalidInput(f"department_ids accepts at most {MAX_DEPARTMENTS} positive ids")
    return list(value)


def _guarded(door: Door, number: int, values: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``values`` with Memory Guard applied to ``names`` as the write route applies it: secrets
    redacted (noted in ``door.redacted``), a poisoning attempt refused (``InvalidInput``)."""
    fields = {name: values[name] for name in names}
    clean, redactions = record_rules.guarded(fields, secrets_mode=door.secrets_mode)
    door.redacted.extend(f"line {number}: {r.field}: {r.rule_id}" for r in redactions)
    return {**values, **clean}


# --- projects and workspaces -------------------------------------------------------------------

PROJECT_LINE: tuple[Param, ...] = (
    ID,
    Param("name", "string", "The project's name.", required=True, nullable=False, max_length=NAME_CHARS),
    Param(
        "guard_secrets_mode",
        "string",
        "The Guard's mode.",
        default=Project.GuardSecrets.REDACT,
        nullable=False,
        enum=tuple(Project.GuardSecrets.values),
    ),
    CREATED_AT,
    _time_param("deleted_at"),
)


def check_project(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, PROJECT_LINE)
    if values["guard_secrets_mode"] not in Project.GuardSecrets.values:
        raise InvalidInput(f"guard_secrets_mode must be one of {', '.join(Project.GuardSecrets.values)}")
    return {
        "id": uuid_of("id", values["id"]),
        "name": text.clean_label("project name", values["name"]),
        "guard_secrets_mode": values["guard_secrets_mode"],
        "created_at": past("created_at", values["created_at"], door, required=True),
        "deleted_at": past("deleted_at", values["deleted_at"], door),
    }


WORKSPACE_LINE: tuple[Param, ...] = (
    ID,
    PROJECT,
    Param(
        "name", "string", "The workspace's name.", required=True, nullable=False, max_length=NAME_CHARS, new_name=True
    ),
    CREATED_AT,
    _time_param("deleted_at"),
)


def check_workspace(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, WORKSPACE_LINE)
    if not values["name"].strip():
        raise InvalidInput("name must not be empty")
    text.check_name("name", values["name"], NAME_CHARS)
    return {
        "public_id": uuid_of("id", values["id"]),
        "project": values["project"],
        "name": values["name"],
        "created_at": past("created_at", values["created_at"], door, required=True),
        "deleted_at": past("deleted_at", values["deleted_at"], door),
    }


# --- records ---------------------------------------------------------------------------------

_FROM_REMEMBER = (
    "content",
    "scope",
    "source",
    "source_id",
    "source_hash",
    "source_revision",
    "fact_key",
    "confidence",
    "derived_from",
    "tags",
    "reason",
    "expected_version",
    "visibility",
    "position",
)
_REMEMBER = {p.name: p for p in inputs.REMEMBER}
MEMORY_COMMON: tuple[Param, ...] = (
    ID,
    PROJECT,
    Param("workspace", "string", "The workspace's id.", required=True, nullable=False, max_length=ID_CHARS),
    Param("version", "integer", "The version.", required=True, nullable=False, minimum=1, maximum=MAX_INT),
    Param("visibility", "string", "Who may see it.", default="project", nullable=False, enum=tuple(Visibility.values)),
    AUTHOR,
    CREATED_AT,
    _time_param("occurred_at"),
    FORGOTTEN,
    FORGOTTEN_AT,
)
MEMORY_STUB: tuple[Param, ...] = (
    *MEMORY_COMMON,
    Param("forgotten_by", "string", "Who forgot it.", max_length=EMAIL_CHARS),
)
MEMORY_LIVE: tuple[Param, ...] = (
    *(p for p in MEMORY_COMMON if p.name != "visibility"),
    *(_REMEMBER[name] for name in _FROM_REMEMBER),
    _time_param("superseded_at"),
    _time_param("expires_at"),
    _time_param("archived_at"),
    Param("importance", "number", "Importance, 0..1.", default=0.5, nullable=False, minimum=0.0, maximum=1.0),
    Param("device_label", "string", "The device label.", max_length=NAME_CHARS),
)


def check_memory(number: int, line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    """A record version (or a forgotten record's stub) as it will be stored."""
    if line.get("forgotten"):
        return _memory_stub(line, door)
    values = _fields(line, MEMORY_LIVE)
    check_fields(
        RememberInput(
            **{
                **{k: None for k in RememberInput.__dataclass_fields__},
                **{k: values[k] for k in _FROM_REMEMBER},
                "workspace": "imported",
            }
        )
    )
    values = _guarded(door, number, values, record_rules.SCREENED_FIELDS)
    common = _memory_common(values, door)
    if common["forgotten_at"] is not None:
        raise InvalidInput("a live record (forgotten: false) must have forgotten_at null")
    return {
        **common,
        **{name: values[name] for name in _FROM_REMEMBER if name != "derived_from"},
        "tags": values["tags"] or [],
        "derived_from": [uuid_of("derived_from", i) for i in values["derived_from"] or []],
        "importance": values["importance"],
        "superseded_at": past("superseded_at", values["superseded_at"], door),
        "archived_at": past("archived_at", values["archived_at"], door),
        "expires_at": _expiry(values["expires_at"], door),
        "department_ids": _department_ids(line),
        "device_label": values["device_label"] or "",
    }


def _memory_stub(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, MEMORY_STUB)
    common = _memory_common(values, door)
    if common["forgotten_at"] is None:
        raise InvalidInput("a forgotten record's stub needs forgotten_at")
    return {**common, "forgotten_by": _email(values["forgotten_by"])}


def _memory_common(values: dict[str, Any], door: Door) -> dict[str, Any]:
    created = past("created_at", values["created_at"], door, required=True)
    return {
        "id": uuid_of("id", values["id"]),
        "project": values["project"],
        "workspace": uuid_of("workspace", values["workspace"]),
        "version": values["version"],
        "visibility": values.get("visibility", "project"),
        "author": _email(values["author"]),
        "created_at": created,
        "occurred_at": past("occurred_at", values["occurred_at"], door) or created,
        "forgotten": bool(values["forgotten"]),
        "forgotten_at": past("forgotten_at", values["forgotten_at"], door),
    }


RELATION_LINE: tuple[Param, ...] = (
    Param("from", "string", "The record it starts at.", required=True, nullable=False, max_length=ID_CHARS),
    Param("to", "string", "The record it points to.", required=True, nullable=False, max_length=ID_CHARS),
    Param("relation", "string", "The kind.", required=True, nullable=False, enum=tuple(RelationType.values)),
    Param("score", "number", "Its strength, 0..1.", required=True, nullable=False, minimum=0.0, maximum=1.0),
    CREATED_AT,
)


def check_relation(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, RELATION_LINE)
    if values["relation"] not in RelationType.values:
        raise InvalidInput(f"relation must be one of {', '.join(RelationType.values)}")
    start, end = uuid_of("from", values["from"]), uuid_of("to", values["to"])
    if start == end:
        raise InvalidInput("a relation must join two different records")
    return {
        "from": start,
        "to": end,
        "relation": values["relation"],
        "score": values["score"],
        "created_at": past("created_at", values["created_at"], door, required=True),
    }


# --- sessions and turns ----------------------------------------------------------------------

_UPSERT = {p.name: p for p in session_inputs.UPSERT}
SESSION_LINE: tuple[Param, ...] = (
    ID,
    PROJECT,
    Param("client", "string", "The client.", required=True, nullable=False, max_length=session_inputs.CLIENT_CHARS),
    Param("client_session_id", "string", "The client's id.", max_length=session_inputs.SESSION_ID_CHARS),
    _UPSERT["title"],
    _UPSERT["working_directory"],
    _UPSERT["device"],
    _UPSERT["started_at"],
    _UPSERT["ended_at"],
    Param("shared_with_project", "boolean", "Shared.", default=False, nullable=False),
    Param("turn_count", "integer", "Turns.", default=0, nullable=False, minimum=0, maximum=MAX_INT),
    AUTHOR,
    CREATED_AT,
    _time_param("updated_at"),
    FORGOTTEN,
    FORGOTTEN_AT,
)
_LABELS = ("title", "working_directory", "device")


def check_session(number: int, line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, SESSION_LINE)
    created = past("created_at", values["created_at"], door, required=True)
    stub = bool(values["forgotten"])
    common = {
        "id": uuid_of("id", values["id"]),
        "project": values["project"],
        "client": values["client"],
        "author": _email(values["author"]),
        "created_at": created,
        "forgotten": stub,
        "forgotten_at": past("forgotten_at", values["forgotten_at"], door, required=stub),
    }
    if stub:
        text.check_name("client", values["client"], session_inputs.CLIENT_CHARS, wildcard_ok=True)
        return common
    key = session_inputs.session_key(values["client"], values["client_session_id"])
    started = past("started_at", values["started_at"], door)
    ended = past("ended_at", values["ended_at"], door)
    if started is not None and ended is not None and ended < started:
        raise InvalidInput("ended_at must not be before started_at")
    labels = _guarded(door, number, {k: values[k] or "" for k in _LABELS}, _LABELS)
    return {
        **common,
        "client_session_id": key.session_id,
        **labels,
        "started_at": started,
        "ended_at": ended,
        "shared_with_project": values["shared_with_project"],
        "turn_count": values["turn_count"],
        "updated_at": past("updated_at", values["updated_at"], door) or created,
    }


_TURN = {p.name: p for p in session_inputs.TURN_ITEM}
TURN_LINE: tuple[Param, ...] = (
    Param("session", "string", "The session's id.", required=True, nullable=False, max_length=ID_CHARS),
    _TURN["position"],
    _TURN["role"],
    _TURN["content"],
    Param("occurred_at", "string", "When it was said.", required=True, nullable=False, max_length=TIME_CHARS),
    Param("content_hash", "string", "SHA-256 of role and content, hex.", required=True, nullable=False, max_length=64),
    Param("is_stub", "boolean", "Withheld by the Guard.", default=False, nullable=False),
    Param("stub_reason", "string", "Why.", max_length=200),
    CREATED_AT,
)


def check_turn(number: int, line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    """A turn as an upload would store it: its text redacted, or withheld as a stub naming the
    Guard's reason; a stub of the file stays a stub (its text is the Guard's own)."""
    values = _fields(line, TURN_LINE)
    if not values["role"].strip():
        raise InvalidInput("role must not be empty")
    if not _HEX64.match(values["content_hash"]):
        raise InvalidInput("content_hash must be 64 lower-case hex digits")
    content, reason = values["content"], values["stub_reason"] or ""
    if not values["is_stub"]:
        content, withheld, redactions = screen_turn(content, secrets_mode=door.secrets_mode)
        door.redacted.extend(f"line {number}: content: {rule}" for rule in redactions)
        reason = withheld or ""
    return {
        "session": uuid_of("session", values["session"]),
        "position": values["position"],
        "role": values["role"],
        "content": content,
        "content_hash": values["content_hash"],
        "is_stub": bool(reason) or values["is_stub"],
        "stub_reason": reason,
        "occurred_at": past("occurred_at", values["occurred_at"], door, required=True),
        "created_at": past("created_at", values["created_at"], door, required=True),
    }


# --- ledger entries --------------------------------------------------------------------------

ENTRY_LINE: tuple[Param, ...] = (
    ID,
    PROJECT,
    *ledger_inputs.RECORD,
    Param("content_digest", "string", "The entry's digest.", max_length=64),
    Param("device_label", "string", "The device label.", max_length=NAME_CHARS),
    Param("reverses", "string", "The entry it reverses.", max_length=ID_CHARS),
    Param("completes", "string", "The reminder it completes.", max_length=ID_CHARS),
    _time_param("completes_due_at"),
    AUTHOR,
    CREATED_AT,
)


def check_entry(number: int, line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    """A ledger entry through ``ledger_record``'s table, Guard and product rules."""
    values = _fields(line, ENTRY_LINE)
    for name in ("repeat", "counterparty", "category", "memo"):
        values[name] = values[name] or None  # "" in the file is "none", as the route reads it
    values = _guarded(door, number, values, ledger_services.SCREENED)
    fields = ledger_services.entry_fields(values, door.now)
    if values["content_digest"] is not None and not _HEX64.match(values["content_digest"]):
        raise InvalidInput("content_digest must be 64 lower-case hex digits")
    return {
        **fields,
        "amount_text": format_amount(fields["amount"], fields["currency"]),
        "id": uuid_of("id", values["id"]),
        "project": values["project"],
        "content_digest": values["content_digest"] or ledger_services.content_digest(fields),
        "department_ids": _department_ids(line),
        "device_label": values["device_label"] or "",
        "reverses": uuid_of("reverses", values["reverses"]) if values["reverses"] else None,
        "completes": uuid_of("completes", values["completes"]) if values["completes"] else None,
        "completes_due_at": _time("completes_due_at", values["completes_due_at"], latest=LATEST_DUE),
        "author": _email(values["author"]),
        "created_at": past("created_at", values["created_at"], door, required=True),
    }


# --- audit rows (operator imports only) -------------------------------------------------------

AUDIT_LINE: tuple[Param, ...] = (
    Param("action", "string", "The action.", required=True, nullable=False, max_length=64, min_length=1),
    Param("actor", "string", "Who.", max_length=EMAIL_CHARS),
    Param("target_type", "string", "Target type.", max_length=64),
    Param("target_id", "string", "Target id.", max_length=64),
    CREATED_AT,
)


def check_audit(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, AUDIT_LINE)
    data = line.get("data")
    if data is not None and not isinstance(data, dict):
        raise InvalidInput("data must be an object")
    for name in ("action", "target_type", "target_id"):
        if values[name]:
            text.check_name(name, values[name], 64, wildcard_ok=True)
    return {
        "action": values["action"],
        "actor": _email(values["actor"]),
        "target_type": values["target_type"] or "",
        "target_id": values["target_id"] or "",
        "data": data or {},
        "created_at": past("created_at", values["created_at"], door, required=True),
    }
