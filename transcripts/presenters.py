"""The shapes of the session answers (docs/reference/sessions.md). Sessions live in a project,
not in a workspace, so their envelope carries no ``workspace``."""

from __future__ import annotations

from typing import Any

from accounts.keys import Principal
from memories.presenters import API_VERSION
from transcripts.models import Session, Turn

WITHHELD = "[withheld by Memory Guard: {reason}]"


def envelope(principal: Principal, notice: str | None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "api_version": API_VERSION,
        "tenant_id": principal.account.tenant_id,
        "project_id": str(principal.project.id),
    }
    if notice is not None:
        answer["notice"] = notice
    return answer


def session(s: Session) -> dict[str, Any]:
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


def turn(t: Turn) -> dict[str, Any]:
    return {
        "position": t.position,
        "role": t.role,
        "occurred_at": t.occurred_at.isoformat(),
        "content": t.content,
        "withheld": t.stub_reason if t.is_stub else None,
    }
