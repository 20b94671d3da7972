"""The dense ranker's statement and the models' cosine scales, apart from ``memories.search`` (which
fuses this ranker with the keyword ranker, and re-exports these names).

``NearestQuery`` is built before the query's vector is known, so the thread that embeds the query
can run it on a connection of its own (``mmw.db.aside``); ``CosineScale`` maps a model's cosines
onto the absolute 0..1 relevance the floor and the shown score read (docs/search.md).
``Candidate`` — one ranker's verdict on one row — lives here because the dense ranker makes them;
every ranker and the fusion use it. ``EF_SEARCH`` is read at each run: a bench that varies it sets
``memories.dense.EF_SEARCH``.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from pgvector import Vector

from memories import sql
from mmw.db.prelude import execute_after

EF_SEARCH = 100
# Per embedding model: the cosines mapped to relevance 0 and 1 (linear between, clamped). Keyed
# by model id; other models use MMW_SEARCH_COSINE_SCALE (a pair) or DEFAULT_COSINE_SCALE.
# DEFAULT_FLOOR and BACKGROUND_WEIGHT are calibrated on USE's scale (docs/search.md); other models
# get no background discount (``background_weight``).
COSINE_SCALES: dict[str, tuple[float, float]] = {
    "use-multilingual-v3@512": (0.09, 0.29),
    "multilingual-e5-small-q4@384": (0.7, 0.9),
}
DEFAULT_COSINE_SCALE = (0.3, 0.7)

RowId = uuid.UUID | int  # a record's UUID or a turn's integer id


@dataclass(frozen=True)
class Candidate:
    """One ranker's (or the fusion's) verdict on one row: no content, no vector."""

    id: RowId
    score: float
    created_at: dt.datetime
    # How relevant the row is on an absolute 0..1 scale (``relevance``), comparable across
    # queries; the ranking's ``score`` is relative to the other candidates of one query.
    relevance: float = 0.0
    # The dense ranker's: the row's cosine with its workspace's background, the row itself left out
    # (``sql.nearest_statement``).
    background: float = 0.0
    # How strongly the row says the query has an answer here (0..1; None: its ``relevance``). For a
    # vector match, its cosine less ``BACKGROUND_WEIGHT`` x its background, scaled: a record close
    # to everything in its workspace is close to any query too, and proves nothing.
    evidence: float | None = None
    # The dense ranker's: the same evidence in units of the model's cosine scale, not clamped
    # (``CosineScale.units``); what the shown score reads (``memories.confidence``).
    evidence_units: float | None = None
    # The fusion's: the score shown for the row (``memories.confidence``): how likely it answers
    # the query, at most the score of the row before it.
    confidence: float = 0.0


def _hnsw_settings() -> str:
    """The dense ranker's HNSW settings, sent with its statement (``mmw.db.prelude``); read at
    each run, so a bench that varies ``EF_SEARCH`` is honoured."""
    return f"SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL hnsw.ef_search = {int(EF_SEARCH)}; "


@dataclass(frozen=True)
class NearestQuery:
    """The dense ranker's statement, built before the query's vector is known (``run`` binds
    it), so the thread that embeds the query can run it on a connection of its own.

    Uses the model's partial HNSW index with pgvector 0.8 iterative scans, so selective filters
    (one workspace, a tag) still return ``limit`` rows instead of an emptied top-k. One round
    trip: the two ``SET LOCAL`` go with the query and end with it (``mmw.db.prelude``)."""

    statement: str
    params: tuple[object, ...]
    model_id: str
    dim: int

    @classmethod
    def of(cls, scope: sql.Scope, model_id: str, dim: int, limit: int) -> NearestQuery:
        """The statement for the ``limit`` rows of ``scope`` nearest to a ``dim``-long
        ``model_id`` vector (``sql.nearest_statement``)."""
        statement, params = sql.nearest_statement(scope, model_id, dim, limit)
        return cls(statement, params, model_id, dim)

    def fits(self, vector: Sequence[float], model_id: str) -> bool:
        """Whether this statement was planned for ``model_id``'s vectors of ``vector``'s length."""
        return model_id == self.model_id and len(vector) == self.dim

    def run(self, cursor: Any, vector: Sequence[float]) -> list[Candidate]:
        """The nearest records to ``vector`` (of this statement's model and length), best first,
        read through ``cursor`` (Django's, or a side connection's)."""
        if len(vector) != self.dim:
            raise ValueError(f"a {len(vector)}-long vector for a statement planned for {self.dim}")
        text = Vector(list(vector)).to_text()
        params = [text if p == sql.QUERY_VECTOR else p for p in self.params]
        execute_after(cursor, _hnsw_settings(), self.statement, params)
        return [
            Candidate(rid, 1.0 - float(distance), created, background=_finite(background))
            for rid, distance, created, background in cursor.fetchall()
        ]


def _finite(value: Any) -> float:
    """A background cosine as a float; 0 for NaN (a zero vector has no direction)."""
    number = float(value)
    return number if math.isfinite(number) else 0.0


@dataclass(frozen=True)
class CosineScale:
    """A model's cosine similarities mapped onto the absolute 0..1 relevance: ``low`` and below
    say nothing (0), ``high`` and above are as sure as a full keyword match (1), linear between."""

    low: float
    high: float

    def relevance(self, cosine: float) -> float:
        return min(1.0, max(0.0, self.units(cosine)))

    def units(self, cosine: float) -> float:
        """``cosine`` on this scale, not clamped: 0 at ``low``, 1 at ``high``."""
        return (cosine - self.low) / (self.high - self.low)


def cosine_scale(model_id: str) -> CosineScale:
    """The calibrated scale of ``model_id`` (``COSINE_SCALES``), else the operator's
    ``MMW_SEARCH_COSINE_SCALE``, else ``DEFAULT_COSINE_SCALE``."""
    operator = getattr(settings, "MMW_SEARCH_COSINE_SCALE", None)
    low, high = COSINE_SCALES.get(model_id) or operator or DEFAULT_COSINE_SCALE
    return CosineScale(float(low), float(high))
