"""Everything that reads memories, always through ``Memory.objects.visible_to(principal)``.

Why one module of this length: every read of memories (get, history, validate, search, recall,
workspaces, the browser's page) draws from one listing (``memory_queryset``) and one readable scope,
kept beside each other so a filter means the same everywhere; statements are ``memories.sql``,
ranking ``memories.search``.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, NamedTuple, TypeVar, cast

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_READ, Account, Workspace
from memories import (
    admission,
    explain,
    inputs,
    presenters,
    record_rules,
    rerank,
    search,
    sequence,
    sql,
    statuses,
    timewords,
)
from memories.models import NOT_PRESENTED, Memory, MemoryRelation, visibility_key
from memories.workspaces import ALL, workspace_state
from mmw import replicas
from mmw.errors import InvalidInput, NotFound

MAX_LIMIT = 100  # search's most results (memories.inputs declares it; recall ranks this many)
# Rows still waiting for their vector are counted up to this many (a larger backlog answers this
# number): a search never pays for counting a large backlog (``sql.pending_vectors``).
PENDING_COUNT_MAX = 1000


def pending_vectors(scope: sql.Scope | None) -> int:
    """How many rows of ``scope`` (the records or turns a search reads) are stored but not yet
    embedded, so found by keywords only for now; at most ``PENDING_COUNT_MAX``. 0 for no scope."""
    return sql.pending_vectors(scope, PENDING_COUNT_MAX) if scope is not None else 0


def _envelope(principal: Principal, workspace: str, admitted: admission.Admission) -> presenters.Envelope:
    return presenters.envelope(principal, workspace, admitted.notice())


def begin_read(principal: Principal) -> admission.Admission:
    """Every read: an API call counts toward rate limits (a person in the dashboard does not:
    ``Principal.via``) and the key must carry ``memory:read``.
    Returns the call's admission, for ``envelope``."""
    return admission.admit_read(principal, SCOPE_READ)


@dataclass(frozen=True)
class MemoryFilters:
    """What a listing or a search may be narrowed by (the filters of ``inputs.SEARCH``)."""

    scope: str | None = None
    fact_key: str | None = None
    source_id: str | None = None
    tags: list[str] | None = None
    min_confidence: float | None = None
    min_importance: float | None = None
    latest_only: bool = False
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> MemoryFilters:
        """The filters among parsed parameters (other keys are ignored); ``since`` / ``until``
        are parsed here (RFC 3339, on ``occurred_at``) and must not be reversed."""
        chosen = {f.name: values[f.name] for f in fields(cls) if f.name in values}
        for name in ("since", "until"):
            if isinstance(chosen.get(name), str):
                chosen[name] = record_rules.parse_time_filter(name, chosen[name])
        if chosen.get("since") is not None and chosen.get("until") is not None and chosen["since"] > chosen["until"]:
            raise InvalidInput("since must not be later than until")
        return cls(**chosen)


# What every reader loads with a record for ``present`` (its author, key and workspace name), so
# presenting runs no query of its own for them.
PRESENTED_WITH = ("author", "api_key", "workspace")


def _presentable(records: QuerySet[Memory]) -> QuerySet[Memory]:
    """``records`` loaded as ``present`` reads them: with ``PRESENTED_WITH``, without the
    ``NOT_PRESENTED`` columns."""
    return records.select_related(*PRESENTED_WITH).defer(*NOT_PRESENTED)


def memory_queryset(
    *, principal: Principal, workspace: str, filters: MemoryFilters | None = None
) -> QuerySet[Memory] | None:
    """THE listing of records for every surface (search through ``search_scope``, recall,
    validate, the dashboard's browser): the live records ``principal`` can read in ``workspace``
    — a name, a workspace id, or ``*`` for every live workspace of the project — narrowed by
    ``filters``. ``None`` when the named workspace does not exist yet; a deleted workspace or
    another project's id raises its error, as on writes."""
    base = _presentable(Memory.objects.visible_to(principal).live())
    if workspace == ALL:
        qs = base.filter(workspace__deleted_at__isnull=True)
    else:
        state = workspace_state(principal, workspace)
        state.raise_problem()
        if state.workspace is None:
            return None
        qs = base.filter(workspace=state.workspace)
    return _filtered(principal, qs, filters) if filters is not None else qs


# The compiled ``readable_scope`` of each recent rule, at most this many (least recently used out).
READABLE_SCOPES = 2048
_readable: OrderedDict[tuple[Any, ...], sql.Scope | None] = OrderedDict()
_readable_lock = threading.Lock()


def readable_scope(principal: Principal, *, live: bool = True) -> sql.Scope | None:
    """``Memory.objects.visible_to(principal)`` (``.live()`` too unless ``live`` is False) as a
    compiled scope (``memories.sql``); None when the principal reads nothing.

    Compiling the rule costs ~1 ms of ORM per statement, so a compiled scope is kept, keyed by
    everything the rule reads from the principal (``models.visibility_key``: account, project,
    user, membership, departments): a changed membership or department set is another key, and
    "now" is the database's (``statement_timestamp()``, read when a statement runs), so a kept
    scope is never stale."""
    key = (live, Memory.objects.db, *visibility_key(principal))  # the alias too: a scope names its database
    with _readable_lock:
        if key in _readable:
            _readable.move_to_end(key)
            return _readable[key]
    visible = Memory.objects.visible_to(principal)
    scope = sql.Scope.of(visible.live() if live else visible)
    with _readable_lock:
        _readable[key] = scope
        while len(_readable) > READABLE_SCOPES:
            _readable.popitem(last=False)
    return scope


def search_scope(*, principal: Principal, workspace: str, filters: MemoryFilters) -> sql.Scope | None:
    """``memory_queryset``'s rows as a compiled scope (``memories.sql``), for the rankers. A search
    of one named workspace without filters (most searches) narrows the cached ``readable_scope``
    to it, compiling nothing; any other search compiles ``memory_queryset``. None: nothing to read."""
    if workspace == ALL or filters != MemoryFilters():
        qs = memory_queryset(principal=principal, workspace=workspace, filters=filters)
        return sql.Scope.of(qs) if qs is not None else None
    state = workspace_state(principal, workspace)
    state.raise_problem()
    readable = readable_scope(principal)
    if state.workspace is None or readable is None:
        return None
    return readable.narrowed(f"{readable.column('workspace_id')} = %s", [state.workspace.pk])


# --- search -------------------------------------------------------------------------------


@replicas.reads
def memory_search(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Found:
    admitted = begin_read(principal)
    v = inputs.parse(inputs.SEARCH, payload)
    if not v["query"].strip():
        raise InvalidInput("query must not be empty")
    if v["current_source_hash"] is not None and v["source_id"] is None:
        raise InvalidInput("source_id is required when current_source_hash is provided")
    filters = MemoryFilters.of(v)
    asked = Asked.of(v, v["query"])
    # (cast: mypy asks a ``**`` item to name the NotRequired ``explain`` too; ``explained`` adds it.)
    answer = cast(
        presenters.Found,
        {
            **_envelope(principal, v["workspace"], admitted),
            "query": v["query"],
            "results": [],
            "other_workspaces": [],
            "time_window": asked.window_shown(),
            "pending_vectors": 0,
        },
    )
    scope = search_scope(principal=principal, workspace=v["workspace"], filters=filters)
    answer["pending_vectors"] = pending_vectors(scope)
    stats_of = search.project_stats(principal.project.pk)  # read once for the search and its look elsewhere
    if scope is None:
        answer["other_workspaces"] = elsewhere(principal, v["workspace"], filters, v["query"], asked.floor, stats_of)
        return asked.explained(answer)
    hits = search.hybrid_hits(
        scope, v["query"], v["limit"], principal.project.pk, floor=asked.floor, time_window=asked.window,
        diversify=v["diversify"], trace=asked.trace, stats_of=stats_of, reranked=asked.reranked,
    )  # fmt: skip
    freshness = statuses.Freshness(v["source_id"], v["current_source_hash"]) if v["current_source_hash"] else None
    answer["results"] = asked.traced(
        scope, present(principal, [h.memory for h in hits], [h.confidence for h in hits], freshness)
    )
    if is_short(len(hits), v["limit"]):
        answer["other_workspaces"] = elsewhere(principal, v["workspace"], filters, v["query"], asked.floor, stats_of)
    return asked.explained(answer)


Answered = TypeVar("Answered", bound=Mapping[str, object])


@dataclass
class Asked:
    """What a search, recall or session search was asked beside its words: when (``now``), the
    time its words point to (``window``), its floor and, with ``explain``, the trace it fills."""

    now: dt.datetime
    window: timewords.TimeWindow | None
    floor: search.Floor
    trace: explain.Trace | None
    reranked: rerank.Request | None = None

    @classmethod
    def of(cls, v: Mapping[str, Any], text: str) -> Asked:
        now = record_rules.parse_time_filter("now", v["now"]) if v.get("now") is not None else timezone.now()
        trace = explain.Trace() if v.get("explain") else None
        window = timewords.window(text, now)
        if trace is not None:
            trace.notes["now"] = now.isoformat()
            trace.notes["time_window"] = window.as_dict() if window is not None else None
        return cls(now, window, _floor(v), trace, rerank.Request() if v.get("rerank") else None)

    def window_shown(self) -> presenters.TimeWindowShown | None:
        if self.window is None:
            return None
        return {
            "start": self.window.start.isoformat(),
            "end": self.window.end.isoformat(),
            "phrase": self.window.phrase,
        }

    def traced(self, scope: sql.Scope | None, results: list[presenters.Record]) -> list[presenters.Record]:
        """``results`` each with its trace and the query words it matched (when explaining)."""
        if self.trace is None or scope is None:
            return results
        terms = self.trace.notes.get("terms") or []
        matched = sql.matched_terms(scope, [uuid.UUID(r["id"]) for r in results], terms)
        for result in results:
            entry = dict(self.trace.of(uuid.UUID(result["id"])) or {})
            words, context = matched.get(uuid.UUID(result["id"]), ([], []))
            entry["matched_terms"], entry["matched_in_previous"] = words, context
            entry["score"] = result["score"]
            result["explain"] = entry
        return results

    def explained(self, answer: Answered) -> Answered:
        """``answer`` with the query-wide trace as its ``explain`` (when explaining), and what became
        of a ``rerank`` asked for as its ``rerank``."""
        if self.trace is not None:
            cast(dict[str, Any], answer)["explain"] = self.trace.summary()
        if self.reranked is not None:
            cast(dict[str, Any], answer)["rerank"] = self.reranked.shown()
        return answer


# ``other_workspaces``: at most this many workspaces, counted among this many results elsewhere.
# An answer is short, and looks elsewhere, with fewer than ``SHORT_ANSWER`` results (or fewer than
# the search's ``limit`` when that is smaller): ten relevant records are an answer, not a dead end.
SHORT_ANSWER = 10
ELSEWHERE_SHOWN = 5
ELSEWHERE_DEPTH = 10
ELSEWHERE_WORKSPACES = 1000  # other workspaces named by id; past this many, "not this one"


def is_short(found: int, limit: int) -> bool:
    """Whether an answer of ``found`` relevant records, asked for at most ``limit``, is short:
    fewer than ``SHORT_ANSWER`` (or than ``limit``, when smaller). Only a short answer looks at the
    other workspaces (``elsewhere``): a search asking 50 that found 20 has its answer; the look
    would only cost it (on long records most of such a search's time, docs/search.md)."""
    return found < min(limit, SHORT_ANSWER)


def elsewhere(
    principal: Principal,
    workspace: str,
    filters: MemoryFilters,
    query: str,
    floor: search.Floor,
    stats_of: search.StatsOf | None = None,
) -> list[presenters.Elsewhere]:
    """The caller's other live workspaces where ``query`` has results above ``floor`` (the same
    filters, the same rule of who reads what), most matches first, at most ``ELSEWHERE_SHOWN``:
    what a search of one workspace that came back short tells the agent, so it can look there.
    Empty for a search of every workspace (``*``). Counted among the best ``ELSEWHERE_DEPTH``
    results of a small ranking over all the other workspaces (``search.probe``: each ranker's
    best ``ELSEWHERE_DEPTH``; docs/search.md, "Other workspaces"). ``stats_of``: the search's
    term statistics (``search.project_stats``), when it read them already."""
    if workspace == ALL:
        return []
    state = workspace_state(principal, workspace)
    here = state.workspace.pk if state.workspace is not None else None
    scope = _other_workspaces_scope(principal, here, filters)
    if scope is None:
        return []
    stats_of = stats_of or search.project_stats(principal.project.pk)
    hits = search.probe(scope, query, stats_of, floor, ELSEWHERE_DEPTH, context_weight=sequence.CONTEXT_WEIGHT)
    if not hits:
        return []
    return [
        {"workspace": name, "matches": n} for name, n in sql.workspaces_of(scope, [c.id for c in hits], ELSEWHERE_SHOWN)
    ]


def _other_workspaces_scope(principal: Principal, here: int | None, filters: MemoryFilters) -> sql.Scope | None:
    """The records ``principal`` reads in the project's live workspaces other than ``here``. The
    workspaces are named by id (a list, not a subquery): a subquery keeps the planner off the
    vector index (a full scan of the project's vectors, 1.2 s at 100k instead of milliseconds)."""
    live = Workspace.objects.filter(project=principal.project, deleted_at__isnull=True)
    others = list(
        (live.exclude(pk=here) if here is not None else live).values_list("pk", flat=True)[: ELSEWHERE_WORKSPACES + 1]
    )
    if not others:
        return None
    if filters != MemoryFilters():
        qs = memory_queryset(principal=principal, workspace=ALL, filters=filters)
        scope = sql.Scope.of(qs) if qs is not None else None
    else:
        scope = readable_scope(principal)
    if scope is None:
        return None
    if len(others) > ELSEWHERE_WORKSPACES:  # very many workspaces: every one but this
        return scope.narrowed(f"{scope.column('workspace_id')} <> %s", [here]) if here is not None else scope
    return scope.narrowed(f"{scope.column('workspace_id')} = ANY(%s)", [others])


def _floor(v: Mapping[str, Any]) -> search.Floor:
    """The relevance floor of a parsed search or recall: the caller's ``min_score`` (checked to be
    within 0..1), strict, or the calibrated default."""
    if v["min_score"] is None:
        return search.DEFAULT_FLOOR
    return search.Floor.strict(float(v["min_score"]))


@dataclass(frozen=True)
class MemoryPage:
    page: Page[Memory]
    results: list[presenters.Record]


# A status filter computes statuses (they are never stored) over at most this many of the newest
# records that can have one; older ones are not listed under the filter.
STATUS_SCAN = 2_000
LISTABLE_STATUSES = (statuses.CONFLICT, statuses.STALE)
# How a listing may be ordered (the browser's "Sort"); ties fall back to newest first, then id.
LIST_ORDERS: dict[str, tuple[str, ...]] = {
    "newest": ("-created_at", "id"),
    "oldest": ("created_at", "id"),
    "importance": ("-importance", "-created_at", "id"),
    "confidence": ("-confidence", "-created_at", "id"),
}


def _listing(
    principal: Principal, payload: Mapping[str, Any] | None, status: str | None, order: str
) -> QuerySet[Memory]:
    """The browser's listing before paging: ``status`` and ``order`` checked, the read admitted,
    ``payload`` parsed (``inputs.LIST``), the caller's live records in ``order``."""
    if status is not None and status not in LISTABLE_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(LISTABLE_STATUSES)}")
    if order not in LIST_ORDERS:
        raise InvalidInput(f"order must be one of {', '.join(LIST_ORDERS)}")
    begin_read(principal)
    v = inputs.parse(inputs.LIST, payload)
    qs = memory_queryset(principal=principal, workspace=v["workspace"], filters=MemoryFilters.of(v))
    return qs.order_by(*LIST_ORDERS[order]) if qs is not None else Memory.objects.none()


@replicas.reads
def memory_list(
    *,
    principal: Principal,
    payload: Mapping[str, Any] | None,
    page: int,
    per_page: int,
    status: str | None = None,
    order: str = "newest",
) -> MemoryPage:
    """One page of the newest live records the caller can read (a listing, not a search), each in
    search's shape. ``payload`` holds search's workspace and filters (``inputs.LIST``), parsed and
    bounded as every surface's input is; drawn from ``memory_queryset`` like search. ``status``
    (``conflict`` or ``stale``, the triage view) keeps only records with that status now, found
    among the newest ``STATUS_SCAN`` records that can have one. ``order``: a key of ``LIST_ORDERS``."""
    ordered = _listing(principal, payload, status, order)
    rows: QuerySet[Memory] | list[Memory] = ordered if status is None else _with_status(principal, ordered, status)
    current = Paginator(rows, per_page).get_page(page)
    return MemoryPage(current, present(principal, list(current.object_list)))


# An export of the browser's current filter: at most this many records, presented in chunks so
# the response streams (memory stays flat whatever the size).
EXPORT_MAX = 50_000
EXPORT_CHUNK = 200


def memory_export(
    *,
    principal: Principal,
    payload: Mapping[str, Any] | None,
    status: str | None = None,
    order: str = "newest",
) -> Iterator[presenters.Record]:
    """Every record ``memory_list`` would page through for the same arguments (the same listing,
    filters, status and order), at most ``EXPORT_MAX``, presented ``EXPORT_CHUNK`` at a time for
    a streamed download. The arguments are checked (and the read admitted) before the first
    record is yielded, so a bad filter raises here, not halfway through a response."""
    ordered = _listing(principal, payload, status, order)
    if status is not None:
        ordered = ordered.filter(id__in=[r.id for r in _with_status(principal, ordered, status)])
    ids = list(ordered.values_list("id", flat=True)[:EXPORT_MAX])
    return _export_chunks(principal, ids)


def _export_chunks(principal: Principal, ids: list[uuid.UUID]) -> Iterator[presenters.Record]:
    readable = readable_scope(principal)
    for start in range(0, len(ids), EXPORT_CHUNK):
        chunk = ids[start : start + EXPORT_CHUNK]
        found = sql.presented(readable, chunk) if readable is not None else {}
        yield from present(principal, [found[i] for i in chunk if i in found])


def _with_status(principal: Principal, ordered: QuerySet[Memory], status: str) -> list[Memory]:
    """The records of ``ordered`` whose computed status is ``status``: only records
    ``statuses.may_have_status`` names (a fact_key, a source hash, sources, a contradiction) can have one."""
    newest = ordered.filter(statuses.may_have_status())
    candidates = list(newest.order_by("-created_at", "id")[:STATUS_SCAN])
    infos = statuses.compute(principal, candidates)
    kept = {r.id for r in candidates if infos[r.id].status == status}
    return [r for r in ordered.filter(id__in=kept)]


def _filtered(principal: Principal, qs: QuerySet[Memory], f: MemoryFilters) -> QuerySet[Memory]:
    for name in ("scope", "fact_key", "source_id"):
        if getattr(f, name) is not None:
            qs = qs.filter(**{name: getattr(f, name)})
    if f.tags:
        qs = qs.filter(tags__contains=f.tags)
    if f.min_confidence is not None:
        qs = qs.filter(confidence__gte=f.min_confidence)
    if f.min_importance is not None:
        qs = qs.filter(importance__gte=f.min_importance)
    if f.since is not None:
        qs = qs.filter(occurred_at__gte=f.since)
    if f.until is not None:
        qs = qs.filter(occurred_at__lte=f.until)
    if f.latest_only:
        # "Latest" among the versions the caller can read: a hidden newer draft must neither
        # hide an older version nor reveal itself.
        newer = (
            Memory.objects.visible_to(principal)
            .live()
            .filter(workspace=OuterRef("workspace"), fact_key=OuterRef("fact_key"), version__gt=OuterRef("version"))
        )
        qs = qs.filter(Q(fact_key__isnull=True) | ~Exists(newer))
    return qs


# --- presenting records --------------------------------------------------------------------


def present(
    principal: Principal,
    records: list[Memory],
    scores: list[float | None] | None = None,
    freshness: statuses.Freshness | None = None,
) -> list[presenters.Record]:
    """The documented result shape for each record, with statuses and graph relations computed now."""
    infos = statuses.compute(principal, records, freshness)
    relations = _relations(principal, [r.id for r in records])
    scores = scores or [None] * len(records)
    workspaces = _workspace_names(records)
    return [
        presenters.record(r, s, infos[r.id], relations.get(r.id, []), workspaces[r.workspace_id])
        for r, s in zip(records, scores, strict=True)
    ]


def _workspace_names(records: list[Memory]) -> dict[int, str]:
    """Each record's workspace name: from the row loaded with the record (``select_related``,
    as every reader here loads records) or, for records loaded without it, one query."""
    names = {r.workspace_id: r.workspace.name for r in records if Memory.workspace.is_cached(r)}
    missing = {r.workspace_id for r in records} - names.keys()
    if missing:
        names.update(Workspace.objects.filter(id__in=missing).values_list("id", "name"))
    return names


def _relations(principal: Principal, ids: list[uuid.UUID]) -> dict[uuid.UUID, list[presenters.Relation]]:
    """Edges touching ``ids`` whose other end the caller can read, strongest first."""
    edges = list(
        MemoryRelation.objects.filter(Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids)).values_list(
            "from_memory_id", "to_memory_id", "relation", "score"
        )
    )
    if not edges:
        return {}  # no second statement for the ends' readability
    others = {a for a, *_ in edges} | {b for _, b, *_ in edges}
    scope = readable_scope(principal)
    readable = sql.ids_among(scope, list(others)) if scope is not None else set()
    wanted = set(ids)
    out: dict[uuid.UUID, list[presenters.Relation]] = {}
    for src, dst, relation, score in edges:
        if src in wanted and dst in readable:
            out.setdefault(src, []).append(
                {"id": str(dst), "relation": relation, "score": round(score, 4), "direction": "out"}
            )
        if dst in wanted and src in readable:
            out.setdefault(dst, []).append(
                {"id": str(src), "relation": relation, "score": round(score, 4), "direction": "in"}
            )
    for rows in out.values():
        rows.sort(key=lambda e: -e["score"])
    return out


@replicas.reads
def memory_previews(*, principal: Principal, ids: list[str], chars: int = 90) -> dict[str, str]:
    """The first ``chars`` characters of each record among ``ids`` the caller can read (live),
    to name related records in a page; ids the caller cannot read are absent."""
    wanted = []
    for raw in ids[:MAX_LIMIT]:
        try:
            wanted.append(uuid.UUID(str(raw)))
        except ValueError:
            continue
    rows = Memory.objects.visible_to(principal).live().filter(id__in=wanted).values_list("id", "content")
    return {
        str(rid): content if len(content) <= chars else content[: chars - 1].rstrip() + "…" for rid, content in rows
    }


# --- one record, history, validation, recall, workspaces ----------------------------------


@replicas.reads
def memory_get(*, principal: Principal, memory_id: str) -> presenters.Got:
    admitted = begin_read(principal)
    record = _visible_record(principal, memory_id)
    result = present(principal, [record])[0]
    return {**_envelope(principal, result["workspace"], admitted), "memory": result}


def _visible_record(principal: Principal, memory_id: str) -> Memory:
    """A live record the caller can read; anything else is the same 404."""
    try:
        wanted = uuid.UUID(str(memory_id))
    except ValueError:
        raise NotFound("memory not found") from None
    readable = readable_scope(principal)
    record = sql.presented(readable, [wanted]).get(wanted) if readable is not None else None
    if record is None:
        raise NotFound("memory not found")
    return record


@replicas.reads
def memory_history(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.History:
    """Every version of a fact_key the caller can read, oldest first; forgotten versions appear as
    stubs (number, time, author, reason) without their content."""
    admitted = begin_read(principal)
    v = inputs.parse(inputs.HISTORY, payload)
    if v["fact_key"] is None and v["memory_id"] is None:
        raise InvalidInput("Either fact_key or memory_id must be provided")
    if v["memory_id"] is not None:
        anchor = _visible_record(principal, v["memory_id"])
        workspace_id, fact_key, name = anchor.workspace_id, anchor.fact_key, anchor.workspace.name
    else:
        state = workspace_state(principal, v["workspace"])
        state.raise_problem()
        if state.workspace is None:
            return {**_envelope(principal, v["workspace"], admitted), "fact_key": v["fact_key"], "versions": []}
        workspace_id, fact_key, name = state.workspace.id, v["fact_key"], state.name
    visible = readable_scope(principal, live=False)
    if visible is None:
        rows = []
    elif fact_key is None:
        rows = [anchor]
    else:
        # In the order things happened (occurred_at; the write order for records written without it).
        same_fact = f"{visible.column('workspace_id')} = %s AND {visible.column('fact_key')} = %s"
        order = f"{visible.column('occurred_at')}, {visible.column('version')}"
        rows = sql.loaded(visible, same_fact, [workspace_id, fact_key], order)
    live = [r for r in rows if r.forgotten_at is None]
    presented = {p["id"]: p for p in present(principal, live)}
    versions: list[presenters.Record | presenters.ForgottenStub] = [
        presented[str(r.id)] if r.forgotten_at is None else presenters.forgotten_stub(r) for r in rows
    ]
    return {**_envelope(principal, name, admitted), "fact_key": fact_key, "versions": versions}


@replicas.reads
def memory_validate(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Validation:
    """Which live records of ``source_id`` are stale against ``current_source_hash``. Read-only."""
    admitted = begin_read(principal)
    v = inputs.parse(inputs.VALIDATE, payload)
    if not v["source_id"].strip() or not v["current_source_hash"].strip():
        raise InvalidInput("source_id and current_source_hash must not be empty")
    base = memory_queryset(principal=principal, workspace=v["workspace"], filters=MemoryFilters.of(v))
    rows = list(base.order_by("created_at")) if base is not None else []
    stale = [r for r in rows if r.source_hash != v["current_source_hash"]]
    fresh = [r for r in rows if r.source_hash == v["current_source_hash"]]
    return {
        **_envelope(principal, v["workspace"], admitted),
        "source_id": v["source_id"],
        "current_source_hash": v["current_source_hash"],
        "stale_count": len(stale),
        "fresh_count": len(fresh),
        "stale": [presenters.brief(r) for r in stale],
        "fresh": [presenters.brief(r) for r in fresh],
    }


@replicas.reads
def recall_context(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Recalled:
    """A context pack for a task: relevant records (plus pinned ones), highest importance first,
    cut to ``token_budget``; each item shows its status so the agent can cite or re-check it."""
    admitted = begin_read(principal)
    v = inputs.parse(inputs.RECALL, payload)
    if not v["task"].strip():
        raise InvalidInput("task must not be empty")
    budget = v["token_budget"]
    asked = Asked.of(v, v["task"])
    answer = cast(
        presenters.Recalled,
        {
            **_envelope(principal, v["workspace"], admitted),
            "task": v["task"],
            "token_budget": budget,
            "used_tokens": 0,
            "items": [],
            "omitted": 0,
            "other_workspaces": [],
            "time_window": asked.window_shown(),
            "pending_vectors": 0,
        },
    )
    filters = MemoryFilters.of(v)
    base = memory_queryset(principal=principal, workspace=v["workspace"], filters=filters)
    base_scope = sql.Scope.of(base) if base is not None else None
    answer["pending_vectors"] = pending_vectors(base_scope)
    stats_of = search.project_stats(principal.project.pk)  # read once for the pack and its look elsewhere
    if base is None:
        answer["other_workspaces"] = elsewhere(principal, v["workspace"], filters, v["task"], asked.floor, stats_of)
        return asked.explained(answer)
    hits = search.hybrid_hits(
        base, v["task"], MAX_LIMIT, principal.project.pk, floor=asked.floor, time_window=asked.window,
        diversify=True, trace=asked.trace, stats_of=stats_of,
    )  # fmt: skip
    relevance = {h.memory.id: h.confidence for h in hits}
    pinned = list(base.filter(importance__gte=1.0).exclude(id__in=relevance.keys()).order_by("-occurred_at")[:20])
    pool = [h.memory for h in hits] + pinned
    # Equal importance and relevance: what happened last first (occurred_at, not the write time).
    pool.sort(key=lambda m: (-m.importance, -relevance.get(m.id, 0.0), -m.occurred_at.timestamp()))
    chosen, used = [], 0
    for record in pool:
        cost = record_rules.approx_tokens(record.content)
        if used + cost <= budget:
            chosen.append(record)
            used += cost
    items = asked.traced(base_scope, present(principal, chosen, [relevance.get(m.id) for m in chosen]))
    answer["used_tokens"], answer["items"], answer["omitted"] = used, items, len(pool) - len(chosen)
    short = is_short(len(hits), MAX_LIMIT)
    other = elsewhere(principal, v["workspace"], filters, v["task"], asked.floor, stats_of) if short else []
    answer["other_workspaces"] = other
    return asked.explained(answer)


_pending_turns: Callable[[Principal], int] = lambda principal: 0  # noqa: E731 - until the sessions app registers


def count_pending_turns_with(counter: Callable[[Principal], int]) -> None:
    """Register how ``list_workspaces`` counts the caller's session turns still waiting for their
    vector: the sessions app does, in its ``AppConfig.ready`` (memories never imports it)."""
    global _pending_turns
    _pending_turns = counter


@replicas.reads
def workspace_list(*, principal: Principal) -> presenters.Workspaces:
    """The live workspaces of the caller's project, with the number of records the caller can read
    and how many of them still wait for their vector (``pending_vectors``, at most
    ``PENDING_COUNT_MAX`` per workspace), and the caller's readable session turns still waiting
    (``pending_turns``, counted by the registered counter)."""
    admitted = begin_read(principal)
    rows: list[presenters.WorkspaceRow] = [
        {
            "id": str(row.workspace.public_id),
            "name": row.workspace.name,
            "memory_count": row.records,
            "pending_vectors": row.pending,
            "created_at": row.workspace.created_at.isoformat(),
        }
        for row in workspaces_with_counts(principal)
    ]
    return {**_envelope(principal, ALL, admitted), "workspaces": rows, "pending_turns": _pending_turns(principal)}


class WorkspaceCount(NamedTuple):
    """A workspace with the live records the caller reads in it, and how many of those are not
    embedded yet (found by keywords only until the worker computes their vectors)."""

    workspace: Workspace
    records: int
    pending: int


def workspaces_with_counts(principal: Principal) -> list[WorkspaceCount]:
    """The project's live workspaces by name, each with how many live records ``principal`` can
    read in it (``memory_count``): exactly the records ``Memory.objects.visible_to(principal).live()``
    holds there, without counting them (``sql.workspace_counts``: the trigger-kept ``LiveCount``
    less the hidden restricted and expired records), and how many of those still wait for their
    vector (``pending_vectors``: at most ``PENDING_COUNT_MAX``, read from the partial index of
    unembedded records). One statement."""
    rule = readable_scope(principal, live=False)
    return [WorkspaceCount(*row) for row in sql.workspace_counts(principal.project.pk, rule, PENDING_COUNT_MAX)]


@replicas.reads
def records_written_since(*, account: Account, start: dt.date) -> dict[dt.date, int]:
    """Records the account wrote per day (UTC) from ``start`` on, forgotten ones included (they were
    written): the usage chart's series. Days without a record are left out."""
    rows = (
        Memory.objects.filter(account=account, created_at__date__gte=start)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
    return dict(rows)
