"""How a turn is indexed, and the background embedding of turns (docs/sessions.md, "Ranking").

Keyword side: ``Turn.search_document`` (the turn's own words, a generated column) and
``Turn.context_document`` (the previous turn's words, kept by ``refresh_context``); the ranker
counts a term found only in the context at ``CONTEXT_WEIGHT`` of its weight. Vector side: a turn
is embedded as "previous turn's tail + this turn" when ``CONTEXTUAL_EMBEDDING`` is on, so a short
answer ("No, that's not needed") is found by the words of the question it answers.
Measured with bench/sessions.py (BENCHMARKS.md).
"""

from __future__ import annotations

import logging
import uuid

from django.db import connection
from django.db.models import OuterRef, Subquery

from memories import sequence, vectors
from memories.embeddings import EmbeddingBackend, EmbeddingError
from transcripts.models import Turn

logger = logging.getLogger(__name__)

# The same rule as records that form a sequence (``memories.sequence``): a term found only in the
# previous turn counts CONTEXT_WEIGHT of its IDF; the vector reads the previous turn's tail first.
CONTEXT_WEIGHT = sequence.CONTEXT_WEIGHT
CONTEXTUAL_EMBEDDING = True
EMBED_BATCH = 64  # turns per call of the model's batch API


def embedding_text(content: str, previous: str | None, *, contextual: bool | None = None) -> str:
    """The text a turn's vector is computed from."""
    use_context = CONTEXTUAL_EMBEDDING if contextual is None else contextual
    return sequence.contextual_text(content, previous if use_context else None, vectors.MAX_EMBEDDED_CHARS)


def refresh_context(session_id: uuid.UUID, from_position: int) -> None:
    """Give every turn of the session at or after ``from_position`` the previous turn's words as
    its ``context_document``; a turn whose context changed loses its vector (it is embedded again
    with the new neighbour). One statement, inside the upload's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH ctx AS (
                SELECT t.id, (
                    SELECT p.search_document FROM transcripts_turn p
                    WHERE p.session_id = t.session_id AND p.position < t.position
                    ORDER BY p.position DESC LIMIT 1
                ) AS doc
                FROM transcripts_turn t WHERE t.session_id = %s AND t.position >= %s
            )
            UPDATE transcripts_turn t
            SET context_document = ctx.doc, embedding = NULL, embedding_model = NULL
            FROM ctx WHERE t.id = ctx.id AND t.context_document IS DISTINCT FROM ctx.doc
            """,
            [session_id, from_position],
        )


def embed_pending(session_id: uuid.UUID, *, backend: EmbeddingBackend | None = None, batch: int = EMBED_BATCH) -> int:
    """Embed the session's turns that lack the current model's vector, ``batch`` at a time with
    the model's batch API; returns how many. Idempotent (it selects by "not on this model")."""
    backend = backend or vectors.current()
    previous = Turn.objects.filter(session_id=OuterRef("session_id"), position__lt=OuterRef("position")).order_by(
        "-position"
    )
    done = 0
    while True:
        rows = list(
            Turn.objects.filter(session_id=session_id, session__forgotten_at__isnull=True, is_stub=False)
            .exclude(embedding_model=backend.model_id)
            .annotate(previous=Subquery(previous.values("content")[:1]))
            .order_by("position")
            .only("id", "content")[:batch]
        )
        if not rows:
            return done
        try:
            computed = backend.embed_documents([embedding_text(r.content, getattr(r, "previous", None)) for r in rows])
        except EmbeddingError:
            logger.exception("embedding turns of session %s failed; keyword search still covers them", session_id)
            return done
        pairs = [(row.id, vector) for row, vector in zip(rows, computed, strict=True)]
        vectors.store_vectors(backend.model_id, pairs, model=Turn)
        done += len(rows)
