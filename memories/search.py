"""Ranking for ``search`` and ``search_sessions``: keyword hits (PostgreSQL full text) and vector
hits (pgvector), fused by z-normalised scores. Filtering is the caller's queryset's job; both
candidate lists are drawn from that same filtered queryset, so a filter never loses recall to ranking.
Why it ranks this way, how the constants were tuned and what it costs: docs/search.md.

The rankers work on any table with the columns ``search_document`` (tsvector), ``embedding`` /
``embedding_model`` and ``created_at`` — memory records and session turns (``transcripts``) —
and return light ``Candidate`` rows (id, score, created_at), hundreds of them; only the ``limit``
winners of the fusion are loaded (``hybrid_hits`` loads ``Memory`` objects without their vectors).
A search compiles its queryset's scope once (``memories.sql.Scope``); every statement of it is
``memories.sql``'s text around that scope.

Why one module of this length: the rankers, their fusion and the relevance floor share constants
tuned together (docs/search.md), which tests and benches vary on this module; the query's words are
``memories.words``, the statements ``memories.sql``, the dense ranker's statement, ``Candidate`` and
the models' cosine scales ``memories.dense`` (re-exported here).
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import psycopg
from django.db import connections
from django.db.models import QuerySet
from django.utils import timezone
from psycopg_pool import ConnectionPool

from memories import confidence, explain, recency, rerank, sequence, sql, timewords, vectors, words
from memories.dense import COSINE_SCALES as COSINE_SCALES
from memories.dense import Candidate as Candidate
from memories.dense import CosineScale as CosineScale
from memories.dense import NearestQuery as NearestQuery
from memories.dense import RowId as RowId
from memories.dense import cosine_scale as cosine_scale
from memories.embeddings import EmbeddingBackend
from memories.models import Memory
from mmw import replicas
from mmw.db import aside

logger = logging.getLogger(__name__)

RRF_K = 60
# The fusion's weights and spread floor (``fuse``); chosen by `bench/run.py --sweep`, see
# docs/search.md ("How the constants were chosen").
KEYWORD_WEIGHT = 1.0
DENSE_WEIGHT = 1.0
TIE_BREAK = 10.0
SPREAD_FLOOR = 0.25
# How much the rankings of a query's time window (``hybrid_ranking``) weigh, each, beside the two
# rankers of the whole scope (1.0 each): a soft preference for what happened when the question says.
TIME_WEIGHT = 0.5
# How ``diversified`` orders sources: by the reciprocal ranks ``1 / (SOURCE_RANK_K + place + 1)``
# of their best ``SOURCE_ROWS`` rows, the best at 1 and the others at ``SOURCE_SUPPORT`` each
# (``source_strength``; 0: by the best row alone). Chosen with bench/lme_retrieval.py on the 93
# LongMemEval-S dev questions with evidence (docs/search.md).
SOURCE_RANK_K = 20
SOURCE_SUPPORT = 0.75
SOURCE_ROWS = 5
# How much a favoured row (``Favour``: in a session, a turn said by the person) gains in the fused
# score, in z-score units (a ranker's best candidate is typically 2-4 above its mean). Chosen with
# bench/lme_retrieval.py on the 93 LongMemEval-S dev questions with evidence (docs/sessions.md,
# "The person's own words").
FAVOUR_BONUS = 1.0
# The source of the best row of all keeps its place first (True), whatever the others' strength.
KEEP_BEST_FIRST = True
# How far (in fused-score units) a further row of a source already shown must be above the best
# row of every source not shown yet to come before them (``diversified``): a soft spread, so an
# answer that is one turn of the best session is not pushed below every other session's best.
# None: never (every source's best row before any source's second). 0.5: chosen on LoCoMo as
# sessions and LongMemEval-S together (docs/search.md, "Spreading results over sources").
SPREAD_MARGIN: float | None = 0.5
# How many candidates each ranker contributes before fusion (at least this many, or 4x the limit).
MIN_CANDIDATES = 50
# The most records the keyword ranker scores per query (see ``matching_terms``).
KEYWORD_SCORED_ROWS = 1000
# A prefix term is spelled out as the words it covers (``term_stats``) when they are at most this
# many; past that (``comp:*`` in a large project) the prefix's own index scan is kept.
MAX_SPELLED = 64
# How a keyword hit's relevance weighs the query's IDF it matched against its share of the
# query's terms (``coverage``).
KEYWORD_IDF_SHARE = 0.5
# Query embeddings run here, beside the request's keyword query (threads start on first use, so
# a forking Celery worker never inherits one).
_EMBEDDER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mmw-embed")


K = TypeVar("K")


@dataclass(frozen=True)
class Hit:
    """A loaded record, its place-giving fused score, its absolute relevance (0..1, what the
    default floor reads) and its shown score (``Candidate.confidence``)."""

    memory: Memory
    score: float
    relevance: float
    confidence: float = 0.0


@dataclass(frozen=True)
class Floor:
    """Which candidates a search returns: none unless the query is answered, then those whose
    absolute ``relevance`` reaches ``keep_from``. Answered: the best relevance reaches
    ``answer_from``; for a ``joint`` floor, the rankers' best *evidence* summed does (a keyword
    match and a vector match that are each weak, together, are not chance). ``keep_from`` is at
    most ``answer_from``: a record found only by a weaker signal beside a strong hit stays."""

    answer_from: float
    keep_from: float
    joint: bool = False
    # A caller's ``min_score``: the results, best first, while their shown score (``confidence``)
    # is at least ``keep_from`` — a cut of the ranked list, since shown scores only go down.
    on_score: bool = False

    @classmethod
    def strict(cls, min_score: float) -> Floor:
        """A caller's ``min_score``: every result's shown score at least that."""
        return cls(min_score, min_score, on_score=True)

    def keep(self, relevance: Mapping[K, float], evidence: float | None = None) -> list[K]:
        """The ids of ``relevance`` (id -> relevance) this floor keeps; ``evidence`` is the
        rankers' best evidence summed (``fuse``), which a ``joint`` floor answers on."""
        if not relevance:
            return []
        sure = evidence if self.joint and evidence is not None else max(relevance.values())
        if sure < self.answer_from:
            return []
        return [rid for rid, value in relevance.items() if value >= self.keep_from]


NO_FLOOR = Floor(0.0, 0.0)
# The floor ``search`` and ``recall_context`` apply unless the caller passes ``min_score``: they
# answer only when the best keyword coverage plus the best vector evidence (a cosine less
# ``BACKGROUND_WEIGHT`` of the record's background) reaches 0.34, and then return what reaches
# relevance 0.25. Calibrated with `bench.floor` (docs/search.md, "The relevance floor").
DEFAULT_FLOOR = Floor(0.34, 0.25, joint=True)
# How much of a record's cosine with its workspace's background (``VectorSum``) a vector match's
# evidence discounts (``Candidate.evidence``), for USE. Calibrated with the floor.
BACKGROUND_WEIGHT = 0.15
# The models whose background is discounted, with the floor calibrated for them. Any other model
# is not discounted (evidence = relevance): a cosine offset means nothing across models — e5's
# vectors share a common direction, so its records' backgrounds sit near 0.9 and USE's weight
# would cost every e5 match 0.67 of evidence (``background_weight``).
BACKGROUND_CALIBRATED = frozenset({"use-multilingual-v3@512"})


def background_weight(model_id: str) -> float:
    """How much of a record's background a ``model_id`` vector match's evidence discounts:
    ``BACKGROUND_WEIGHT`` for a model in ``BACKGROUND_CALIBRATED``, else 0."""
    return BACKGROUND_WEIGHT if model_id in BACKGROUND_CALIBRATED else 0.0


@dataclass(frozen=True)
class Ranking:
    """One ranker's candidates, best first, with its weight in the fusion; ``counts``: its best
    evidence counts towards the joint floor (the rankings of a time window only re-weigh)."""

    candidates: list[Candidate]
    weight: float
    name: str = "ranking"
    counts: bool = True


@dataclass(frozen=True)
class Favour:
    """The rows a ranking favours: those whose ``column`` holds one of ``values`` (lower case;
    compared case-insensitively) gain ``FAVOUR_BONUS`` in the fused score (a preference, never a
    filter)."""

    column: str
    values: frozenset[str]

    def holds(self, value: str | None) -> bool:
        return value is not None and value.lower() in self.values


# The document frequencies of a query's terms in the corpus a ranking draws on.
StatsOf = Callable[[list[str]], "TermStats"]

# The recency window (``memories.recency``) for the newest ``wanted`` of ``matches`` records of a
# ``corpus``: its bucket lexemes, or none. Only a table with a ``recency_document`` has one.
WindowOf = Callable[[int, int, int], Sequence[str]]


# What the rankers draw on: a queryset, or its scope already compiled (``sql.Scope``).
Rows = QuerySet[Any] | sql.Scope


def _scope(candidates: Rows) -> sql.Scope | None:
    return candidates if isinstance(candidates, sql.Scope) else sql.Scope.of(candidates)


def hybrid_hits(
    candidates: Rows,
    query: str,
    limit: int,
    project_id: uuid.UUID,
    *,
    floor: Floor = NO_FLOOR,
    time_window: timewords.TimeWindow | None = None,
    diversify: bool = False,
    trace: explain.Trace | None = None,
    stats_of: StatsOf | None = None,
    reranked: rerank.Request | None = None,
) -> list[Hit]:
    """The best ``limit`` records of ``candidates`` (records of project ``project_id``) for
    ``query``, by meaning and by keywords, best first, loaded as ``present`` reads them
    (``sql.presented``); only what passes ``floor``. ``time_window``, ``diversify`` (over
    ``source_id``) and ``trace``: see ``hybrid_ranking``. ``stats_of``: the project's term
    statistics as the caller reads them (default: ``project_stats``, read once for this search).
    ``reranked``: the first ``rerank.DEPTH`` kept are reordered by the cross-encoder reading their
    ``content`` (``memories.rerank``); what became of it is recorded in the request."""
    scope = _scope(candidates)
    if scope is None:
        return []
    winners = hybrid_ranking(
        scope,
        query,
        limit,
        stats_of or project_stats(project_id),
        context_weight=sequence.CONTEXT_WEIGHT,
        floor=floor,
        window_of=project_window(project_id),
        time_window=time_window,
        source_column="source_id" if diversify else None,
        trace=trace,
        reranked=reranked,
    )
    loaded: dict[Any, Memory] = sql.presented(scope, [c.id for c in winners])
    return [Hit(loaded[c.id], c.score, c.relevance, c.confidence) for c in winners if c.id in loaded]


def hybrid_ranking(
    candidates: Rows,
    query: str,
    limit: int,
    stats_of: StatsOf,
    *,
    context_weight: float = 0.0,
    floor: Floor = NO_FLOOR,
    window_of: WindowOf | None = None,
    time_window: timewords.TimeWindow | None = None,
    source_column: str | None = None,
    favour: Favour | None = None,
    trace: explain.Trace | None = None,
    reranked: rerank.Request | None = None,
) -> list[Candidate]:
    """The fused ranking of ``candidates`` (any table of the shape above) for ``query``: keyword
    hits weighted by ``stats_of``'s IDF (with ``context_weight``, also matches in a row's
    ``context_document``, see ``keyword_ranking``; ``window_of`` for a table with recency
    buckets) and nearest vectors, best ``limit`` first, leaving out what ``floor`` leaves out.

    ``time_window`` (the time the query is about, ``memories.timewords``): the same two rankers
    also rank the rows whose ``occurred_at`` falls in it, and the fusion counts those rankings at
    ``TIME_WEIGHT`` each — a soft preference: rows outside the window are ranked down, not out.
    ``source_column``: the results are spread over its values (``diversified``). ``favour``: the
    rows it names gain ``FAVOUR_BONUS``. ``trace``: what ranked, for ``explain``. ``reranked``: the
    first ``rerank.DEPTH`` kept are reordered by the cross-encoder on their ``content`` column."""
    scope = _scope(candidates)
    if scope is None:
        return []
    depth = max(MIN_CANDIDATES, 4 * limit)
    backend = vectors.current()
    planned = NearestQuery.of(scope, backend.model_id, backend.dim, depth)
    # The model embeds the query (CPU) while PostgreSQL ranks the keywords; with a free pooled
    # connection the dense ranker runs on it too, beside the keyword ranker (``_dense_aside``).
    job = _EMBEDDER.submit(_dense_aside, query, planned, aside.side_pool(scope.using))
    keyword = keyword_ranking(scope, query, depth, stats_of, context_weight=context_weight, window_of=window_of)
    embedded, found = job.result()
    if found is None:  # not ranked aside: here, with the statement already built when it fits
        found = _nearest_here(scope, embedded, planned, depth)
    dense = _scaled(embedded, found)
    rankings = [Ranking(keyword, KEYWORD_WEIGHT, "keyword"), Ranking(dense, DENSE_WEIGHT, "vector")]
    if time_window is not None:
        rankings += _in_window(scope, query, depth, stats_of, context_weight, embedded, time_window)
    sources, favoured = _row_facts(scope, rankings, source_column, favour)
    if trace is not None:
        trace.notes["terms"] = words.keyword_terms(query)
    reorder = _reorder(scope, query, reranked) if reranked is not None else None
    return fuse(rankings, limit, floor, sources=sources, favoured=favoured, trace=trace, reorder=reorder)


Reorder = Callable[[list[tuple[RowId, float]]], Mapping[RowId, rerank.Reordered]]


def _reorder(scope: sql.Scope, query: str, request: rerank.Request) -> Reorder:
    """The cross-encoder's bonuses for the first kept candidates, their texts read in one statement."""

    def bonuses(top: list[tuple[RowId, float]]) -> Mapping[RowId, rerank.Reordered]:
        texts = sql.row_values(scope, [rid for rid, _ in top], ["content"], chars=rerank.MAX_CHARS)
        return request.reorder(query, [(rid, fused, (texts.get(rid) or (None,))[0] or "") for rid, fused in top])

    return bonuses


def _row_facts(
    scope: sql.Scope, rankings: list[Ranking], source_column: str | None, favour: Favour | None
) -> tuple[dict[RowId, str] | None, frozenset[RowId]]:
    """Of the candidates of ``rankings``, in one statement: each one's source (its
    ``source_column``, None when not asked; a null source is left out) and those ``favour`` names."""
    columns = [c for c in (source_column, favour.column if favour else None) if c is not None]
    if not columns:
        return None, frozenset()
    ids = list(dict.fromkeys(c.id for r in rankings for c in r.candidates))
    values = sql.row_values(scope, ids, columns)
    sources = None
    if source_column is not None:
        sources = {rid: row[0] for rid, row in values.items() if row[0] is not None}
    favoured = frozenset(rid for rid, row in values.items() if favour and favour.holds(row[-1]))
    return sources, favoured


def probe(scope: sql.Scope, query: str, stats_of: StatsOf, floor: Floor, depth: int, *,
          context_weight: float = 0.0) -> list[Candidate]:  # fmt: skip
    """A small ranking of ``scope`` for ``query`` — each ranker's best ``depth`` only, fused and
    floored as ``hybrid_ranking`` fuses them — for a question asked beside a search (where else
    does it have results?). The query's vector comes from ``vectors.embed_query``'s memo."""
    backend = vectors.current()
    planned = NearestQuery.of(scope, backend.model_id, backend.dim, depth)
    job = _EMBEDDER.submit(_dense_aside, query, planned, aside.side_pool(scope.using))  # beside the keywords
    keyword = keyword_ranking(scope, query, depth, stats_of, context_weight=context_weight)
    embedded, found = job.result()
    if found is None:
        found = _nearest_here(scope, embedded, planned, depth)
    dense = _scaled(embedded, found)
    return fuse([Ranking(keyword, KEYWORD_WEIGHT, "keyword"), Ranking(dense, DENSE_WEIGHT, "vector")], depth, floor)


def _in_window(
    scope: sql.Scope,
    query: str,
    depth: int,
    stats_of: StatsOf,
    context_weight: float,
    embedded: Embedded,
    window: timewords.TimeWindow,
) -> list[Ranking]:
    """Both rankers over the rows of ``scope`` whose ``occurred_at`` is in ``window`` (weighted
    ``TIME_WEIGHT``, not counted by the floor)."""
    column = scope.column("occurred_at")
    inside = scope.narrowed(f"{column} >= %s AND {column} < %s", [window.start, window.end])
    keyword = keyword_ranking(inside, query, depth, stats_of, context_weight=context_weight)
    dense = _scaled(embedded, _nearest_here(inside, embedded, None, depth))
    return [
        Ranking(keyword, TIME_WEIGHT * KEYWORD_WEIGHT, "keyword in the time window", counts=False),
        Ranking(dense, TIME_WEIGHT * DENSE_WEIGHT, "vector in the time window", counts=False),
    ]


Embedded = tuple[list[float], EmbeddingBackend] | None


def _dense_aside(
    query: str, planned: NearestQuery | None, pool: ConnectionPool[Any] | None
) -> tuple[Embedded, list[Candidate] | None]:
    """In the embedding thread: the query's embedding and, when ``pool`` lends a connection at
    once and the statement was planned for this model, the dense ranker's candidates found on
    that connection (else None: the request's thread runs the statement itself)."""
    embedded = vectors.embed_query(query)
    if embedded is None or planned is None or pool is None:
        return embedded, None
    vector, backend = embedded
    if not planned.fits(vector, backend.model_id):
        return embedded, None
    try:
        with aside.borrowed(pool) as conn:
            if conn is None:
                return embedded, None
            with conn.cursor() as cursor:
                found = planned.run(cursor, vector)
        logger.debug("the dense ranker ran on a side connection")
        return embedded, found
    except psycopg.Error:
        logger.warning("the dense ranker failed on a side connection; running it on the request's", exc_info=True)
        return embedded, None


def fuse(
    rankings: list[Ranking],
    limit: int,
    floor: Floor = NO_FLOOR,
    *,
    sources: Mapping[RowId, str] | None = None,
    favoured: frozenset[RowId] = frozenset(),
    trace: explain.Trace | None = None,
    reorder: Reorder | None = None,
) -> list[Candidate]:
    """Score-aware fusion: each ranker's scores are z-normalised over its own candidates and
    summed with its weight (a record a ranker did not return gets that ranker's lowest z); a
    small reciprocal-rank term breaks ties, and among equal scores the newer record wins. The
    spread of a z-score is at least ``SPREAD_FLOOR`` of the mean score, so two nearly equal
    scores (a ranker with two candidates) stay nearly equal instead of becoming z = +1 and -1.
    At most ``limit`` candidates, best first, scored 0..1. (Why not plain RRF: docs/search.md.)

    A candidate's ``relevance`` is the highest any ranker gave it; ``floor`` decides which
    candidates are left out, before the ``limit`` is taken (so it never empties a page that has
    relevant rows further down), a joint floor on the best ``evidence`` of each ranking that
    ``counts`` summed. Its ``confidence`` is the score shown for it (``memories.confidence``): from
    its keyword coverage, its vector evidence and its place, at most the confidence of the
    candidate before it; a caller's ``min_score`` (``Floor.on_score``) cuts the ranked list where
    it falls below. ``sources`` (row id → its source): the order is spread over sources
    (``diversified``). ``favoured``: these rows gain ``FAVOUR_BONUS`` (``Favour``). ``reorder``:
    the first ``rerank.DEPTH`` of the kept, ordered, gain the bonuses it gives (``memories.rerank``)
    and are ordered again among themselves, before the ``limit``. ``trace``: every number above is
    recorded for ``explain``.
    """
    scores: dict[RowId, float] = {}
    created: dict[RowId, dt.datetime] = {}
    relevance: dict[RowId, float] = {}
    coverage: dict[RowId, float] = {}
    units: dict[RowId, float] = {}
    evidence = 0.0
    for ranking in rankings:
        for c in ranking.candidates:
            created.setdefault(c.id, c.created_at)
            relevance[c.id] = max(relevance.get(c.id, 0.0), c.relevance)
            if c.evidence_units is None:
                coverage[c.id] = max(coverage.get(c.id, 0.0), c.relevance)
            else:
                units[c.id] = max(units.get(c.id, c.evidence_units), c.evidence_units)
        if ranking.counts:
            evidence += max(
                (c.relevance if c.evidence is None else c.evidence for c in ranking.candidates), default=0.0
            )
    for ranking in rankings:
        _add_ranking(ranking, created, scores, trace)
    for rid in created.keys() & favoured:
        scores[rid] += FAVOUR_BONUS
        if trace is not None:
            trace.entry(rid)["favoured"] = FAVOUR_BONUS

    def shown(ordered: list[RowId]) -> list[float]:
        likely = [confidence.probability(coverage.get(r, 0.0), units.get(r), i) for i, r in enumerate(ordered)]
        return confidence.descending(likely)

    def best_first(ids: Sequence[RowId]) -> list[RowId]:
        ordered = sorted(ids, key=lambda rid: (-scores[rid], -created[rid].timestamp()))
        return diversified(ordered, sources, scores) if sources is not None else ordered

    def reranked(ordered: list[RowId]) -> list[RowId]:
        """``ordered`` with its first ``rerank.DEPTH`` reordered by ``reorder``'s bonuses; as it
        is when ``reorder`` gave none (not asked, not English, busy…)."""
        if reorder is None:
            return ordered
        head = ordered[: rerank.DEPTH]
        parts = reorder([(rid, scores[rid]) for rid in head])
        if not parts:
            return ordered
        for rid, part in parts.items():
            scores[rid] += part.bonus
            if trace is not None:
                trace.entry(rid)["rerank"] = part.shown()
        return best_first(head) + ordered[len(head) :]

    # The shown scores are those of the fusion's places, place by place: a rerank moves records,
    # not the calibration (``confidence`` is fitted on the fusion's order), and ``min_score`` cuts
    # the fusion's order before the rerank.
    if floor.on_score:
        fused_order = best_first(list(created))
        pairs = [(rid, v) for rid, v in zip(fused_order, shown(fused_order), strict=True) if v >= floor.keep_from]
        kept = {r for r, _ in pairs}
        ordered, scored = reranked([r for r, _ in pairs])[:limit], [v for _, v in pairs][:limit]
    else:
        kept = set(floor.keep(relevance, evidence))
        fused_order = best_first(list(kept))
        ordered, scored = reranked(fused_order)[:limit], shown(fused_order[:limit])
    if trace is not None:
        _trace_outcome(trace, floor, evidence, created, kept, ordered, scores, relevance, coverage, units)
    return [
        Candidate(rid, _squash(scores[rid]), created[rid], relevance[rid], confidence=score)
        for rid, score in zip(ordered, scored, strict=True)
    ]


def _add_ranking(
    ranking: Ranking, created: Mapping[RowId, Any], scores: dict[RowId, float], trace: explain.Trace | None
) -> None:
    """Add ``ranking``'s weighted z-scores (and tie-breaks) to every candidate's fused score."""
    if not ranking.candidates:
        return
    z = _z_scores([c.score for c in ranking.candidates])
    lowest = min(z)
    seen = {c.id: (rank, zi, c.score) for rank, (c, zi) in enumerate(zip(ranking.candidates, z, strict=True))}
    if trace is not None:
        trace.rankings.append(ranking.name)
    for rid in created:
        rank, zi, raw = seen.get(rid, (None, lowest, 0.0))
        tie_break = TIE_BREAK / (RRF_K + rank + 1) if rank is not None else 0.0
        scores[rid] = scores.get(rid, 0.0) + ranking.weight * (zi + tie_break)
        if trace is None:
            continue
        if rank is None:
            trace.absent(ranking.name, rid, z=zi, weight=ranking.weight)
        else:
            trace.ranked(ranking.name, rid, rank=rank, score=raw, z=zi, tie_break=tie_break, weight=ranking.weight)


def diversified(
    ordered: Sequence[RowId], sources: Mapping[RowId, str], scores: Mapping[RowId, float] | None = None
) -> list[RowId]:
    """``ordered`` spread over sources: each source's best row, then each source's second best,
    and so on (a row without a known source is its own source). Within a round the sources go by
    ``source_strength``: a source whose best row is a little lower but which has more good rows
    can come first (an answer spread over a session's turns is more likely in that session).

    With ``scores`` (the fused scores) and a ``SPREAD_MARGIN``, the spreading is soft: a further
    row of a source already shown comes before the sources not shown yet when its score beats the
    best row of each of them by the margin (the order in which sources first appear is the same)."""
    places: dict[str, list[int]] = {}
    placed: list[tuple[int, str, int, RowId]] = []
    for position, rid in enumerate(ordered):
        source = sources.get(rid, f"row:{rid}")
        held = places.setdefault(source, [])
        placed.append((len(held), source, position, rid))
        held.append(position)
    strength = {source: source_strength(held) for source, held in places.items()}
    if placed and KEEP_BEST_FIRST:
        strength[placed[0][1]] = math.inf  # the best row of all stays first
    spread = [rid for _, _, _, rid in sorted(placed, key=lambda p: (p[0], -strength[p[1]], p[2]))]
    if scores is None or SPREAD_MARGIN is None:
        return spread
    firsts = spread[: len(places)]  # each source's best row, in the spread order
    is_first = set(firsts)
    unseen = collections.deque(rid for rid in ordered if rid in is_first)  # the same rows, fused order
    further = collections.deque(rid for rid in ordered if rid not in is_first)  # the others, best first
    source_of = {rid: source for _, source, _, rid in placed}
    out: list[RowId] = []
    shown: set[str] = set()
    for first in firsts:
        while unseen and source_of[unseen[0]] in shown:
            unseen.popleft()
        best_unseen = scores[unseen[0]] if unseen else -math.inf
        while further and source_of[further[0]] in shown and scores[further[0]] >= best_unseen + SPREAD_MARGIN:
            out.append(further.popleft())
        out.append(first)
        shown.add(source_of[first])
    rest = set(further)
    return out + [rid for rid in spread[len(places) :] if rid in rest]


def source_strength(places: Sequence[int]) -> float:
    """How strongly a source's rows, at these 0-based ``places`` of the fused order (best first),
    say it holds the answer: reciprocal ranks ``1 / (SOURCE_RANK_K + place + 1)``, its best row's
    at 1, its next ``SOURCE_ROWS - 1`` at ``SOURCE_SUPPORT`` each (docs/search.md)."""
    return sum(
        (1.0 if i == 0 else SOURCE_SUPPORT) / (SOURCE_RANK_K + place + 1)
        for i, place in enumerate(places[:SOURCE_ROWS])
    )


def _trace_outcome(
    trace: explain.Trace,
    floor: Floor,
    evidence: float,
    created: Mapping[RowId, Any],
    kept: set[RowId],
    ordered: list[RowId],
    scores: Mapping[RowId, float],
    relevance: Mapping[RowId, float],
    coverage: Mapping[RowId, float],
    units: Mapping[RowId, float],
) -> None:
    """The floor's decision, the cut candidates and each ranked row's signals, into ``trace``."""
    answered = bool(kept) or not created
    trace.floor = {
        "rule": "min_score" if floor.on_score else ("joint" if floor.joint else "single"),
        "answer_from": floor.answer_from,
        "keep_from": floor.keep_from,
        "evidence": round(evidence, 6),
        "answered": answered,
    }
    shown_at = {rid: i for i, rid in enumerate(ordered)}
    for rid in sorted(created, key=lambda r: -scores[r]):
        if rid in shown_at:
            continue
        if rid in kept:
            reason = "beyond the limit"
        elif floor.on_score:
            reason = f"score below min_score {floor.keep_from}"
        elif not answered:
            reason = f"query not answered: evidence {evidence:.3f} < {floor.answer_from}"
        else:
            reason = f"relevance {relevance[rid]:.3f} < {floor.keep_from}"
        trace.cut_one(rid, reason, relevance[rid])
    for rid in ordered:
        row = trace.entry(rid)
        row.update(
            fused=round(scores[rid], 6),
            place=shown_at[rid] + 1,
            relevance=round(relevance[rid], 6),
            coverage=round(coverage.get(rid, 0.0), 6),
            evidence_units=None if rid not in units else round(units[rid], 6),
        )


def _z_scores(values: list[float]) -> list[float]:
    mean = sum(values) / len(values)
    spread = max((sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5, SPREAD_FLOOR * abs(mean))
    return [(v - mean) / spread if spread > 1e-9 else 0.0 for v in values]


def _squash(value: float) -> float:
    """A monotone map of a fused score onto 0..1 for display."""
    return 1.0 / (1.0 + math.exp(-value))


@dataclass(frozen=True)
class TermStats:
    """A project's corpus size and each query term's document frequency (``TermStat``)."""

    corpus: int
    frequencies: list[int]
    # Per term, the words it stands for in the project (``term_stats``), or None: not spelled.
    spelled: list[tuple[str, ...] | None] | None = None

    def term(self, i: int, term: str) -> sql.Term:
        """Term ``i`` (``term``) as the keyword statement asks for it: spelled out when known."""
        words = self.spelled[i] if self.spelled else None
        return sql.Spelled(term, words) if words else term

    def weights(self) -> list[float]:
        """Each term's inverse document frequency, Okapi's non-negative form
        ln(1 + (N - df + 0.5) / (df + 0.5)): a name in every other record weighs little, a rare
        identifier a lot. With no statistics yet (N = 0) every term weighs 1."""
        n = float(self.corpus)
        if n <= 0:
            return [1.0] * len(self.frequencies)
        return [math.log(1.0 + (n - min(df, n) + 0.5) / (min(df, n) + 0.5)) for df in self.frequencies]


def project_stats(project_id: uuid.UUID) -> StatsOf:
    """Project ``project_id``'s term statistics (``term_stats``) for one search: each list of terms
    read once. A search asks the same words up to three times — its ranking, its time window's
    ranking and the look at the other workspaces (``selectors.elsewhere``) — one statement each
    before (~5 ms p50 each on LongMemEval-S, issue #37); a new search reads them again."""
    read: dict[tuple[str, ...], TermStats] = {}

    def stats_of(terms: list[str]) -> TermStats:
        key = tuple(terms)
        if key not in read:
            read[key] = term_stats(project_id, terms)
        return read[key]

    return stats_of


def term_stats(project_id: uuid.UUID, terms: list[str]) -> TermStats:
    """The corpus size and document frequencies of ``terms`` in the project (one query on the
    trigger-kept ``TermStat`` rows; a prefix term's df sums its lexemes', a term of alternatives
    (``(kids:* | kid)``) sums its alternatives', capped at N), and each term spelled out.

    Spelled: a term whose alternatives are all prefixes, as every word they cover in any live
    record of the project (shared words, and the ``'!'`` rows of unshared records' words and of
    context documents: migration 0013), when there are 1 to ``MAX_SPELLED`` of them. The same
    rows match as with the prefix, found as ordinary index entries (docs/search.md), except a
    record committed between this statement and the keyword statement with a word new to the
    project: it is missed by this search as by one that ran a moment earlier."""
    with connections[replicas.current()].cursor() as cursor:
        cursor.execute(
            r"""
            WITH q AS (
                SELECT i, mmw_unaccent(rtrim(a, ':*')) AS t, a LIKE '%%:*' AS prefix
                FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i),
                     regexp_split_to_table(trim(BOTH '()' FROM u.t), ' \| ') AS a
            ), spelled AS (
                SELECT q.i, w.word FROM q CROSS JOIN LATERAL (
                    SELECT DISTINCT CASE WHEN s.term LIKE '!%%' THEN substr(s.term, 2) ELSE s.term END AS word
                    FROM memories_termstat s
                    WHERE q.prefix AND s.project_id = %s AND s.docs > 0 AND (
                        (s.term >= q.t AND s.term < q.t || chr(1114111))
                        OR (s.term >= '!' || q.t AND s.term < '!' || q.t || chr(1114111)))
                    LIMIT %s  -- distinct words: a word often has a shared row and a '!' row
                ) AS w
            )
            SELECT 0, (SELECT docs FROM memories_termstat WHERE project_id = %s AND term = ''), NULL::text[]
            UNION ALL
            SELECT i, sum(CASE WHEN prefix
                THEN (SELECT sum(docs) FROM memories_termstat
                      WHERE project_id = %s AND term >= q.t AND term < q.t || chr(1114111))
                ELSE (SELECT docs FROM memories_termstat WHERE project_id = %s AND term = q.t)
            END), CASE WHEN bool_and(prefix)
                THEN (SELECT array_agg(DISTINCT word ORDER BY word) FROM spelled WHERE spelled.i = q.i)
            END FROM q GROUP BY i
            """,
            [terms, project_id, MAX_SPELLED + 1, project_id, project_id, project_id],
        )
        rows = {int(i): (int(df or 0), words) for i, df, words in cursor.fetchall()}
    corpus = rows.pop(0, (0, None))[0]
    found = [rows.get(i, (0, None)) for i in range(1, len(terms) + 1)]
    return TermStats(corpus, [min(df, corpus) for df, _ in found], [_spelling(words) for _, words in found])


def _spelling(words: list[str] | None) -> tuple[str, ...] | None:
    """The words a term is spelled as, or None: not all prefixes, no word, or too many words."""
    return tuple(words) if words and len(words) <= MAX_SPELLED else None


def matching_terms(terms: list[str], stats: TermStats) -> list[str]:
    """The terms a record must contain one of to be scored: the rarest first while their
    summed document frequencies stay within ``KEYWORD_SCORED_ROWS`` (all of them in most
    projects). Words in thousands of records add little IDF but cost a scored row each, so at
    100k records a query's common words only add to the score of records a rarer word found."""
    chosen: list[str] = []
    budget = 0
    for df, term in sorted(zip(stats.frequencies, terms, strict=True)):
        if chosen and budget + df > KEYWORD_SCORED_ROWS:
            break
        chosen.append(term)
        budget += df
    return chosen


def keyword_hits(
    candidates: Rows, query: str, limit: int, project_id: uuid.UUID, *, context_weight: float = 0.0
) -> list[Candidate]:
    """Full-text hits among ``candidates`` (records of project ``project_id``), best first, with
    the project's ``TermStat`` IDF (see ``keyword_ranking``). ``search`` ranks records with
    ``context_weight=sequence.CONTEXT_WEIGHT``; the archivist without context (0)."""
    return keyword_ranking(
        candidates,
        query,
        limit,
        lambda terms: term_stats(project_id, terms),
        context_weight=context_weight,
        window_of=project_window(project_id),
    )


def project_window(project_id: uuid.UUID) -> WindowOf:
    """The recency window over project ``project_id``'s records (``recency.window``, sized from
    its ``TermStat`` bucket counts, as of now)."""

    def window_of(wanted: int, matches: int, corpus: int) -> Sequence[str]:
        needed = recency.needed(wanted, matches, corpus)
        return recency.window(timezone.now(), needed, corpus, lambda lexemes: bucket_counts(project_id, lexemes))

    return window_of


def bucket_counts(project_id: uuid.UUID, lexemes: Sequence[str]) -> dict[str, int]:
    """Project ``project_id``'s live shared records per recency bucket lexeme of ``lexemes``
    (``TermStat``; a bucket without any is left out)."""
    with connections[replicas.current()].cursor() as cursor:
        cursor.execute(
            "SELECT term, docs FROM memories_termstat WHERE project_id = %s AND term = ANY(%s::text[])",
            [project_id, list(lexemes)],
        )
        return {term: int(docs) for term, docs in cursor.fetchall()}


def term_stats_among(candidates: QuerySet[Any], terms: list[str]) -> TermStats:
    """The corpus size and document frequencies of ``terms`` among ``candidates`` themselves (one
    aggregate over them): for a corpus without trigger-kept statistics (session turns), counted
    only over rows the caller may read, so the weights reveal nothing else."""
    inner, inner_params = candidates.order_by().values("search_document").query.sql_with_params()
    tsq = "to_tsquery('simple'::regconfig, mmw_unaccent(%s))"
    counts = ", ".join(f"count(*) FILTER (WHERE d @@ {tsq})" for _ in terms)
    # Each document read into memory once (``memories.sql.IN_MEMORY``), not once per term.
    once = f"SELECT {sql.IN_MEMORY.format('d')} FROM ({inner}) AS b(d) OFFSET 0"  # noqa: S608 - only placeholders
    statement = f"SELECT count(*){', ' if terms else ''}{counts} FROM ({once}) AS c(d)"  # noqa: S608
    with connections[candidates.db].cursor() as cursor:
        cursor.execute(statement, [*terms, *inner_params])  # the counts come before the FROM
        row = cursor.fetchone()
    assert row is not None  # an aggregate always answers one row
    return TermStats(int(row[0]), [int(v) for v in row[1:]])


def keyword_ranking(
    candidates: Rows,
    query: str,
    limit: int,
    stats_of: StatsOf,
    *,
    context_weight: float = 0.0,
    window_of: WindowOf | None = None,
) -> list[Candidate]:
    """Full-text hits among ``candidates``, best first.

    A record scores the sum of the IDF weights (``TermStats.weights``) of the query terms it
    contains, divided by sqrt(1 + ln(1 + its distinct words)) so a long record does not win by
    size alone (no term frequency; why not BM25: docs/search.md). Records are found by
    ``matching_terms``; when even the rarest term is in more than ``KEYWORD_SCORED_ROWS``
    records, only its newest ``KEYWORD_SCORED_ROWS`` matches are scored (bounded work; among
    records that share only common words, newer ones are the better guess).

    With ``context_weight`` > 0 the rows also carry a ``context_document`` (a session turn's
    previous turn, docs/sessions.md): a term found only there counts ``context_weight`` of its
    IDF, and such rows are candidates too ("contextual indexing").

    A hit's ``relevance`` is its ``coverage`` of the query: the share of the query's IDF and of
    its terms that it contains (a record holding the query's only rare word covers most of it;
    one sharing a common word with a query about something else covers little).

    ``window_of`` (a table with ``recency_document``): the newest matches are looked for in a
    recency window first (``memories.recency``): less work, the same answer."""
    scope = _scope(candidates)
    if scope is None:
        return []
    asked = keyword_query(query, stats_of, context_weight, window_of)
    if asked is None:
        return []
    total_idf, total_count = sum(asked.weights), float(len(asked.terms))
    return [
        Candidate(rid, rank, created, coverage(idf / total_idf, count / total_count))
        for rid, rank, created, idf, count in sql.keyword_ranked(scope, asked, limit)
    ]


def keyword_query(
    query: str, stats_of: StatsOf, context_weight: float = 0.0, window_of: WindowOf | None = None
) -> sql.KeywordQuery | None:
    """What the keyword ranker asks for ``query`` (None: no searchable word): its terms weighted
    by ``stats_of``'s IDF, the ``matching_terms`` a record must contain, and the newest-matches
    cut when even the rarest of those is in more than ``KEYWORD_SCORED_ROWS`` records (with
    ``window_of``'s recency window to look in first, if it gives one)."""
    terms = words.keyword_terms(query)
    if not terms:
        return None
    stats = stats_of(terms)
    match = matching_terms(terms, stats)
    frequency = dict(zip(terms, stats.frequencies, strict=True))
    matches = sum(frequency[t] for t in match)
    newest = KEYWORD_SCORED_ROWS if matches > KEYWORD_SCORED_ROWS else 0
    window = window_of(newest, matches, stats.corpus) if newest and window_of is not None else ()
    asked = {t: stats.term(i, t) for i, t in enumerate(terms)}
    return sql.KeywordQuery(
        [asked[t] for t in terms], stats.weights(), [asked[t] for t in match], context_weight, newest, tuple(window)
    )


def coverage(idf_share: float, term_share: float) -> float:
    """A keyword hit's absolute relevance (0..1) from the share of the query's IDF it matched and
    the share of its terms: ``KEYWORD_IDF_SHARE`` of the first, the rest of the second. IDF alone
    would call a record sharing a project-wide word (every record says "deploy") irrelevant to
    "deploy the release"; term counts alone would let one common word carry half of a two-word query."""
    share = KEYWORD_IDF_SHARE * idf_share + (1.0 - KEYWORD_IDF_SHARE) * term_share
    return min(1.0, max(0.0, share))


def _nearest_here(scope: sql.Scope, embedded: Embedded, planned: NearestQuery | None, limit: int) -> list[Candidate]:
    """The dense ranker on the request's connection for an ``vectors.embed_query`` result (None:
    no model, no hits), running ``planned`` when it was built for this vector's model."""
    if embedded is None:
        return []
    vector, backend = embedded
    if planned is None or not planned.fits(vector, backend.model_id):
        return nearest(scope, vector, backend.model_id, limit)
    with connections[scope.using].cursor() as cursor:
        return planned.run(cursor, vector)


def _scaled(embedded: Embedded, found: list[Candidate]) -> list[Candidate]:
    """``found`` with each hit's relevance on the cosine scale of the model that embedded the
    query, and its evidence: the same scale over its cosine less the model's
    ``background_weight`` x its background (``Candidate.evidence``)."""
    if embedded is None:
        return found
    scale = cosine_scale(embedded[1].model_id)
    weight = background_weight(embedded[1].model_id)
    return [
        replace(
            c,
            relevance=scale.relevance(c.score),
            evidence=scale.relevance(c.score - weight * c.background),
            evidence_units=scale.units(c.score - weight * c.background),
        )
        for c in found
    ]


def nearest(candidates: Rows, vector: Sequence[float], model_id: str, limit: int) -> list[Candidate]:
    """Records of ``candidates`` carrying a ``model_id`` vector, nearest to ``vector`` by cosine
    distance (score = 1 - distance); see ``NearestQuery``. Shared by ``search`` and the archivist."""
    scope = _scope(candidates)
    if scope is None:  # a scope that can hold nothing (``none()``, ``id__in=[]``)
        return []
    planned = NearestQuery.of(scope, model_id, len(vector), limit)
    with connections[scope.using].cursor() as cursor:
        return planned.run(cursor, vector)
