"""An import's sessions and turns (``transcripts``' rows): ``datarights.restore.importer``; each line
first passes its door (``check_<type>`` below: ``datarights.restore.lines``' field rules with this
app's own parameter tables and Guard).

This module sits in the data rights layer although the app is transcripts: it extends the importer
(``datarights.restore.base.ImporterBase``) and registers itself with it (``register``), as an
app's ``mcp`` module registers its tools; ``datarights`` finds it by the app registry and never
imports it (tests/architecture/test_imports.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.db.models import Count

from accounts.models import Project
from datarights import format as fmt
from datarights.restore.base import ImporterBase, Rows, register
from datarights.restore.lines import (
    _HEX64,
    AUTHOR,
    CREATED_AT,
    FORGOTTEN,
    FORGOTTEN_AT,
    ID,
    PROJECT,
    Door,
    _email,
    _fields,
    _guarded,
    _time_param,
    past,
    uuid_of,
)
from memories.inputs import ID_CHARS, MAX_INT, TIME_CHARS, Param
from mmw import text
from mmw.errors import InvalidInput
from transcripts import indexing
from transcripts import inputs as session_inputs
from transcripts.models import Session, Turn
from transcripts.services import screen_turn

# --- the door of sessions and turns (``datarights.restore.lines``' rules, this app's tables) ---

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


class SessionRows(ImporterBase):
    def _handlers(self) -> dict[str, Callable[[Rows], None]]:
        return {**super()._handlers(), "session": self._sessions, "turn": self._turns}

    def _sessions(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: check_session(n, line, self.door))
        self._authored(checked, Session, "session", fmt.session_line, self._new_session)

    def _new_session(self, number: int, values: dict[str, Any], project: Project) -> Session:
        stub = values["forgotten"]
        fields = {k: v for k, v in values.items() if k not in ("id", "project", "author", "forgotten")}
        if stub:
            fields["client_session_id"] = f"forgotten-{values['id']}"
            fields["updated_at"] = values["created_at"]
        return Session(
            id=self._id("session", values["id"]),
            account_id=self.policy.account.pk,
            project=project,
            author=self._user(values["author"]),
            **fields,
        )

    def _turns(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: check_turn(n, line, self.door))
        projects = {p.pk for p in self.projects.values()}
        sessions = {self._id("session", v["session"]) for _, v in checked}
        known = dict(
            Session.objects.filter(pk__in=sessions, project_id__in=projects, forgotten_at__isnull=True).values_list(
                "id", "project_id"
            )
        )
        existing = {(t.session_id, t.position): t for t in Turn.objects.filter(session_id__in=known).defer("embedding")}
        new = []
        for number, values in checked:
            session_id = self._id("session", values["session"])
            if session_id not in known:
                self._invalid(number, "a turn of a session not in this project")
                continue
            turn = Turn(
                session_id=session_id,
                project_id=known[session_id],
                **{k: v for k, v in values.items() if k != "session"},
            )
            found = existing.get((session_id, values["position"]))
            if found is not None:
                label = f"turn {session_id}#{values['position']}"
                self._same(number, "turn", label, fmt.turn_line(found), fmt.turn_line(turn))
                continue
            existing[(session_id, values["position"])] = turn
            new.append(turn)
            low = self.sessions_touched.get(session_id, values["position"])
            self.sessions_touched[session_id] = min(low, values["position"])
        self._insert(Turn, new, "turn")

    def _finish_sessions(self) -> None:
        """Sessions given turns: their neighbours' words (as an upload does) and a true count."""
        if not self.sessions_touched:
            return
        counts = dict(
            Turn.objects.filter(session_id__in=self.sessions_touched)
            .values_list("session_id")
            .annotate(n=Count("id"))
            .values_list("session_id", "n")
        )
        for session_id, low in self.sessions_touched.items():
            indexing.refresh_context(session_id, low)
            Session.objects.filter(pk=session_id).update(turn_count=counts.get(session_id, 0))

    def _finish(self) -> None:
        super()._finish()
        self._finish_sessions()


register("transcripts", SessionRows)
