"""The ORM queries the hand-written SQL of ``memories.sql`` and ``memories.search`` replaced: the
references ``tests/memories/test_sql.py``, ``test_nearest_round_trip.py`` and ``test_recency.py``
compare every statement with (and ``bench/archive/hotpaths.py`` timed them against)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from memories.models import Memory
    from memories.search import Candidate


def orm_nearest(candidates: QuerySet[Memory], vector: list[float], model_id: str, limit: int) -> list[Candidate]:
    """The dense ranker as it was before ``search.nearest`` became one round trip: the same query
    through the ORM in an ``atomic`` block after two ``SET LOCAL`` (five statements). The
    reference of ``bench/archive/hotpaths.py`` and ``tests/memories/test_nearest_round_trip.py``."""
    from django.db import connection, transaction
    from django.db.models.functions import Cast
    from pgvector.django import CosineDistance, VectorField

    from memories import dense, search

    as_typed = Cast("embedding", VectorField(dimensions=len(vector)))
    ranked = (
        candidates.filter(embedding_model=model_id)
        .annotate(distance=CosineDistance(as_typed, vector))
        .order_by("distance")
        .values_list("id", "distance", "created_at")[:limit]
    )
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {int(dense.EF_SEARCH)}")
        rows = list(ranked)
    return [search.Candidate(rid, 1.0 - float(distance), created) for rid, distance, created in rows]


def orm_keyword_ranked(candidates: QuerySet[Any], asked: Any, limit: int) -> list[tuple[Any, ...]]:
    """The keyword ranker's statement as the ORM built it before ``memories.sql.keyword_ranked``
    (the same ``(id, rank, created_at, idf, count)`` rows for a ``sql.KeywordQuery``): the scores
    as ``RawSQL`` annotations on ``candidates``; over the budget, the newest matches' ids first,
    then each row looked up again by id and scored. The reference of ``bench/archive/hotpaths.py`` and
    ``tests/memories/test_sql.py``."""
    from django.db.models import FloatField
    from django.db.models.expressions import RawSQL

    from memories import sql

    def unspelled(terms: Any) -> list[str]:
        """The prefix terms themselves, never their spelling (``sql.Spelled``): an independent reference."""
        return [t.term if isinstance(t, sql.Spelled) else t for t in terms]

    terms, match = unspelled(asked.terms), unspelled(asked.match)
    idf_sql, idf_params = sql.term_sum(terms, asked.weights, asked.context_weight)
    count_sql, count_params = sql.term_sum(terms, [1.0] * len(terms), asked.context_weight)
    size = "sqrt(1.0::float8 + ln(1.0::float8 + length(search_document)))"
    score = RawSQL(f"{idf_sql} / {size}", idf_params, output_field=FloatField())  # noqa: S611
    idf = RawSQL(idf_sql, idf_params, output_field=FloatField())  # noqa: S611 - bound terms
    count = RawSQL(count_sql, count_params, output_field=FloatField())  # noqa: S611 - bound terms
    wanted, wanted_params = sql.any_of(match)
    where = f"search_document @@ {wanted}" + (f" OR context_document @@ {wanted}" if asked.context_weight > 0 else "")
    found = candidates.extra(where=[where], params=wanted_params * (2 if asked.context_weight > 0 else 1))  # noqa: S610
    if asked.newest:
        newest = found.order_by("-created_at", "-id").values("id")[: asked.newest]
        found = found.model.objects.filter(id__in=newest)
    rows = (
        found.annotate(rank=score, idf=idf, count=count)
        .order_by("-rank", "-created_at", "-id")
        .values_list("id", "rank", "created_at", "idf", "count")[:limit]
    )
    return [(rid, float(rank), created, float(i), float(n)) for rid, rank, created, i, n in rows]


def orm_presented(candidates: QuerySet[Memory], ids: list[Any]) -> dict[Any, Memory]:
    """The winners of a search as the ORM loaded them before ``memories.sql.presented``: with
    their author, key and workspace (``select_related``), without the columns no reader presents.
    The reference of ``bench/archive/hotpaths.py`` and ``tests/memories/test_sql.py``."""
    from memories.models import NOT_PRESENTED

    return candidates.select_related("author", "api_key", "workspace").defer(*NOT_PRESENTED).in_bulk(ids)
