"""The door every import line passes before anything is written: the same parameter tables,
bounds, product rules and Memory Guard as the route that would write the same row.

Each ``check_<type>`` takes one line of the file (docs/export-format.md) and returns its values
as they will be stored, or raises a domain error that the importer reports with the line number.
This module holds the shared field rules and the checks of the lines that are data rights' and
the tenancy's (projects, workspaces, audit rows); each app's lines are checked in its own
``restore`` module with these rules and its own tables (``memories.restore.check_memory``,
``transcripts.restore.check_session``, ``ledger.restore.check_entry``, …). The rules, by field:

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

"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from accounts.models import Project
from memories import inputs, record_rules
from memories.inputs import ID_CHARS, NAME_CHARS, TIME_CHARS, Param
from mmw import text
from mmw.errors import InvalidInput

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
        raise InvalidInput(text.EMPTY, field="name")
    text.check_name("name", values["name"], NAME_CHARS)
    return {
        "public_id": uuid_of("id", values["id"]),
        "project": values["project"],
        "name": values["name"],
        "created_at": past("created_at", values["created_at"], door, required=True),
        "deleted_at": past("deleted_at", values["deleted_at"], door),
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
