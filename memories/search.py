"""Ranking for ``search``: keyword hits (PostgreSQL full text) and vector hits (pgvector HNSW),
fused by z-normalised scores. Filtering is the caller's queryset's job; both candidate lists are
drawn from that same filtered queryset, so a filter never loses recall to ranking.

The rankers return light ``Candidate`` rows (id, score, created_at), hundreds of them; only the
``limit`` winners of the fusion are loaded as ``Memory`` objects (without their vectors).
"""

from __future__ import annotations

import math
import re
import datetime as dt
import uuid
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import FloatField, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

from memories import embedding
from memories.models import Memory

_WORD = re.compile(r"\w+", re.UNICODE)
# Function words of the languages MMW serves; the 'simple' configuration keeps them, so they are
# dropped from queries here (OR-ing them would match nearly every record).
STOP_WORDS = frozenset(
    """
    a an and are as at be by for from has have how i in is it its of on or that the this to was
    were what when where which who why will with do does did we our you your they their и в во
    на с со по к о об от для как что это кто где когда какой какая какие ли не да или но а у из
    за же бы был была были быть есть мы наш наша вы ваш они их он она оно le la les un une des
    de du et ou en au aux à a est sont pour par sur dans que qui quoi quel quelle quels quelles
    ce cet cette ces il elle ils elles nous vous on ne pas se sa son ses leur
    """.split()  # noqa: SIM905 - a word list reads better as text
)
RRF_K = 60
# Tuned by bench/run.py --sweep on LoCoMo + the multilingual set, checked leave-one-conversation-
# out (BENCHMARKS.md): with the IDF keyword ranker, keywords at 1.0, a z-spread floor of 0.25 and
# 50 candidates per ranker gave LoCoMo R@5 .615 and cross-lingual R@5 .937 with USE; every
# held-out conversation chose keywords 1.0 and the floor 0.25 (and 40 to 100 candidates).
# (The older ts_rank_cd ranker, without IDF, needed keywords at 0.7: a lone common word outvoted
# cross-lingual matches.)
KEYWORD_WEIGHT = 1.0
DENSE_WEIGHT = 1.0
TIE_BREAK = 10.0
SPREAD_FLOOR = 0.25
# How many candidates each ranker contributes before fusion (at least this many, or 4x the limit).
MIN_CANDIDATES = 50
EF_SEARCH = 100


@dataclass(frozen=True)
class Candidate:
    """One ranker's (or the fusion's) verdict on one record: no content, no vector."""

    id: uuid.UUID
    score: float
    created_at: dt.datetime


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float


@dataclass(frozen=True)
class Ranking:
    """One ranker's candidates, best first, with its weight in the fusion."""

    candidates: list[Candidate]
    weight: float


def hybrid_hits(candidates: QuerySet[Memory], query: str, limit: int, project_id: object) -> list[Hit]:
    """The best ``limit`` records of ``candidates`` (records of project ``project_id``) for
    ``query``, by meaning and by keywords, best first, loaded without their vectors."""
    depth = max(MIN_CANDIDATES, 4 * limit)
    keyword = keyword_hits(candidates, query, depth, project_id)
    dense = dense_hits(candidates, query, depth)
    winners = fuse([Ranking(keyword, KEYWORD_WEIGHT), Ranking(dense, DENSE_WEIGHT)], limit)
    loaded = candidates.defer("embedding").in_bulk([c.id for c in winners])
    return [Hit(loaded[c.id], c.score) for c in winners if c.id in loaded]


def fuse(rankings: list[Ranking], limit: int) -> list[Candidate]:
    """Score-aware fusion: each ranker's scores are z-normalised over its own candidates and
    summed with its weight (a record a ranker did not return gets that ranker's lowest z); a
    small reciprocal-rank term breaks ties. Unlike plain RRF, a keyword ranker that merely
    shares a token with many records cannot outvote a confident vector ranker (measured in
    docs/embeddings.md: cross-lingual R@5 .41 with RRF, .87-.90 with z-scores). The spread of
    a z-score is at least ``SPREAD_FLOOR`` of the mean score, so two nearly equal scores (a
    ranker with two candidates) stay nearly equal instead of becoming z = +1 and -1.
    Scaled to 0..1.
    """
    scores: dict[uuid.UUID, float] = {}
    created: dict[uuid.UUID, dt.datetime] = {}
    for ranking in rankings:
        for c in ranking.candidates:
            created.setdefault(c.id, c.created_at)
    for ranking in rankings:
        if not ranking.candidates:
            continue
        z = _z_scores([c.score for c in ranking.candidates])
        floor = min(z)
        seen = {c.id: (rank, zi) for rank, (c, zi) in enumerate(zip(ranking.candidates, z, strict=True))}
        for rid in created:
            rank, zi = seen.get(rid, (None, floor))
            tie_break = TIE_BREAK / (RRF_K + rank + 1) if rank is not None else 0.0
            scores[rid] = scores.get(rid, 0.0) + ranking.weight * (zi + tie_break)
    ordered = sorted(scores, key=lambda rid: (-scores[rid], -created[rid].timestamp()))[:limit]
    return [Candidate(rid, _squash(scores[rid]), created[rid]) for rid in ordered]


def _z_scores(values: list[float]) -> list[float]:
    mean = sum(values) / len(values)
    spread = max((sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5, SPREAD_FLOOR * abs(mean))
    return [(v - mean) / spread if spread > 1e-9 else 0.0 for v in values]


def _squash(value: float) -> float:
    """A monotone map of a fused score onto 0..1 for display."""
    return 1.0 / (1.0 + math.exp(-value))


def keyword_terms(query: str) -> list[str]:
    """The query's searchable words as tsquery terms, in order, without repeats: stop words
    dropped, words of 4+ letters prefix-matched (``deploy:*``). Words are reduced to letters and
    digits (``_`` splits), so no tsquery syntax gets through."""
    terms: list[str] = []
    for word in dict.fromkeys(w.lower() for w in _WORD.findall(query)):
        if word in STOP_WORDS:
            continue
        for part in word.replace("_", " ").split():
            terms.append(f"{part}:*" if len(part) >= 4 else part)
    return list(dict.fromkeys(terms))


def keyword_tsquery(query: str) -> str | None:
    """An OR query over ``keyword_terms``, or None if the query has no searchable word."""
    terms = keyword_terms(query)
    return " | ".join(terms) if terms else None


def term_weights(project_id: object, terms: list[str]) -> list[float]:
    """Each term's inverse document frequency in the project (Okapi's non-negative form,
    ln(1 + (N - df + 0.5) / (df + 0.5))), from the trigger-kept ``TermStat`` rows: a name in
    every other record weighs little, a rare identifier a lot. A prefix term's df sums its
    lexemes' (capped at N). With no statistics yet (N = 0) every term weighs 1."""
    if not terms:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH q AS (
                SELECT i, mmw_unaccent(rtrim(t, ':*')) AS t, t LIKE '%%:*' AS prefix
                FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i)
            )
            SELECT 0, (SELECT docs FROM memories_termstat WHERE project_id = %s AND term = '')
            UNION ALL
            SELECT i, CASE WHEN prefix
                THEN (SELECT sum(docs) FROM memories_termstat
                      WHERE project_id = %s AND term >= q.t AND term < q.t || chr(1114111))
                ELSE (SELECT docs FROM memories_termstat WHERE project_id = %s AND term = q.t)
            END FROM q
            """,
            [terms, project_id, project_id, project_id],
        )
        rows = dict(cursor.fetchall())
    n = float(rows.pop(0) or 0)
    if n <= 0:
        return [1.0] * len(terms)
    weights = []
    for i in range(1, len(terms) + 1):
        df = min(float(rows.get(i) or 0), n)
        weights.append(math.log(1.0 + (n - df + 0.5) / (df + 0.5)))
    return weights


def keyword_hits(candidates: QuerySet[Memory], query: str, limit: int, project_id: object) -> list[Candidate]:
    """Full-text hits among ``candidates`` (records of project ``project_id``), best first.

    A record matching any query term scores the sum of the IDF weights (``term_weights``) of
    the terms it contains, divided by sqrt(1 + ln(1 + its distinct words)) so a long record
    does not win by size alone. On LoCoMo this beats BM25 by 0.07 R@5: tf saturates at 1 in
    short memories anyway, and prefix terms catch inflections BM25's exact tokens miss."""
    terms = keyword_terms(query)
    if not terms:
        return []
    weights = term_weights(project_id, terms)
    tsq = "to_tsquery('simple'::regconfig, mmw_unaccent(%s))"
    parts = " + ".join(f"(CASE WHEN search_document @@ {tsq} THEN %s ELSE 0 END)" for _ in terms)
    params: list[object] = [x for term, weight in zip(terms, weights, strict=True) for x in (term, weight)]
    score = f"({parts}) / sqrt(1.0 + ln(1.0 + length(search_document)))"
    ranked = (
        candidates.extra(where=[f"search_document @@ {tsq}"], params=[" | ".join(terms)])  # noqa: S610 - params bound
        .annotate(rank=RawSQL(score, params, output_field=FloatField()))  # noqa: S611 - params bound
        .order_by("-rank", "-created_at")
        .values_list("id", "rank", "created_at")[:limit]
    )
    return [Candidate(rid, float(rank), created) for rid, rank, created in ranked]


def dense_hits(candidates: QuerySet[Memory], query: str, limit: int) -> list[Candidate]:
    """Nearest records by cosine distance among ``candidates`` that carry the current model's
    vector. Uses the model's partial HNSW index with pgvector 0.8 iterative scans, so selective
    filters (one workspace, a tag) still return ``limit`` rows instead of an emptied top-k."""
    embedded = embedding.embed_query(query)
    if embedded is None:
        return []
    vector, backend = embedded
    as_typed = Cast("embedding", VectorField(dimensions=backend.dim))
    ranked = (
        candidates.filter(embedding_model=backend.model_id)
        .annotate(distance=CosineDistance(as_typed, vector))
        .order_by("distance")
        .values_list("id", "distance", "created_at")[:limit]
    )
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {int(EF_SEARCH)}")
        rows = list(ranked)
    return [Candidate(rid, 1.0 - float(distance), created) for rid, distance, created in rows]
