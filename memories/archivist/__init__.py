"""The archivist: after a write commits, relate the new record to the live records its author can
see (docs/background.md) with typed, scored graph edges.

Edges always point from the newer record to the older one (``created_at``, then id), whichever of
the two is being archived, so the graph does not depend on the order the tasks run in:

- ``supersedes``   same ``fact_key``, higher version (score 1.0);
- ``contradicts``  two versions of one ``fact_key`` that ``memories.statuses`` shows as a conflict
                   (score 1.0), or two records on the same subject with incompatible values
                   (``memories.archivist.judge``; score: the share of the two texts that aligns).
                   Every stored ``contradicts`` puts both live ends in ``conflict`` when read, so
                   none is written towards a version a deliberate write has superseded, and those
                   a deliberate version settles are removed when it is archived;
- ``refines``      the newer record keeps the older one's words and adds detail;
- ``related``      similar (keywords, or cosine of same-model embeddings) above a threshold;
- ``derived_from`` a summary to each of its live sources (also written by ``remember``).

A record keeps at most ``MAX_PER_KIND`` judged edges (``related``, ``refines``, ``contradicts``
between records that are not versions of one key) of each kind, strongest first, counting the
edges other records' runs gave it. Records are never edited or deleted. A run reads without locks
(it may ask an LLM), then in one transaction locks the record, every edge target and every
version it settles in id order, re-checks they are live, inserts the edges with
``ignore_conflicts`` and sets ``archived_at`` — so a retry, a redelivery or a concurrent duplicate
changes nothing, and a record forgotten meanwhile gets no edge (``forget`` takes the same locks).

An OpenAI-compatible chat model may classify the strongest pairs instead of the heuristic
(``MMW_ARCHIVIST_LLM_URL`` / ``_MODEL`` / ``_KEY``); when it fails, the heuristic's answer stands.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import httpx
from django.utils import timezone

from accounts.keys import principal_for
from memories import search, statuses
from memories.archivist.graph import (
    ALREADY,
    ARCHIVED,
    FORGOTTEN,
    JUDGED,
    MAX_PER_KIND,
    Edge,
    deliberate_floors,
    store,
)
from memories.archivist.judge import Verdict, classify
from memories.archivist.lexicon import fold, stem
from memories.archivist.llm import LLM_PAIRS, LLM_TIMEOUT, LLMConfig, llm_classify, llm_config
from memories.archivist.text import Features, content_words, cosine, dice, features
from memories.models import Memory, MemoryQuerySet, RelationType, Visibility

logger = logging.getLogger(__name__)

MISSING = "missing"

KEYWORD_CANDIDATES = 30
VECTOR_CANDIDATES = 20
SAME_KEY_CANDIDATES = 50
QUERY_WORDS = 64

__all__ = [
    "ALREADY", "ARCHIVED", "FORGOTTEN", "MAX_PER_KIND", "MISSING", "Edge", "Features", "LLMConfig",
    "Verdict", "analyse", "archive", "classify", "cosine", "dice", "features", "fold", "llm_classify",
    "llm_config", "stem", "store",
]  # fmt: skip

# --- the task's work ----------------------------------------------------------------------------


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
    return store(record, edges, author_scope(record))


def _expired(record: Memory) -> bool:
    return record.expires_at is not None and record.expires_at <= timezone.now()


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
    others = candidates(record)
    settled = _settled(record, others)
    mine = features(record.content)
    edges: list[Edge] = []
    scored: list[tuple[Memory, Memory, Verdict]] = []
    for other in others:
        newer, older = (record, other) if _order(record) > _order(other) else (other, record)
        if record.fact_key is not None and record.fact_key == other.fact_key:
            edges.extend(_version_edges(newer, older, settled))
            continue
        theirs = features(other.content)
        verdict = classify(
            mine if newer is record else theirs,
            theirs if newer is record else mine,
            vector_cosine=_vector_cosine(record, other),
        )
        scored.append((newer, older, verdict))
    for newer, older, verdict in _strongest(_ask_llm(scored)):
        if verdict.relation == RelationType.CONTRADICTS and (newer.id in settled or older.id in settled):
            continue  # a version a deliberate write superseded contradicts nothing any more
        edges.append(Edge(newer.id, older.id, verdict.relation, verdict.score))
    edges.extend(Edge(record.id, source, RelationType.DERIVED_FROM, 1.0) for source in record.derived_from)
    return edges


def _version_edges(newer: Memory, older: Memory, settled: set[uuid.UUID]) -> list[Edge]:
    """Two versions of one fact_key: the newer supersedes the older, and they contradict each
    other exactly when ``memories.statuses`` shows them in conflict — different content and
    neither superseded by a deliberate write."""
    edges = []
    if newer.version > older.version:
        edges.append(Edge(newer.id, older.id, RelationType.SUPERSEDES, 1.0, versions=True))
    if (
        newer.id not in settled
        and older.id not in settled
        and statuses.normalised(newer.content) != statuses.normalised(older.content)
    ):
        edges.append(Edge(newer.id, older.id, RelationType.CONTRADICTS, 1.0, versions=True))
    return edges


def _settled(record: Memory, others: list[Memory]) -> set[uuid.UUID]:
    """Ids among ``record`` and ``others`` of versions a deliberate write has superseded."""
    keyed = [r for r in [record, *others] if r.fact_key is not None]
    floors = deliberate_floors(author_scope(record), record.workspace_id, (r.fact_key for r in keyed if r.fact_key))
    return {r.id for r in keyed if r.fact_key is not None and r.version < floors.get(r.fact_key, 0)}


def _strongest(scored: list[tuple[Memory, Memory, Verdict]]) -> list[tuple[Memory, Memory, Verdict]]:
    """The judged pairs worth an edge: at most ``MAX_PER_KIND`` of each kind, strongest first."""
    out = []
    for kind in JUDGED:
        ranked = sorted((s for s in scored if s[2].relation == kind), key=lambda s: -s[2].score)
        out.extend(ranked[:MAX_PER_KIND])
    return out


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
