"""Typed shapes of MMW's REST API: what each operation takes (``*Params``: the optional
parameters, every one nullable as the server reads null as "not given") and what it answers.

Answers are the JSON objects the server sends, typed as ``TypedDict``s: a field the server adds
later is kept (never dropped by the client), and a type checker holds your code to the documented
fields. ``tests/clients/test_python_sdk_types.py`` compares each shape with the server's OpenAPI
schema, so the two cannot drift apart silently. (No ``from __future__ import annotations`` here:
``NotRequired`` must be seen at run time for ``__required_keys__`` to be right.)

Why one module of this length: it is the API's typed shapes, one ``TypedDict`` per parameter set and
answer, kept in the order of the reference.
"""

from typing import Any, Literal

from typing_extensions import NotRequired, Required, TypedDict

Visibility = Literal["author", "department", "project", "org"]
Status = Literal["unverified", "stale", "conflict"]

# --- what the operations take ---------------------------------------------------------------------


class RememberParams(TypedDict, total=False):
    """``remember``'s parameters besides ``content`` (docs/reference/remember.md)."""

    workspace: str | None
    scope: str | None
    source: str | None
    source_id: str | None
    source_hash: str | None
    source_revision: str | None
    fact_key: str | None
    confidence: float | None
    derived_from: list[str] | None
    tags: list[str] | None
    expires_at: str | None
    reason: str | None
    expected_version: int | None
    visibility: Visibility | None
    occurred_at: str | None
    position: int | None


class BatchRecord(RememberParams, total=False):
    """One record of ``remember_batch``: ``content`` and remember's parameters; the client adds an
    ``idempotency_key`` to each record that has none."""

    content: Required[str]
    idempotency_key: str | None


class SearchParams(TypedDict, total=False):
    workspace: str | None
    limit: int | None
    scope: str | None
    fact_key: str | None
    source_id: str | None
    tags: list[str] | None
    min_confidence: float | None
    min_importance: float | None
    current_source_hash: str | None
    latest_only: bool | None
    since: str | None
    until: str | None
    min_score: float | None
    now: str | None
    explain: bool | None
    diversify: bool | None
    rerank: bool | None  # the cross-encoder reorders the first 20 (English; ~0.2 s)


class RecallParams(TypedDict, total=False):
    workspace: str | None
    token_budget: int | None
    since: str | None
    until: str | None
    min_score: float | None
    now: str | None
    explain: bool | None


class SessionFields(TypedDict, total=False):
    """``PUT /api/v1/sessions/<client>/<session_id>``: a field left out or null keeps its value."""

    title: str | None
    working_directory: str | None
    device: str | None
    started_at: str | None
    ended_at: str | None


class TurnInput(TypedDict):
    position: int
    role: str
    content: str
    occurred_at: NotRequired[str | None]


class SessionSearchParams(TypedDict, total=False):
    limit: int | None
    client: str | None
    session_id: str | None
    since: str | None
    until: str | None
    context: int | None
    now: str | None
    explain: bool | None
    diversify: bool | None


class LedgerRecordParams(TypedDict, total=False):
    """``ledger_record``'s parameters besides kind, amount and currency. A ``reference`` (your own
    id: an invoice or payment id) makes the write replayable, so the client may retry it safely."""

    occurred_at: str | None
    due_at: str | None
    repeat: str | None
    counterparty: str | None
    category: str | None
    memo: str | None
    reference: str | None
    tags: list[str] | None
    visibility: Visibility | None


class LedgerFilters(TypedDict, total=False):
    kind: Literal["transaction", "reminder"] | None
    since: str | None
    until: str | None
    category: str | None
    counterparty: str | None
    currency: str | None
    text: str | None


class LedgerListParams(LedgerFilters, total=False):
    limit: int | None
    offset: int | None


class LedgerBalanceParams(TypedDict, total=False):
    currency: str | None
    category: str | None
    since: str | None
    until: str | None
    by_category: bool | None
    by_month: bool | None


class LedgerCompleteParams(TypedDict, total=False):
    due_at: str | None
    occurred_at: str | None
    memo: str | None


# --- what the operations answer -------------------------------------------------------------------


class ErrorBody(TypedDict):
    code: str
    message: str


class ItemError(TypedDict):
    """One failed record of a batch (or turn of an upload): its own error, the others stored."""

    error: ErrorBody


class Envelope(TypedDict):
    api_version: str
    tenant_id: str
    project_id: str
    notice: NotRequired[str]


class WorkspaceEnvelope(Envelope):
    workspace: str


class Author(TypedDict):
    user: str | None
    device_label: str | None
    api_key: str | None


class Redaction(TypedDict):
    field: str
    rule: str


class Memory(TypedDict):
    id: str
    content: str
    score: float | None
    status: Status
    status_reason: str | None
    workspace: str
    scope: str
    source: str
    source_id: NotRequired[str | None]
    source_hash: NotRequired[str | None]
    source_revision: NotRequired[str | None]
    fact_key: str | None
    version: int
    is_latest: bool
    conflicts_with: list[str]
    confidence: float
    importance: NotRequired[float]
    derived_from: list[str]
    tags: list[str]
    visibility: str
    graph_relations: list[dict[str, Any]]
    reason: NotRequired[str | None]
    expires_at: NotRequired[str | None]
    occurred_at: NotRequired[str]
    position: NotRequired[int | None]
    created_at: str
    author: Author
    explain: NotRequired[dict[str, Any]]  # with explain=True: why it ranked


class ForgottenVersion(TypedDict):
    id: str
    version: int
    forgotten: Literal[True]
    forgotten_at: NotRequired[str | None]
    reason: NotRequired[str | None]
    created_at: str
    author: Author


class RememberAnswer(WorkspaceEnvelope):
    id: str
    scope: str
    status: Literal["unverified"]
    source_id: str | None
    source_hash: str | None
    derived_from: list[str]
    fact_key: str | None
    version: int
    visibility: NotRequired[str]
    expires_at: NotRequired[str | None]
    redactions: NotRequired[list[Redaction]]
    occurred_at: NotRequired[str]
    position: NotRequired[int | None]
    created_at: str


class BatchAnswer(WorkspaceEnvelope):
    results: list[RememberAnswer | ItemError]
    queued_for_vectors: int  # records queued for the worker to embed (findable by meaning once embedded)


class MemoryAnswer(WorkspaceEnvelope):
    memory: Memory


class Elsewhere(TypedDict):
    workspace: str
    matches: int


class TimeWindow(TypedDict):
    start: str
    end: str
    phrase: str


class Reranked(TypedDict):
    """With rerank=True: whether the cross-encoder reordered the results, and if not why."""

    applied: bool
    reason: str | None
    candidates: int
    model: str


class SearchAnswer(WorkspaceEnvelope):
    query: NotRequired[str]
    results: list[Memory]
    other_workspaces: list[Elsewhere]
    time_window: TimeWindow | None
    pending_vectors: int  # records searched that are not embedded yet: a miss may be temporary (at most 1000)
    explain: NotRequired[dict[str, Any]]
    rerank: NotRequired[Reranked]


class HistoryAnswer(WorkspaceEnvelope):
    fact_key: str | None
    versions: list[Memory | ForgottenVersion]


class ForgetAnswer(WorkspaceEnvelope):
    """By id: ``id`` and ``forgotten``; by source: ``source_id`` and ``forgotten_count``."""

    at: str
    id: NotRequired[str]
    forgotten: NotRequired[bool]
    source_id: NotRequired[str]
    forgotten_count: NotRequired[int]


class ValidateAnswer(WorkspaceEnvelope):
    source_id: str
    current_source_hash: str
    stale_count: int
    fresh_count: int
    stale: list[dict[str, Any]]
    fresh: list[dict[str, Any]]


class RecallAnswer(WorkspaceEnvelope):
    task: str
    token_budget: int
    used_tokens: int
    items: list[Memory]
    omitted: int
    other_workspaces: list[Elsewhere]
    time_window: TimeWindow | None
    pending_vectors: int  # as in SearchAnswer
    explain: NotRequired[dict[str, Any]]


class WorkspaceList(WorkspaceEnvelope):
    workspaces: list[dict[str, Any]]  # id, name, memory_count, pending_vectors (not embedded yet), created_at
    pending_turns: int  # readable session turns not embedded yet (at most 1000)


class AgentConsentAnswer(TypedDict):
    api_version: str
    tenant_id: str
    project_id: str
    given: bool
    sources: list[str]
    recorded_at: str


class AgentConsentScope(TypedDict):
    """What a consent given with this key covers: its account and project, by name."""

    api_version: str
    tenant_id: str
    account: str
    project: str
    project_id: str
    user: str


class Session(TypedDict):
    id: str
    client: str
    session_id: str
    title: NotRequired[str]
    working_directory: NotRequired[str]
    device: NotRequired[str]
    started_at: NotRequired[str | None]
    ended_at: NotRequired[str | None]
    shared_with_project: bool
    turn_count: int
    author: NotRequired[str | None]
    created_at: str
    updated_at: NotRequired[str]


class Turn(TypedDict):
    position: int
    role: str
    occurred_at: str
    content: str
    withheld: str | None


class SessionAnswer(Envelope):
    session: Session


class TurnsAnswer(Envelope):
    session: Session
    created: int
    unchanged: int
    errors: int
    queued_for_vectors: int  # the session's turns waiting for their vector after this call (at most 1000)
    results: list[dict[str, Any]]


class SessionList(Envelope):
    total: int
    sessions: list[Session]


class SessionRead(Envelope):
    session: Session
    turns: list[Turn]
    next_after: int | None


class SessionSearchAnswer(Envelope):
    query: str
    results: list[dict[str, Any]]
    time_window: TimeWindow | None
    pending_vectors: int  # turns searched that are not embedded yet (at most 1000)
    explain: NotRequired[dict[str, Any]]


class SessionForgetAnswer(Envelope):
    client: str
    session_id: str
    forgotten: bool
    at: str


class Entry(TypedDict):
    id: str
    kind: Literal["transaction", "reminder"]
    amount: str
    currency: str
    occurred_at: str | None
    due_at: str | None
    repeat: str | None
    counterparty: str
    category: str
    memo: str
    reference: str | None
    tags: list[str]
    visibility: str
    reverses: str | None
    reversed_by: str | None
    completes: str | None
    completes_due_at: str | None
    author: Author
    created_at: str


class LedgerRecorded(Envelope):
    entry: Entry
    replayed: bool


class LedgerListed(Envelope):
    entries: list[Entry]
    limit: int
    offset: int
    next_offset: int | None


class BalanceLine(TypedDict):
    currency: str
    balance: str
    entries: int
    category: NotRequired[str]
    month: NotRequired[str]


class LedgerBalances(Envelope):
    balances: list[BalanceLine]


class Occurrence(TypedDict):
    due_at: str
    entry: Entry


class LedgerUpcoming(Envelope):
    until: str
    reminders: list[Occurrence]


class ImportJob(TypedDict):
    id: str
    url: str
    status: Literal["queued", "running", "succeeded", "failed"]
    via: str
    upload_bytes: int
    progress: dict[str, int]
    report: dict[str, Any] | None
    error: dict[str, Any] | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None


# "import" is a Python keyword: these two are spelled in TypedDict's functional form.
ImportAnswer = TypedDict(
    "ImportAnswer",
    {
        "imported": bool,
        "import": ImportJob,
        "lines": NotRequired[int],
        "created": NotRequired[dict[str, int]],
        "unchanged": NotRequired[dict[str, int]],
        "ignored": NotRequired[dict[str, int]],
        "redacted": NotRequired[int],
    },
)
"""``POST /api/v1/import``: ``imported: true`` with the report when it ran inline, else the queued job."""

ImportJobAnswer = TypedDict("ImportJobAnswer", {"import": ImportJob})
