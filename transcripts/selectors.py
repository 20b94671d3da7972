"""Everything that reads sessions, always through ``Session.objects.visible_to(principal)``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, cast

from django.db import connections
from django.db.models import QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.keys import Principal
from memories import explain, search, sql
from memories.inputs import parse
from memories.presenters import project_envelope
from memories.selectors import Asked, begin_read, pending_vectors
from mmw import replicas
from mmw.errors import InvalidInput, NotFound
from transcripts import indexing, inputs, presenters
from transcripts.models import Session, Turn


def live_turns(*, project_id: uuid.UUID) -> int:
    """Turns of the project's sessions that are not forgotten (what the plan's limit counts)."""
    total = Session.objects.filter(project_id=project_id, forgotten_at__isnull=True).aggregate(n=Sum("turn_count"))
    return int(total["n"] or 0)


def pending_turns(principal: Principal) -> int:
    """Turns of the live sessions ``principal`` can read that wait for their vector (stored, found
    by keywords only until the worker embeds them), at most ``PENDING_COUNT_MAX``; read from the
    partial index of the project's unembedded turns (``turn_project_unembedded``)."""
    turns = Turn.objects.filter(
        project_id=principal.project.pk,
        embedding_model__isnull=True,
        is_stub=False,
        session__in=sessions_queryset(principal).values("pk"),
    )
    return pending_vectors(sql.Scope.of(turns))


def session_pending(session_pk: uuid.UUID) -> int:
    """One session's turns waiting for their vector, at most ``PENDING_COUNT_MAX`` (an upload's
    answer: its new turns and the ones whose neighbour changed; index ``turn_unembedded``)."""
    turns = Turn.objects.filter(session_id=session_pk, embedding_model__isnull=True, is_stub=False)
    return pending_vectors(sql.Scope.of(turns))


def own_session(principal: Principal, key: inputs.SessionKey) -> Session | None:
    """The caller's own session with this key, forgotten or not (writes go only there)."""
    return (
        Session.objects.visible_to(principal)
        .filter(author_id=principal.user.pk, client=key.client, client_session_id=key.session_id)
        .first()
    )


def resolve(principal: Principal, key: inputs.SessionKey) -> Session | None:
    """The live session a (client, session_id) names for the caller: their own, else the oldest
    one shared with the project."""
    found = (
        Session.objects.visible_to(principal)
        .live()
        .filter(client=key.client, client_session_id=key.session_id)
        .select_related("author")
        .order_by("created_at")
    )
    own = [s for s in found if s.author_id == principal.user.pk]
    return own[0] if own else next(iter(found), None)


def sessions_queryset(principal: Principal) -> QuerySet[Session]:
    """THE listing of sessions for every surface: live, visible to the caller."""
    return Session.objects.visible_to(principal).live().select_related("author")


# --- list and read ----------------------------------------------------------------------------


@replicas.reads
def session_list(*, principal: Principal, payload: Mapping[str, Any] | None) -> dict[str, Any]:
    admitted = begin_read(principal)
    v = inputs.parse_bounded(inputs.LIST, payload)
    qs = sessions_queryset(principal)
    if v["client"] is not None:
        qs = qs.filter(client=v["client"])
    total = qs.count()
    ordered = qs.order_by(Coalesce("started_at", "created_at").desc(), "-created_at")
    page = list(ordered[v["offset"] : v["offset"] + v["limit"]])
    return {
        **project_envelope(principal, admitted.notice()),
        "total": total,
        "sessions": [presenters.session(s) for s in page],
    }


@replicas.reads
def session_read(
    *, principal: Principal, client: Any, session_id: Any, payload: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One session with a page of its turns in order (``after`` a position, ``limit`` of them);
    ``next_after`` is the position to ask from next, null at the end."""
    admitted = begin_read(principal)
    key = inputs.session_key(client, session_id)
    v = inputs.parse_bounded(inputs.READ, payload)
    found = resolve(principal, key)
    if found is None:
        raise NotFound("session not found")
    return _read(principal, found, v["after"], v["limit"], admitted.notice())


@replicas.reads
def session_read_by_id(*, principal: Principal, session_pk: uuid.UUID, after: int | None, limit: int) -> dict[str, Any]:
    """``session_read`` by the session's own id (the dashboard's links)."""
    admitted = begin_read(principal)
    inputs.bounded(inputs.READ, {"after": after, "limit": limit})
    found = sessions_queryset(principal).filter(pk=session_pk).first()
    if found is None:
        raise NotFound("session not found")
    return _read(principal, found, after, limit, admitted.notice())


def _read(principal: Principal, found: Session, after: int | None, limit: int, notice: str | None) -> dict[str, Any]:
    turns = found.turns.order_by("position")
    if after is not None:
        turns = turns.filter(position__gt=after)
    page = list(turns.defer("embedding")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return {
        **project_envelope(principal, notice),
        "session": presenters.session(found),
        "turns": [presenters.turn(t) for t in page],
        "next_after": page[-1].position if more and page else None,
    }


# --- search -----------------------------------------------------------------------------------


@replicas.reads
def session_search(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.SessionsFound:
    """Turns ranked by meaning and keywords (``memories.search.hybrid_ranking``, the ranking of
    ``search``), each with ``context`` turns before and after it in its session."""
    admitted = begin_read(principal)
    v = parse(inputs.SEARCH_SESSIONS, payload)
    if not v["query"].strip():
        raise InvalidInput("query must not be empty")
    inputs.bounded(inputs.SEARCH_SESSIONS, v)
    now = timezone.now()
    since = inputs.parse_time("since", v["since"], now=now)
    until = inputs.parse_time("until", v["until"], now=now)
    sessions = sessions_queryset(principal)
    if v["client"] is not None:
        sessions = sessions.filter(client=v["client"])
    if v["session_id"] is not None:
        sessions = sessions.filter(client_session_id=v["session_id"])
    candidates = Turn.objects.filter(session__in=named_sessions(sessions), is_stub=False)
    if since is not None:
        candidates = candidates.filter(occurred_at__gte=since)
    if until is not None:
        candidates = candidates.filter(occurred_at__lt=until)
    asked = Asked.of({**v, "min_score": None}, v["query"])
    ranked = search.hybrid_ranking(
        candidates,
        v["query"],
        v["limit"],
        lambda terms: search.term_stats_among(candidates, terms),
        context_weight=indexing.CONTEXT_WEIGHT,
        time_window=asked.window,
        source_column="session_id" if v["diversify"] else None,
        favour=PERSONS_TURNS,
        trace=asked.trace,
    )
    results = present_hits(ranked, v["context"], _matched(asked.trace, candidates, ranked))
    answer = cast(
        presenters.SessionsFound,
        {  # ``explain`` is added by ``explained`` (see memory_search)
            **project_envelope(principal, admitted.notice()),
            "query": v["query"],
            "results": results,
            "time_window": asked.window_shown(),
            "pending_vectors": pending_vectors(sql.Scope.of(candidates)),
        },
    )
    return asked.explained(answer)


# The turns a session search favours: what the person said (role "user", or "human" as some
# clients name it). An assistant's turns restate the question's topic at length and so match its
# words well; the facts about the person (what they did, own, decided) are in their own turns,
# often in passing (docs/sessions.md, "The person's own words").
PERSONS_TURNS = search.Favour("role", frozenset({"user", "human"}))

# A search names the caller's sessions by id up to this many (``named_sessions``).
SESSIONS_NAMED = 2000


def named_sessions(sessions: QuerySet[Session]) -> QuerySet[Session, Any] | list[uuid.UUID]:
    """The sessions a search reads, as a list of ids when there are at most ``SESSIONS_NAMED`` (one
    small statement), else as a subquery. Named by id, the planner reads the turns of these
    sessions through the ``session_id`` index and matches words only there; behind a subquery it
    estimated the ``@@`` match cheap, matched every turn of the project and joined afterwards
    (LongMemEval-S, one client's 45 sessions in a project of 5,015 turns: 53 ms and 11,431 buffers
    for the keyword statement, against 9.6 ms and 2,123 named by id; it grows with the project,
    not the client). Past the bound the caller's sessions are a large part of the project anyway."""
    ids = list(sessions.values_list("pk", flat=True)[: SESSIONS_NAMED + 1])
    return ids if len(ids) <= SESSIONS_NAMED else sessions.values("pk")


Explained = tuple[explain.Trace, dict[Any, tuple[list[str], list[str]]]]


def _matched(
    trace: explain.Trace | None, candidates: QuerySet[Turn], ranked: list[search.Candidate]
) -> Explained | None:
    """With ``explain``: the trace and the query words each hit's turn (or the turn before it) holds."""
    if trace is None:
        return None
    scope = sql.Scope.of(candidates)
    terms = trace.notes.get("terms") or []
    return trace, sql.matched_terms(scope, [c.id for c in ranked], terms) if scope is not None else {}


def present_hits(
    ranked: list[search.Candidate], context: int, explained: Explained | None = None
) -> list[presenters.SessionHit]:
    """Each hit with its session and ``context`` turns on each side (by order, across gaps); with
    ``explained``, why it ranked (``memories.explain``)."""
    loaded = Turn.objects.defer("embedding").select_related("session__author").in_bulk([c.id for c in ranked])
    around = context_of(list(loaded.values()), context)
    results: list[presenters.SessionHit] = []
    for candidate in ranked:
        hit = loaded.get(int(candidate.id))
        if hit is None:
            continue
        before, after = around.get(hit.id, ([], []))
        results.append(
            {
                "score": candidate.confidence,
                "session": presenters.session(hit.session),
                "turn": presenters.turn(hit),
                "context_before": [presenters.turn(t) for t in before],
                "context_after": [presenters.turn(t) for t in after],
            }
        )
        if explained is not None:
            trace, matched = explained
            words, previous = matched.get(candidate.id, ([], []))
            results[-1]["explain"] = {**(trace.of(candidate.id) or {}), "matched_terms": words,
                                      "matched_in_previous": previous, "score": candidate.confidence}  # fmt: skip
    return results


def context_of(hits: list[Turn], context: int) -> dict[int, tuple[list[Turn], list[Turn]]]:
    """For each of ``hits``, the ``context`` turns before and after it in its session (by order,
    across gaps in the positions; stubs included, as a reader sees the session), oldest first.
    Two statements whatever the number of hits: the neighbours' ids (one ``LATERAL`` probe of the
    ``(session, position)`` index per hit and side), then the turns."""
    if context <= 0 or not hits:
        return {}
    with connections[replicas.current()].cursor() as cursor:
        cursor.execute(
            """
            SELECT h.hit_id, t.id, t.position < h.position
            FROM unnest(%s::bigint[], %s::uuid[], %s::int[]) AS h(hit_id, session_id, position)
            CROSS JOIN LATERAL (
                (SELECT id, position FROM transcripts_turn
                 WHERE session_id = h.session_id AND position < h.position ORDER BY position DESC LIMIT %s)
                UNION ALL
                (SELECT id, position FROM transcripts_turn
                 WHERE session_id = h.session_id AND position > h.position ORDER BY position LIMIT %s)
            ) AS t
            ORDER BY t.position
            """,
            [[h.id for h in hits], [h.session_id for h in hits], [h.position for h in hits], context, context],
        )
        pairs = cursor.fetchall()
    turns = Turn.objects.defer("embedding").in_bulk([turn_id for _, turn_id, _ in pairs])
    around: dict[int, tuple[list[Turn], list[Turn]]] = {h.id: ([], []) for h in hits}
    for hit_id, turn_id, is_before in pairs:  # oldest first
        if turn_id in turns:
            around[hit_id][0 if is_before else 1].append(turns[turn_id])
    return around
