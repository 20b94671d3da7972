"""The shapes MMW's answers take (docs/reference/), apart from the queries that
gather what they show: selectors and services read, these only format.

Each answer is a ``TypedDict`` named after its operation, so a service's signature says what it
returns and mypy holds every surface (REST, MCP, dashboard) to it. Every answer extends
``Envelope``. The MCP tools' ``outputSchema`` is generated from these same definitions
(``interfaces.mcp_server.schemas``), so the advertised shape cannot drift from the answers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, final

# pydantic derives the MCP outputSchema from these; on Python 3.11 it needs typing_extensions'.
from typing_extensions import TypedDict

from accounts.keys import Principal
from memories import statuses
from memories.models import Memory

API_VERSION = "1.0"


class Envelope(TypedDict):
    """The fields every answer carries; ``notice`` only while billing has one to show."""

    api_version: str
    tenant_id: str
    project_id: str
    workspace: str
    notice: NotRequired[str]


class ProjectEnvelope(TypedDict):
    """The fields every answer about a whole project carries (sessions, ledger entries: they live
    in a project, not a workspace); ``notice`` only while billing has one to show."""

    api_version: str
    tenant_id: str
    project_id: str
    notice: NotRequired[str]


class Author(TypedDict):
    user: str | None
    device_label: str | None
    api_key: str | None  # "mmw_<prefix>…", never the key


class Relation(TypedDict):
    id: str
    relation: str
    score: float
    direction: Literal["in", "out"]


class Record(TypedDict):
    """One record as search, get, history and recall show it."""

    id: str
    content: str
    score: float | None
    status: str
    status_reason: str | None
    workspace: str
    scope: str
    source: str
    source_id: str | None
    source_hash: str | None
    source_revision: str | None
    fact_key: str | None
    version: int
    is_latest: bool
    conflicts_with: list[str]
    confidence: float
    importance: float
    derived_from: list[str]
    tags: list[str]
    visibility: str
    graph_relations: list[Relation]
    reason: str | None
    expires_at: str | None
    created_at: str
    occurred_at: str
    position: int | None
    author: Author
    explain: NotRequired[dict[str, Any]]  # with ``explain: true``: why it ranked (``memories.explain``)


class ForgottenStub(TypedDict):
    """A forgotten version in a history: who, when and why, never the content."""

    id: str
    version: int
    forgotten: Literal[True]
    forgotten_at: str | None
    reason: str | None
    created_at: str
    author: Author


class Brief(TypedDict):
    id: str
    fact_key: str | None
    source_hash: str | None
    version: int


class Redaction(TypedDict):
    field: str
    rule: str


class Remembered(Envelope):
    """The answer of ``remember``."""

    id: str
    scope: str
    status: str
    source_id: str | None
    source_hash: str | None
    derived_from: list[str]
    fact_key: str | None
    version: int
    visibility: str
    expires_at: str | None
    redactions: list[Redaction]
    created_at: str | None
    occurred_at: str | None
    position: int | None


class ErrorBody(TypedDict):
    code: str
    message: str


class ItemError(TypedDict):
    """One batch record's refusal, in its place in ``results``."""

    error: ErrorBody


class Batch(Envelope):
    """The answer of ``POST /api/v1/memories/batch``: one entry per record, in order;
    ``queued_for_vectors``: how many records this call queued for the worker to embed (the new
    ones, and older records of a sequence whose predecessor changed): found by keywords at once,
    by meaning once embedded."""

    results: list[Remembered | ItemError]
    queued_for_vectors: int


class Elsewhere(TypedDict):
    """A workspace of the caller's where a short search would have found more (``selectors.elsewhere``)."""

    workspace: str
    matches: int


class TimeWindowShown(TypedDict):
    """The time a query was understood to be about (``memories.timewords``)."""

    start: str
    end: str
    phrase: str


class Found(Envelope):
    """The answer of ``search``. ``other_workspaces``: when the answer from one workspace was short
    (fewer than 10 results, or than ``limit`` if smaller: ``selectors.is_short``), the caller's other
    workspaces with results (else empty); ``time_window``:
    the time the query is about, when it says one; ``pending_vectors``: records of the searched
    scope stored but not embedded yet (found by keywords only until then, so a miss may be
    temporary; at most ``selectors.PENDING_COUNT_MAX``); ``explain``: with ``explain: true``, what ranked;
    ``rerank``: with ``rerank: true``, whether the cross-encoder reordered the results, and if not why."""

    query: str
    results: list[Record]
    other_workspaces: list[Elsewhere]
    time_window: TimeWindowShown | None
    pending_vectors: int
    explain: NotRequired[dict[str, Any]]
    rerank: NotRequired[dict[str, Any]]


class Got(Envelope):
    """The answer of ``get_memory``."""

    memory: Record


class History(Envelope):
    """The answer of ``memory_history``: versions oldest first."""

    fact_key: str | None
    versions: list[Record | ForgottenStub]


class Validation(Envelope):
    """The answer of ``validate_memory``."""

    source_id: str
    current_source_hash: str
    stale_count: int
    fresh_count: int
    stale: list[Brief]
    fresh: list[Brief]


class Recalled(Envelope):
    """The answer of ``recall_context``."""

    task: str
    token_budget: int
    used_tokens: int
    items: list[Record]
    omitted: int
    other_workspaces: list[Elsewhere]
    time_window: TimeWindowShown | None
    pending_vectors: int  # as in ``Found``
    explain: NotRequired[dict[str, Any]]


class WorkspaceRow(TypedDict):
    id: str
    name: str
    memory_count: int
    pending_vectors: int  # of memory_count, records not embedded yet (at most selectors.PENDING_COUNT_MAX)
    created_at: str


class Workspaces(Envelope):
    """The answer of ``list_workspaces``: the workspaces, and ``pending_turns``, the readable
    session turns of the project not embedded yet (at most ``selectors.PENDING_COUNT_MAX``;
    sessions belong to the project, not to a workspace). The sessions app supplies that count
    (``selectors.count_pending_turns_with``): memories does not read its tables."""

    workspaces: list[WorkspaceRow]
    pending_turns: int


@final  # final: a union of the two narrows on its keys
class ForgottenOne(Envelope):
    """The answer of ``forget`` by id."""

    id: str
    forgotten: bool
    at: str


@final  # final: a union of the two narrows on its keys
class ForgottenSource(Envelope):
    """The answer of ``forget`` by source."""

    source_id: str
    forgotten_count: int
    at: str


Answer = Remembered | Found | Got | History | Validation | Recalled | Workspaces | ForgottenOne | ForgottenSource


def project_envelope(principal: Principal, notice: str | None) -> ProjectEnvelope:
    """``ProjectEnvelope``'s fields for ``principal``'s project."""
    answer: ProjectEnvelope = {
        "api_version": API_VERSION,
        "tenant_id": principal.account.tenant_id,
        "project_id": str(principal.project.id),
    }
    if notice is not None:
        answer["notice"] = notice
    return answer


def envelope(principal: Principal, workspace: str, notice: str | None) -> Envelope:
    """The fields every answer carries (plus ``notice`` while billing has one to show)."""
    answer: Envelope = {
        "api_version": API_VERSION,
        "tenant_id": principal.account.tenant_id,
        "project_id": str(principal.project.id),
        "workspace": workspace,
    }
    if notice is not None:
        answer["notice"] = notice
    return answer


def record(
    r: Memory, score: float | None, info: statuses.StatusInfo, relations: list[Relation], workspace: str
) -> Record:
    return {
        "id": str(r.id),
        "content": r.content,
        "score": None if score is None else round(score, 6),
        "status": info.status,
        "status_reason": info.reason,
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


def author(r: Memory) -> Author:
    return {
        "user": r.author.email if r.author else None,
        "device_label": r.device_label or None,
        "api_key": f"mmw_{r.api_key.prefix}…" if r.api_key else None,
    }


def forgotten_stub(r: Memory) -> ForgottenStub:
    return {
        "id": str(r.id),
        "version": r.version,
        "forgotten": True,
        "forgotten_at": r.forgotten_at.isoformat() if r.forgotten_at else None,
        "reason": r.reason,
        "created_at": r.created_at.isoformat(),
        "author": author(r),
    }


def brief(r: Memory) -> Brief:
    return {"id": str(r.id), "fact_key": r.fact_key, "source_hash": r.source_hash, "version": r.version}


def remembered(principal: Principal, memory: Memory, redactions: list[Redaction], notice: str | None) -> Remembered:
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
