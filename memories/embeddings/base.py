"""The embedding backend contract shared by every implementation.

A backend turns text into a fixed-size, L2-normalised vector. Vectors from different
backends (or the same backend with different options, e.g. another dimension) live in
different spaces: callers store ``model_id`` with every vector and never compare vectors
whose ``model_id`` differs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["EmbeddingBackend", "EmbeddingError", "l2_normalise"]


class EmbeddingError(Exception):
    """A backend could not produce embeddings (remote down after retries, model failure...).

    The message is meant for operators: it names the backend and the cause. Services that
    call a backend translate it into their own domain error.
    """


@runtime_checkable
class EmbeddingBackend(Protocol):
    """What every embedding backend provides.

    Contract:
    - ``model_id`` is stable across processes and releases for the same vectors, and
      includes the dimension (``"use-multilingual-v3@512"``). Two backends with the same
      ``model_id`` produce comparable vectors.
    - ``dim`` is the length of every returned vector.
    - ``local`` is True when embedding one text in-process is cheap enough (about 10 ms or
      less) to be done inside a request; otherwise callers embed in a background task.
    - ``embed_documents`` returns one vector per input text, in input order;
      ``embed_query`` embeds a search query (asymmetric models use a different prompt for
      queries and documents). Every vector has L2 norm 1 (within float rounding).
    - Failures raise :class:`EmbeddingError`; nothing else escapes except programming errors
      (e.g. ``TypeError`` for a non-string input).
    - Implementations are thread-safe and load their model lazily, once per process.
    """

    model_id: str
    dim: int
    local: bool

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed stored texts (memories); one L2-normalised vector per text, in order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query; L2-normalised."""
        ...


def l2_normalise(vector: Iterable[float]) -> list[float]:
    """Return ``vector`` scaled to unit L2 norm, as plain Python floats.

    Raises EmbeddingError for a zero or non-finite vector: such a vector cannot be
    normalised and storing it would silently break cosine search.
    """
    values = [float(x) for x in vector]
    norm = math.sqrt(math.fsum(x * x for x in values))
    if norm == 0.0 or not math.isfinite(norm):
        raise EmbeddingError(f"cannot normalise an embedding of norm {norm!r}")
    return [x / norm for x in values]


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, raising TypeError when an item is not a str.

    A bare ``str`` is rejected too: iterating it would embed each character.
    """
    if isinstance(texts, str):
        raise TypeError("embed_documents() takes a sequence of strings, not a str")
    items = list(texts)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"texts must be str, got {type(item).__name__}")
    return items
