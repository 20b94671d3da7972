"""A backend that concatenates the unit vectors of several backends.

With unit-norm parts ``a_i`` and score weights ``w_i`` the result is
``concat(sqrt(w_i / sum(w)) * a_i)``, itself of unit norm, so the cosine of two combined
vectors is ``sum(w_i * cos_i) / sum(w)``: a weighted average of the parts' cosines. This
lets one pgvector column hold a score fusion of two models, at the cost of both models'
latency and the sum of their dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .base import EmbeddingBackend, check_texts

__all__ = ["ConcatBackend"]


class ConcatBackend:
    """Weighted concatenation of ``parts`` (see module docstring for the score it yields).

    ``weights`` are the parts' shares of the combined cosine (default: equal). ``model_id``
    names the parts and, unless all equal, the weights, since they change the vectors:
    ``"concat(use-multilingual-v3@512,multilingual-e5-small-q4@384;w=1,3)@896"``.
    """

    def __init__(self, parts: Sequence[EmbeddingBackend], weights: Sequence[float] | None = None) -> None:
        if len(parts) < 2:
            raise ValueError("ConcatBackend needs at least two parts")
        weights = list(weights) if weights is not None else [1.0] * len(parts)
        if len(weights) != len(parts) or any(not w > 0 or math.isinf(w) for w in weights):
            raise ValueError(f"weights must be one positive number per part, got {weights!r}")
        total = math.fsum(weights)
        self._parts = list(parts)
        self._scales = [math.sqrt(w / total) for w in weights]
        self.dim = sum(part.dim for part in parts)
        self.local = all(part.local for part in parts)
        ids = ",".join(part.model_id for part in parts)
        equal = all(w == weights[0] for w in weights)
        suffix = "" if equal else ";w=" + ",".join(f"{w:g}" for w in weights)
        self.model_id = f"concat({ids}{suffix})@{self.dim}"

    def __repr__(self) -> str:
        return f"ConcatBackend(model_id={self.model_id!r})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Each part embeds the documents; rows are joined part by part, in order."""
        items = check_texts(texts)
        if not items:
            return []
        rows: list[list[float]] = [[] for _ in items]
        for part, scale in zip(self._parts, self._scales, strict=True):
            for row, vector in zip(rows, part.embed_documents(items), strict=True):
                row.extend(x * scale for x in vector)
        return rows

    def embed_query(self, text: str) -> list[float]:
        """Each part embeds the query with its own query prompt."""
        row: list[float] = []
        for part, scale in zip(self._parts, self._scales, strict=True):
            row.extend(x * scale for x in part.embed_query(text))
        return row
