"""Record and query vectors: the deployment's embedding model applied to MMW's data.

(The models themselves — backends, the registry — are ``memories.embeddings``; the per-model
HNSW indexes are ``memories.vector_index``.)

``current()`` is the configured backend (``MMW_EMBEDDING_BACKEND`` + options). A *local* backend
embeds inside ``remember`` (the vector is stored in the same INSERT); a remote or slow one
leaves the vector empty and a Celery task fills it — keyword search covers the record meanwhile.
Vectors are stored with their ``model_id`` and only ever compared with the same model's.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from memories.embeddings import EmbeddingBackend, EmbeddingError, get_backend

logger = logging.getLogger(__name__)

# Sentence models read the first few hundred tokens at best; embedding all of a 100,000-char
# record costs seconds and adds nothing. Keyword search still covers the whole text. A record's or
# turn's vector is computed from its first MAX_EMBEDDED_CHARS characters (a sequence member's with
# its predecessor's tail first, ``sequence.contextual_text``): 500, not the 2,000 of before, because
# the model's CPU is what a memory waits for before it is found by meaning (issue #37: USE embeds
# ~3x more LongMemEval-length texts per CPU-second at 500) and the recall held — LongMemEval-S
# records and turns, LoCoMo dev and the multilingual set, by meaning alone and fused with BM25
# (bench/lme_embed_cut.py, BENCHMARKS.md "Real content: LongMemEval-S").
MAX_EMBEDDED_CHARS = 500
# A query (a search, a recall task) is embedded from its first MAX_QUERY_CHARS characters: one text
# per call, so its length costs no backlog.
MAX_QUERY_CHARS = 2_000


def current() -> EmbeddingBackend:
    """The configured backend (cached per process by the registry)."""
    options: dict[str, Any] = dict(settings.MMW_EMBEDDING_OPTIONS)
    return get_backend(settings.MMW_EMBEDDING_BACKEND, **options)


def embed_for_write(text: str) -> tuple[list[float] | None, str | None]:
    """``(vector, model_id)`` when the backend is local, else ``(None, None)`` (a task embeds it).

    A failing local model never fails the write: the record is stored without a vector and
    the background embedding picks it up."""
    backend = current()
    if not backend.local:
        return None, None
    try:
        return backend.embed_documents([text[:MAX_EMBEDDED_CHARS]])[0], backend.model_id
    except EmbeddingError:
        logger.exception("embedding failed in the request; the record will be embedded later")
        return None, None


def warm_up() -> None:
    """Load the configured model and embed one text, so the first request does not pay for the
    load. Failures are logged, never raised (the request path reports them as it always does)."""
    try:
        current().embed_query("warm up")
    except Exception:
        logger.exception("warming up the embedding model failed; it will load on first use")


def embed_query(text: str) -> tuple[list[float], EmbeddingBackend] | None:
    """The query's vector with its backend, or None when the model is unavailable. The last
    ``QUERY_MEMO`` queries' vectors are kept per process (a search that also looks in the
    caller's other workspaces, or an agent asking again, embeds once)."""
    backend = current()
    key = (backend.model_id, text[:MAX_QUERY_CHARS])
    with _memo_lock:
        kept = _memo.get(key)
        if kept is not None:
            _memo.move_to_end(key)
            return list(kept), backend
    try:
        vector = backend.embed_query(key[1])
    except EmbeddingError:
        logger.exception("query embedding failed; searching by keywords only")
        return None
    with _memo_lock:
        _memo[key] = tuple(vector)
        while len(_memo) > QUERY_MEMO:
            _memo.popitem(last=False)
    return vector, backend


QUERY_MEMO = 256
_memo: OrderedDict[tuple[str, str], tuple[float, ...]] = OrderedDict()
_memo_lock = threading.Lock()


def ensure_embedded(memory_id: Any) -> bool:
    """Give one live record the current model's vector if it lacks it (remote/slow backends,
    or a model change). Runs in the archivist's task, so the outbox sweep retries it.
    Returns whether a vector was written."""
    from memories.models import Memory

    backend = current()
    pending = Memory.objects.filter(forgotten_at__isnull=True).exclude(embedding_model=backend.model_id)
    rows = _texts(pending.filter(id=memory_id))
    if not rows:
        return False
    try:
        vector = backend.embed_documents([rows[0][1]])[0]
    except EmbeddingError:
        logger.exception("background embedding failed for %s; keyword search still covers it", memory_id)
        return False
    Memory.objects.filter(id=memory_id).update(embedding=vector, embedding_model=backend.model_id)
    return True


def embed_records(memory_ids: Sequence[Any]) -> int:
    """Give the live records of ``memory_ids`` that lack the current model's vector one, with
    the backend's batch call (``embed_documents`` over all of them at once) and one ``UPDATE``.
    Returns how many vectors were written; a failing model writes none (logged; the archivist's
    ``ensure_embedded`` and the sweep retry them one by one)."""
    from memories.models import Memory

    backend = current()
    pending = Memory.objects.filter(forgotten_at__isnull=True).exclude(embedding_model=backend.model_id)
    rows = _texts(pending.filter(id__in=list(memory_ids)))
    if not rows:
        return 0
    try:
        vectors = backend.embed_documents([text for _, text in rows])
    except EmbeddingError:
        logger.exception("batch embedding of %d records failed; keyword search still covers them", len(rows))
        return 0
    store_vectors(backend.model_id, [(memory_id, vector) for (memory_id, _), vector in zip(rows, vectors, strict=True)])
    return len(rows)


def store_vectors(model_id: str, pairs: Sequence[tuple[Any, list[float]]], model: Any = None) -> None:
    """Write many rows' vectors in one statement (an ``UPDATE ... FROM unnest``): records by
    default, or the rows of ``model`` (a model with ``embedding`` and ``embedding_model`` and a
    uuid or integer primary key: session turns). Measured: half the CPU of Django's
    ``bulk_update``, which resolves a ``CASE`` over every row's vector."""
    from django.db import connection

    from memories.models import Memory

    meta = (model or Memory)._meta
    id_type = _ID_TYPES[meta.pk.get_internal_type()]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {connection.ops.quote_name(meta.db_table)} AS m"  # noqa: S608 - a model's own table
            f" SET embedding = v.e::vector, embedding_model = %s"
            f" FROM unnest(%s::{id_type}[], %s::text[]) AS v(id, e) WHERE m.{meta.pk.column} = v.id",
            [model_id, [i for i, _ in pairs], ["[" + ",".join(map(repr, vec)) + "]" for _, vec in pairs]],
        )


_ID_TYPES = {"UUIDField": "uuid", "BigAutoField": "bigint", "AutoField": "integer"}


def reembed_batch(backend: EmbeddingBackend, batch_size: int) -> int:
    """Embed the next ``batch_size`` live records not yet on ``backend``'s model; return how many.

    Selecting by "not on this model" makes the whole move resumable: an interrupted run simply
    continues with what is left."""
    from memories.models import Memory

    rows = _texts(
        Memory.objects.filter(forgotten_at__isnull=True).exclude(embedding_model=backend.model_id).order_by("id"),
        limit=batch_size,
    )
    if not rows:
        return 0
    vectors = backend.embed_documents([text for _, text in rows])
    store_vectors(backend.model_id, [(memory_id, vector) for (memory_id, _), vector in zip(rows, vectors, strict=True)])
    return len(rows)


def _texts(rows: Any, limit: int | None = None) -> list[tuple[Any, str]]:
    """``(id, text to embed)`` of the records of ``rows`` (a ``Memory`` queryset): the content, or
    for a sequence member the predecessor's tail + the content (``memories.sequence``)."""
    from memories import sequence

    picked = sequence.with_previous_content(rows).values_list("id", "content", "previous")  # type: ignore[misc]  # an annotation
    if limit is not None:
        picked = picked[:limit]
    return [(i, sequence.contextual_text(content, previous, MAX_EMBEDDED_CHARS)) for i, content, previous in picked]
