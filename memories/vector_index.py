"""One partial HNSW index per embedding model.

The ``embedding`` column is an untyped ``vector``; each model's rows are indexed through an
expression cast to that model's dimension, restricted to that model id. Queries must use the
same expression and predicate (see ``memories.selectors``) for the planner to pick the index.
"""

from __future__ import annotations

import re

from django.db import connections


def index_name(model_id: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:40]
    return f"memory_emb_hnsw_{slug}"


def ensure_vector_index(model_id: str, dim: int, *, using: str = "default") -> str:
    """Create the HNSW (cosine) index for ``model_id`` if missing; return its name."""
    if not re.fullmatch(r"[A-Za-z0-9_.:@/+-]{1,100}", model_id):
        raise ValueError(f"unsafe embedding model id: {model_id!r}")
    name = index_name(model_id)
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON memories_memory "
            f"USING hnsw ((embedding::vector({int(dim)})) vector_cosine_ops) "
            f"WHERE embedding_model = '{model_id}'"
        )
    return name
