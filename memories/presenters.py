"""The shapes MMW's answers take (docs/reference/), apart from the queries that
gather what they show: selectors and services read, these only format."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from accounts.keys import Principal
from memories import statuses
from memories.models import Memory

API_VERSION = "1.0"


def envelope(principal: Principal, workspace: str, notice: str | None) -> dict[str, Any]:
    """The fields every answer carries (plus ``notice`` while billing has one to show)."""
    answer: dict[str, Any] = {
        "api_version": API_VERSION,
        "tenant_id": principal.account.tenant_id,
        "project_id": str(principal.project.id),
        "workspace": workspace,
    }
    if notice is not None:
        answer["notice"] = notice
    return answer


def record(
    r: Memory, score: float | None, info: statuses.StatusInfo, relations: list[dict[str, Any]], workspace: str
) -> dict[str, Any]:
    return {
        "id": str(r.id),
        "content": r.content,
        "score": None if score is None else round(score, 6),
        "status": info.status,
        "workspace": workspace,
        "scope": r.scope,
        "source": r.source,
        "source_id": r.source_id,
        "source_hash": r.source_hash,
        "source_revision": r.source_revision,
        "fact_key": r.fact_key,
        "version": r.version,
        "is_latest": info.is_latest,
        "conflicts_with": info.conflicts_with,
        "confidence": r.confidence,
        "importance": r.importance,
        "derived_from": sorted(str(i) for i in r.derived_from),
        "tags": list(r.tags),
        "visibility": r.visibility,
        "graph_relations": relations,
        "reason": r.reason,
        "expires_at": r.expires_at.isoformat() if r.expires_at else None,
        "occurred_at": r.occurred_at.isoformat(),
        "position": r.position,
        "created_at": r.created_at.isoformat(),
        "author": author(r),
    }


def author(r: Memory) -> dict[str, Any]:
    return {
        "user": r.author.email if r.author else None,
        "device_label": r.device_label or None,
        "api_key": f"mmw_{r.api_key.prefix}…" if r.api_key else None,
    }


def forgotten_stub(r: Memory) -> dict[str, Any]:
    return {
        "id": str(r.id),
        "version": r.version,
        "forgotten": True,
        "forgotten_at": r.forgotten_at.isoformat() if r.forgotten_at else None,
        "reason": r.reason,
        "created_at": r.created_at.isoformat(),
        "author": author(r),
    }


def brief(r: Memory) -> dict[str, Any]:
    return {"id": str(r.id), "fact_key": r.fact_key, "source_hash": r.source_hash, "version": r.version}


def remembered(
    principal: Principal, memory: Memory, redactions: list[dict[str, str]], notice: str | None
) -> dict[str, Any]:
    """The answer of ``remember``."""
    return {
        "id": str(memory.id),
        **envelope(principal, memory.workspace.name, notice),
        "scope": memory.scope,
        "status": "unverified",
        "source_id": memory.source_id,
        "source_hash": memory.source_hash,
        "derived_from": [str(i) for i in memory.derived_from],
        "fact_key": memory.fact_key,
        "version": memory.version,
        "visibility": memory.visibility,
        "expires_at": _iso(memory.expires_at),
        "redactions": redactions,
        "occurred_at": _iso(memory.occurred_at),
        "position": memory.position,
        "created_at": _iso(memory.created_at),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None
