"""The archivist: after a write commits, relate the new record to the live records its author can
see (SPEC §5) with typed, scored graph edges.

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

import json
import logging
import math
import re
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.keys import principal_for
from memories import search
from memories.models import Memory, MemoryQuerySet, MemoryRelation, RelationType, Visibility

logger = logging.getLogger(__name__)

ARCHIVED, MISSING, FORGOTTEN, ALREADY = "archived", "missing", "skipped: forgotten", "skipped: already archived"

KEYWORD_CANDIDATES = 30
VECTOR_CANDIDATES = 20
SAME_KEY_CANDIDATES = 50
MAX_RELATED = 10
QUERY_WORDS = 64

RELATED_DICE = 0.25  # keyword similarity (Dice over stems) from which two records are related
RELATED_COSINE = 0.45  # cosine of same-model embeddings from which two records are related (calibrated on "use")
TOPIC_DICE = 0.4  # "same subject" for the contradiction rules
TOPIC_COSINE = 0.85
REFINE_COVERAGE = 0.6  # share of the older record's stems the newer one keeps
REFINE_ADDED = 2  # new stems the newer one must add

# --- text features (pure; used by the task and by bench/archivist/run.py) ----------------------

_LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_VOWELS = frozenset("aeiouyаеёиоуыэюяйь")
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|can't|won't|without|none|nobody|nothing)\b|n't\b"
    r"|(?<!\w)(?:не|нет|никогда|нельзя|без|ни)(?!\w)"
    r"|\b(?:ne|pas|jamais|aucun|aucune|sans|personne|rien)\b|\bn'",
    re.UNICODE,
)
_STOP = search.STOP_WORDS | frozenset(
    """
    also just only very more most much many some any all each every can could should would must may
    might shall now then there here into onto over under about after before via per than such
    other same new old one two still yet again not no never none cannot
    это также тоже уже ещё еще очень всё все весь вся надо нужно можно должен должна через при
    над под после перед между про будет будут был не нет никогда нельзя без ни
    aussi très plus tout tous toute toutes avec chez entre après avant sous être avoir fait faut
    doit peut encore déjà deja ici là ne pas jamais aucun aucune sans
    """.split()  # noqa: SIM905 - a word list reads better as text
)
# Stems of words with opposite meaning; a pair of facts that differ by one of these disagree.
_ANTONYMS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in [
        ("enabl activ включ actif", "disab deact выклю отклю desac inact"),
        ("allow permi разре autor", "forbi prohi запре"),
        ("requi manda обяза oblig", "optio необя facul"),
        ("true", "false"),
        ("publi публи", "priva прива"),
        ("sync synch синхр", "async асинх"),
    ]
)


def fold(text: str) -> str:
    """Lower case without accents (``é`` → ``e``, ``ё`` → ``е``); Cyrillic otherwise kept."""
    text = text.replace("’", "'").replace("ё", "е").replace("Ё", "Е")
    decomposed = unicodedata.normalize("NFKD", text.lower())
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", kept).replace("и\u0306", "й")


def stem(word: str) -> str:
    """A crude language-neutral stem: five letters for long words; short words lose a plural ``s``
    and one final vowel. Good enough to match ``deploy``/``deployment``, ``сервер``/``сервера``,
    ``déploiement``/``déployer``, ``rate``/``rates``."""
    if len(word) >= 6:
        return word[:5]
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    if len(word) > 3 and word[-1] in _VOWELS:
        word = word[:-1]
    return word


@dataclass(frozen=True)
class Features:
    stems: tuple[str, ...]  # content-word stems in text order (stop words dropped)
    values: frozenset[str]  # numbers and versions ("15", "3.11", "0.5")
    negated: bool

    @property
    def stem_set(self) -> frozenset[str]:
        return frozenset(self.stems)


def features(text: str) -> Features:
    folded = fold(text)
    words = [w for w in _LETTERS.findall(folded) if len(w) > 1 and w not in _STOP]
    values = frozenset(v.replace(",", ".") for v in _NUMBER.findall(folded))
    return Features(stems=tuple(stem(w) for w in words), values=values, negated=bool(_NEGATION.search(folded)))


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def cosine(a: Sequence[float] | Any, b: Sequence[float] | Any) -> float | None:
    """Cosine of two vectors (``None`` if either is empty or zero)."""
    if a is None or b is None or len(a) == 0 or len(a) != len(b):
        return None
    dot = sum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b))
    return dot / norm if norm else None


@dataclass(frozen=True)
class Verdict:
    relation: str  # contradicts | refines | related | unrelated
    score: float
    why: str = ""


UNRELATED = "unrelated"


def classify(
    newer: Features, older: Features, *, same_fact_key: bool = False, vector_cosine: float | None = None
) -> Verdict:
    """How ``newer`` stands to ``older``; a heuristic that needs no model."""
    a, b = older.stem_set, newer.stem_set
    shared = a & b
    sim = dice(a, b)
    if vector_cosine is not None:
        sim = max(sim, vector_cosine)
    # Short notes share few words: one shared stem is enough when either has at most two.
    enough_shared = len(shared) >= (1 if min(len(a), len(b)) <= 2 else 2)
    same_topic = same_fact_key or (enough_shared and (dice(a, b) >= TOPIC_DICE or _cos(vector_cosine, TOPIC_COSINE)))
    score = round(max(sim, 0.5) if same_fact_key else sim, 4)
    if same_topic:
        why = _incompatible(newer, older)
        if why:
            return Verdict(RelationType.CONTRADICTS, score, why)
    coverage = len(shared) / len(a) if a else 0.0
    added = b - a
    if (
        coverage >= REFINE_COVERAGE
        and len(added) >= REFINE_ADDED
        and len(b) > len(a)
        and older.values <= newer.values
        and (same_topic or enough_shared)
    ):
        return Verdict(RelationType.REFINES, round(coverage, 4), "adds detail")
    if same_fact_key and (b != a or newer.values != older.values):
        return Verdict(RelationType.CONTRADICTS, score, "same fact_key, different content")
    if (dice(a, b) >= RELATED_DICE and enough_shared) or _cos(vector_cosine, RELATED_COSINE):
        return Verdict(RelationType.RELATED, round(sim, 4), "similar")
    return Verdict(UNRELATED, round(sim, 4))


def _cos(value: float | None, threshold: float) -> bool:
    return value is not None and value >= threshold


def _incompatible(newer: Features, older: Features) -> str:
    """Why two records on one subject cannot both be true, or "" if nothing says so."""
    a, b = older.stem_set, newer.stem_set
    # The subject is (crudely) the first content word: "the web service has 4 replicas" and "the
    # worker service has 8 replicas" are about two things, not one thing twice.
    same_subject = bool(older.stems and newer.stems and (older.stems[0] in b or newer.stems[0] in a))
    if older.values - newer.values and newer.values - older.values and same_subject:
        return "different numbers"
    for left, right in _ANTONYMS:
        if (a & left and b & right and not a & right) or (a & right and b & left and not a & left):
            return "opposite words"
    if newer.negated != older.negated:
        return "negation"
    removed, added = a - b, b - a
    if (
        1 <= len(removed) <= 2
        and 1 <= len(added) <= 2
        and older.stems
        and newer.stems
        and older.stems[0] in b
        and newer.stems[0] in a
        and len(a & b) / len(a) >= 0.5
    ):
        return "a name swapped"
    return ""


# --- the optional LLM -------------------------------------------------------------------------

LLM_PAIRS = 5
LLM_TIMEOUT = 20.0
_LLM_PROMPT = (
    "You compare two notes stored by an AI agent's memory. Answer with JSON only: "
    '{"relation": "contradicts" | "refines" | "related" | "unrelated", "score": <0..1>}. '
    '"contradicts": both cannot be true (different values, names or a negation for the same subject). '
    '"refines": the NEWER note restates the OLDER one and adds detail. '
    '"related": same topic, compatible. "unrelated": different topics.'
)


@dataclass(frozen=True)
class LLMConfig:
    url: str
    model: str
    key: str


def llm_config() -> LLMConfig | None:
    """The chat model to ask (settings ``MMW_ARCHIVIST_LLM_*``), or None: the default, no LLM."""
    url = settings.MMW_ARCHIVIST_LLM_URL.strip()
    if not url:
        return None
    return LLMConfig(
        url=url.rstrip("/"),
        model=settings.MMW_ARCHIVIST_LLM_MODEL.strip() or "default",
        key=settings.MMW_ARCHIVIST_LLM_KEY.strip(),
    )


def llm_classify(config: LLMConfig, newer: str, older: str, client: httpx.Client) -> Verdict | None:
    """Ask the model; ``None`` on any failure or an answer it cannot parse."""
    body = {
        "model": config.model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": _LLM_PROMPT},
            {"role": "user", "content": f"OLDER:\n{older[:4000]}\n\nNEWER:\n{newer[:4000]}"},
        ],
    }
    headers = {"Authorization": f"Bearer {config.key}"} if config.key else {}
    try:
        response = client.post(f"{config.url}/chat/completions", json=body, headers=headers)
        response.raise_for_status()
        text = response.json()["choices"][0]["message"]["content"]
        return _parse_llm_answer(str(text))
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        logger.warning("archivist LLM failed (%s); keeping the heuristic's answer", exc)
        return None


def _parse_llm_answer(text: str) -> Verdict | None:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match is None:
        return None
    data = json.loads(match.group(0))
    relation = str(data.get("relation", "")).strip().lower()
    if relation not in (RelationType.CONTRADICTS, RelationType.REFINES, RelationType.RELATED, UNRELATED):
        return None
    score = float(data.get("score", 0.8))
    return Verdict(relation, round(min(max(score, 0.0), 1.0), 4), "llm")


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
    """Records the record's author can read now (SPEC §3). An author who has left, or lost the
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
    found: dict[uuid.UUID, Memory] = {}
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
    words = [w for w in _LETTERS.findall(fold(text)) if len(w) > 1 and w not in _STOP]
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
            same_fact_key=same_key,
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


def edges_of(ids: Iterable[uuid.UUID]) -> set[tuple[uuid.UUID, uuid.UUID, str]]:
    """The stored edges touching ``ids`` (for tests and diagnostics)."""
    wanted = list(ids)
    rows = MemoryRelation.objects.filter(from_memory_id__in=wanted) | MemoryRelation.objects.filter(
        to_memory_id__in=wanted
    )
    return {(r.from_memory_id, r.to_memory_id, r.relation) for r in rows}
