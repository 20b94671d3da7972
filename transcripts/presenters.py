"""The shapes of the session answers (docs/reference/sessions.md). Sessions live in a project,
not in a workspace, so their envelope carries no ``workspace``. The answers of the two MCP tools
are ``TypedDict``s (``SessionsFound``, ``SessionForgotten``): their ``outputSchema`` is generated
from them, like the memory tools' from ``memories.presenters``."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic derives JSON Schema from these; on 3.11 it needs this one

from memories.presenters import ProjectEnvelope, TimeWindowShown
from transcripts.models import Session, Turn

WITHHELD = "[withheld by Memory Guard: {reason}]"


class SessionRow(TypedDict):
    id: str
    client: str
    session_id: str
    title: str
    working_directory: str
    device: str
    started_at: str | None
    ended_at: str | None
    shared_with_project: bool
    turn_count: int
    author: str | None
    created_at: str
    updated_at: str


class TurnRow(TypedDict):
    position: int
    role: str
    occurred_at: str
    content: str
    withheld: str | None


class SessionHit(TypedDict):
    score: float
    session: SessionRow
    turn: TurnRow
    context_before: list[TurnRow]
    context_after: list[TurnRow]
    explain: NotRequired[dict[str, Any]]  # with ``explain: true``: why it ranked (``memories.explain``)


class SessionsFound(ProjectEnvelope):
    """The answer of ``search_sessions``; ``time_window``: the time the query is about, when it
    says one; ``explain``: with ``explain: true``, what ranked."""

    query: str
    results: list[SessionHit]
    time_window: TimeWindowShown | None
    pending_vectors: int  # turns searched that are not embedded yet (at most memories.selectors.PENDING_COUNT_MAX)
    explain: NotRequired[dict[str, Any]]


class SessionForgotten(ProjectEnvelope):
    """The answer of ``forget_session``."""

    client: str
    session_id: str
    forgotten: bool
    at: str


def session(s: Session) -> SessionRow:
    return {
        "id": str(s.id),
        "client": s.client,
        "session_id": s.client_session_id,
        "title": s.title,
        "working_directory": s.working_directory,
        "device": s.device,
        "started_at": s.started_at.isoformat() if s.started_at else None,
        "ended_at": s.ended_at.isoformat() if s.ended_at else None,
        "shared_with_project": s.shared_with_project,
        "turn_count": s.turn_count,
        "author": s.author.email if s.author else None,
        "created_at": s.created_at.isoformat(),
        "updated_at": s.updated_at.isoformat(),
    }


def turn(t: Turn) -> TurnRow:
    return {
        "position": t.position,
        "role": t.role,
        "occurred_at": t.occurred_at.isoformat(),
        "content": t.content,
        "withheld": t.stub_reason if t.is_stub else None,
    }
