"""The dense ranker alone, for tests that check what a record's vector finds (production ranks
through ``search.hybrid_hits``; this is its dense half, built from the same pieces)."""

from __future__ import annotations

from django.db.models import QuerySet

from memories import search, vectors
from memories.models import Memory


def dense_hits(candidates: QuerySet[Memory], query: str, limit: int) -> list[search.Candidate]:
    embedded = vectors.embed_query(query)
    assert embedded is not None, "no embedding model configured"
    vector, backend = embedded
    return search.nearest(candidates, vector, backend.model_id, limit)
