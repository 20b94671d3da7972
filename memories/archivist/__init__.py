"""The archivist: after a write commits, relate the new record to the live records its author can
see (docs/background.md) with typed, scored graph edges.

Edges always point from the newer record to the older one (``created_at``, then id), whichever of
the two is being archived, so the graph does not depend on the order the tasks run in:

- ``supersedes``   same ``fact_key``, higher version (score 1.0);
- ``contradicts``  the same subject with incompatible content: different numbers or versions, a
                   negation or an antonym flipped, one name swapped for another, or — for the same
                   ``fact_key`` — any other difference that is not a refinement (the read-time
                   ``conflict`` status says the same);
- ``refines``      the newer record keeps most of the older one's words and adds detail;
- ``related``      similar (keywords, or cosine of same-model embeddings) above a threshold;
- ``derived_from`` a summary to each of its live sources (also written by ``remember``).

Nothing is edited or deleted: an older record is "marked" refined or outdated by the edge that
points at it. A run reads without locks (it may ask an LLM), then in one transaction locks the
record and every edge target in id order, re-checks they are live, inserts the edges with
``ignore_conflicts`` and sets ``archived_at`` — so a retry, a redelivery or a concurrent duplicate
changes nothing, and a record forgotten meanwhile gets no edge (``forget`` takes the same locks).

The classifier is a heuristic over word stems, numbers and negations that works in English,
Russian and French without a model; ``bench/archivist/run.py`` measures it. An OpenAI-compatible
chat model may classify the strongest pairs instead (``MMW_ARCHIVIST_LLM_URL`` / ``_MODEL`` /
``_KEY``); when it fails, the heuristic's answer stands.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from django.db import transaction
from django.utils import timezone

from accounts.keys import principal_for
from memories import search
from memories.archivist.judge import UNRELATED, Verdict, classify
from memories.archivist.lexicon import fold, stem
from memories.archivist.llm import LLM_PAIRS, LLM_TIMEOUT, LLMConfig, llm_classify, llm_config
from memories.archivist.text import Features, content_words, cosine, dice, features
from memories.models import Memory, MemoryQuerySet, MemoryRelation, RelationType, Visibility

logger = logging.getLogger(__name__)

ARCHIVED, MISSING, FORGOTTEN, ALREADY = "archived", "missing", "skipped: forgotten", "skipped: already archived"

KEYWORD_CANDIDATES = 30
VECTOR_CANDIDATES = 20
SAME_KEY_CANDIDATES = 50
MAX_RELATED = 10
QUERY_WORDS = 64

__all__ = [
    "ALREADY", "ARCHIVED", "FORGOTTEN", "MISSING", "Edge", "Features", "LLMConfig", "Verdict",
    "analyse", "archive", "classify", "cosine", "dice", "features", "fold", "llm_classify",
    "llm_config", "stem",
]  # fmt: skip

# --- the task's work ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Edge:
    from_id: uuid.UUID
    to_id: uuid.UUID
    relation: str
    score: float


def archive(memory_id: uuid.UUID | str) -> str:
    """Analyse one record and store its edges; returns what happened (``ARCHIVED`` or a skip).

    Idempotent: an archived, forgotten or missing record is left alone."""
    try:
        wanted = uuid.UUID(str(memory_id))
    except ValueError:
        return MISSING
    record = Memory.objects.select_related("author", "project__account").filter(id=wanted).first()
    if record is None:
        return MISSING
    if record.forgotten_at is not None or _expired(record):
        return FORGOTTEN
    if record.archived_at is not None:
        return ALREADY
    edges = analyse(record)
    return _store(record.id, edges)


def _expired(record: Memory) -> bool:
    return record.expires_at is not None and record.expires_at <= timezone.now()


def _store(memory_id: uuid.UUID, edges: list[Edge]) -> str:
    targets = {e.to_id for e in edges} | {e.from_id for e in edges}
    with transaction.atomic():
        # One lock statement in id order: the record and every target, so two archivists never
        # deadlock each other, and ``forget`` (which locks what it forgets) waits or wins cleanly.
        rows = dict(
            Memory.objects.live()
            .filter(id__in=sorted(targets | {memory_id}))
            .order_by("id")
            .select_for_update(no_key=True)
            .values_list("id", "archived_at")
        )
        if memory_id not in rows:
            return FORGOTTEN
        if rows[memory_id] is not None:
            return ALREADY
        MemoryRelation.objects.bulk_create(
            [
                MemoryRelation(from_memory_id=e.from_id, to_memory_id=e.to_id, relation=e.relation, score=e.score)
                for e in edges
                if e.from_id in rows and e.to_id in rows
            ],
            ignore_conflicts=True,
        )
        Memory.objects.filter(id=memory_id).update(archived_at=timezone.now())
    return ARCHIVED


def author_scope(record: Memory) -> MemoryQuerySet:
    """Records the record's author can read now (README, "Who sees what"). An author who has left, or lost the
    project, is represented by what every member of the project reads."""
    principal = principal_for(user=record.author, project=record.project) if record.author else None
    if principal is None:
        return Memory.objects.filter(
            account_id=record.account_id,
            project_id=record.project_id,
            visibility__in=[Visibility.PROJECT, Visibility.ORG],
        )
    return Memory.objects.visible_to(principal)


def candidates(record: Memory) -> list[Memory]:
    """Live records of the same workspace the author can read that may relate to ``record``: its
    fact_key's versions, keyword hits, and nearest same-model vectors."""
    pool = author_scope(record).live().filter(workspace_id=record.workspace_id).exclude(id=record.id)
    found: dict[search.RowId, Memory] = {}
    if record.fact_key is not None:
        for other in pool.filter(fact_key=record.fact_key).order_by("-version")[:SAME_KEY_CANDIDATES]:
            found[other.id] = other
    ranked = [c.id for c in search.keyword_hits(pool, keyword_query(record), KEYWORD_CANDIDATES, record.project_id)]
    if record.embedding is not None and record.embedding_model:
        vector = [float(x) for x in record.embedding]
        ranked += [c.id for c in search.nearest(pool, vector, record.embedding_model, VECTOR_CANDIDATES)]
    loaded = pool.in_bulk(ranked)
    for rid in ranked:
        if rid in loaded:
            found.setdefault(rid, loaded[rid])
    return list(found.values())


def keyword_query(record: Memory) -> str:
    """The record's stems (prefix-matched by ``search``) as a query, capped at QUERY_WORDS words."""
    text = f"{record.fact_key or ''} {record.content}"
    words = content_words(text)
    terms = [stem(w) if len(stem(w)) >= 4 else w for w in words]
    terms += sorted(features(text).values)
    return " ".join(list(dict.fromkeys(terms))[:QUERY_WORDS])


def analyse(record: Memory) -> list[Edge]:
    """The edges ``record`` should have. Reads only; may call the LLM."""
    mine = features(record.content)
    scored: list[tuple[Memory, Memory, Verdict]] = []
    edges: list[Edge] = []
    for other in candidates(record):
        newer, older = (record, other) if _order(record) > _order(other) else (other, record)
        same_key = record.fact_key is not None and record.fact_key == other.fact_key
        if same_key and newer.version > older.version:
            edges.append(Edge(newer.id, older.id, RelationType.SUPERSEDES, 1.0))
        theirs = features(other.content)
        verdict = classify(
            mine if newer is record else theirs,
            theirs if newer is record else mine,
            vector_cosine=_vector_cosine(record, other),
        )
        if same_key and verdict.relation == RelationType.RELATED:
            continue  # "supersedes" already says it, and more
        scored.append((newer, older, verdict))
    scored = _ask_llm(scored)
    related = sorted((s for s in scored if s[2].relation == RelationType.RELATED), key=lambda s: -s[2].score)
    dropped = {(newer.id, older.id) for newer, older, _ in related[MAX_RELATED:]}
    for newer, older, verdict in scored:
        if verdict.relation != UNRELATED and (newer.id, older.id) not in dropped:
            edges.append(Edge(newer.id, older.id, verdict.relation, verdict.score))
    edges.extend(Edge(record.id, source, RelationType.DERIVED_FROM, 1.0) for source in record.derived_from)
    return edges


def _order(record: Memory) -> tuple[Any, str]:
    return (record.created_at, str(record.id))


def _vector_cosine(a: Memory, b: Memory) -> float | None:
    if a.embedding_model is None or a.embedding_model != b.embedding_model:
        return None
    return cosine(a.embedding, b.embedding)


def _ask_llm(scored: list[tuple[Memory, Memory, Verdict]]) -> list[tuple[Memory, Memory, Verdict]]:
    """With an LLM configured, let it classify the LLM_PAIRS most similar pairs."""
    config = llm_config()
    if config is None or not scored:
        return scored
    ranked = sorted(range(len(scored)), key=lambda i: -scored[i][2].score)[:LLM_PAIRS]
    out = list(scored)
    with httpx.Client(timeout=LLM_TIMEOUT) as client:
        for i in ranked:
            newer, older, _ = scored[i]
            verdict = llm_classify(config, newer.content, older.content, client)
            if verdict is not None:
                out[i] = (newer, older, verdict)
    return out
