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
# Tuned by bench/run.py --sweep (leave-one-conversation-out on LoCoMo + the multilingual set;
# BENCHMARKS.md): with z-score fusion, keywords at 0.7 and 200 candidates per ranker gave LoCoMo
# R@5 .51 and cross-lingual R@5 .94 with USE, better on both than keywords at 0.3 (.39 / .92).
# (At 1.0 a lone shared word like "run" outranks a cross-lingual match on tiny workspaces.)
KEYWORD_WEIGHT = 0.7
DENSE_WEIGHT = 1.0
TIE_BREAK = 10.0
# How many candidates each ranker contributes before fusion (at least this many, or 4x the limit).
MIN_CANDIDATES = 200
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


def hybrid_hits(candidates: QuerySet[Memory], query: str, limit: int) -> list[Hit]:
    """The best ``limit`` records of ``candidates`` for ``query``, by meaning and by keywords,
    best first, loaded without their vectors."""
    depth = max(MIN_CANDIDATES, 4 * limit)
    keyword = keyword_hits(candidates, query, depth)
    dense = dense_hits(candidates, query, depth)
    winners = fuse([(keyword, KEYWORD_WEIGHT), (dense, DENSE_WEIGHT)], limit)
    loaded = candidates.defer("embedding").in_bulk([c.id for c in winners])
    return [Hit(loaded[c.id], c.score) for c in winners if c.id in loaded]


def fuse(rankings: list[tuple[list[Candidate], float]], limit: int) -> list[Candidate]:
    """Score-aware fusion: each ranker's scores are z-normalised over its own candidates and
    summed with its weight (a record a ranker did not return gets that ranker's lowest z); a
    small reciprocal-rank term breaks ties. Unlike plain RRF, a keyword ranker that merely
    shares a token with many records cannot outvote a confident vector ranker (measured in
    docs/embeddings.md: cross-lingual R@5 .41 with RRF, .87-.90 with z-scores). Scaled to 0..1.
    """
    scores: dict[uuid.UUID, float] = {}
    created: dict[uuid.UUID, dt.datetime] = {}
    for ranking, _ in rankings:
        for c in ranking:
            created.setdefault(c.id, c.created_at)
    for ranking, weight in rankings:
        if not ranking:
            continue
        z = _z_scores([c.score for c in ranking])
        floor = min(z)
        seen = {c.id: (rank, zi) for rank, (c, zi) in enumerate(zip(ranking, z, strict=True))}
        for rid in created:
            rank, zi = seen.get(rid, (None, floor))
            tie_break = TIE_BREAK / (RRF_K + rank + 1) if rank is not None else 0.0
            scores[rid] = scores.get(rid, 0.0) + weight * zi + weight * tie_break
    ordered = sorted(scores, key=lambda rid: (-scores[rid], -created[rid].timestamp()))[:limit]
    return [Candidate(rid, _squash(scores[rid]), created[rid]) for rid in ordered]


def _z_scores(values: list[float]) -> list[float]:
    mean = sum(values) / len(values)
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return [(v - mean) / spread if spread > 1e-9 else 0.0 for v in values]


def _squash(value: float) -> float:
    """A monotone map of a fused score onto 0..1 for display."""
    return 1.0 / (1.0 + math.exp(-value))


def keyword_tsquery(query: str) -> str | None:
    """An OR query over the query's words (prefix-matched from 4 letters), or None if it has no
    searchable word. Words are reduced to letters and digits, so no tsquery syntax gets through."""
    terms: list[str] = []
    for word in dict.fromkeys(w.lower() for w in _WORD.findall(query)):
        if word in STOP_WORDS:
            continue
        for part in word.replace("_", " ").split():
            terms.append(f"{part}:*" if len(part) >= 4 else part)
    return " | ".join(dict.fromkeys(terms)) if terms else None


def keyword_hits(candidates: QuerySet[Memory], query: str, limit: int) -> list[Candidate]:
    """Full-text hits among ``candidates``, best first (ts_rank_cd, length-normalised)."""
    tsquery = keyword_tsquery(query)
    if tsquery is None:
        return []
    tsq = "to_tsquery('simple'::regconfig, mmw_unaccent(%s))"
    ranked = (
        candidates.extra(where=[f"search_document @@ {tsq}"], params=[tsquery])  # noqa: S610 - params bound
        .annotate(rank=RawSQL(f"ts_rank_cd(search_document, {tsq}, 1)", (tsquery,), output_field=FloatField()))  # noqa: S611
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
