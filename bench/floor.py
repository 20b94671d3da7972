"""Calibrating ``search``'s relevance floor (``min_score``): how many unrelated queries come back
empty, and what the floor costs LoCoMo dev and the multilingual set, for each setting.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.floor [--quick]

In process, on the bench database: LoCoMo dev (one workspace per conversation) and the
multilingual set are bulk-loaded with the shipped backend's vectors (``retrieval.bulk_load_dataset``);
every question, and every query of ``bench/data/unrelated.json`` in every workspace it is
unrelated to, goes through the real rankers (``search.keyword_hits`` at each
``KEYWORD_IDF_SHARE`` tried, ``search.nearest``) and the real fusion without a floor. Each fused
candidate keeps its keyword coverage and its cosine, so every floor is replayed offline: a
candidate is kept when its coverage or its scaled cosine reaches the floor, exactly as
``search.fuse`` keeps it. Results: ``bench/out/floor.json`` and a table on stdout.

A benchmark, not a test: it prints figures and never fails on one.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, retrieval
from bench.common import log, markdown_table

UNRELATED_PATH = Path(__file__).resolve().parent / "data" / "unrelated.json"
IDF_SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
FLOORS = tuple(round(0.3 + 0.05 * i, 2) for i in range(9))  # 0.30 .. 0.70
KEEP_SHARES = (0.5, 0.75, 1.0)
LIMIT = 100  # every fused candidate (two rankers of 50)

# One fused candidate: doc key, keyword coverage (0 when only the vector ranker found it), cosine
# (None when only the keyword ranker found it).
Row = tuple[str, float, float | None]


def unrelated_queries(data: retrieval.Dataset, corpus: str) -> list[retrieval.Query]:
    """``unrelated.json``'s queries for ``corpus`` ("locomo" or "multilingual"), asked in every
    workspace of ``data``; none has a relevant record."""
    spec = json.loads(UNRELATED_PATH.read_text())
    texts = spec["both"] + (spec["locomo"] if corpus == "locomo" else [])
    return [
        retrieval.Query(f"unrelated:{ws}:{i}", ws, q["query"], frozenset(), {"lang": q["lang"]})
        for ws in data.workspaces()
        for i, q in enumerate(texts)
    ]


def collect(data: retrieval.Dataset, extra: list[retrieval.Query], backend: str) -> dict[str, dict[str, list[Row]]]:
    """For every query of ``data`` and ``extra``, per IDF share: the fused candidates, best first."""
    from accounts.keys import resolve_key
    from memories import search, selectors, sequence, vectors

    common.reset_memories()
    api_key, keys = retrieval.bulk_load_dataset(data, backend)
    principal = resolve_key(api_key)
    assert principal is not None
    project_id = principal.project.pk
    scoped = {ws: selectors.memory_queryset(principal=principal, workspace=ws) for ws in data.workspaces()}
    depth = max(search.MIN_CANDIDATES, 4 * 10)
    out: dict[str, dict[str, list[Row]]] = {str(share): {} for share in IDF_SHARES}
    saved = search.KEYWORD_IDF_SHARE
    try:
        for query in [*data.queries, *extra]:
            qs = scoped[query.workspace]
            assert qs is not None
            embedded = vectors.embed_query(query.text)
            assert embedded is not None
            vector, model = embedded
            dense = search.nearest(qs, vector, model.model_id, depth)
            cosine = {c.id: c.score for c in dense}
            for share in IDF_SHARES:
                search.KEYWORD_IDF_SHARE = share
                keyword = search.keyword_hits(qs, query.text, depth, project_id, context_weight=sequence.CONTEXT_WEIGHT)
                coverage = {c.id: c.relevance for c in keyword}
                rankings = [search.Ranking(keyword, search.KEYWORD_WEIGHT), search.Ranking(dense, search.DENSE_WEIGHT)]
                fused = search.fuse(rankings, LIMIT)
                out[str(share)][query.qid] = [
                    (keys[str(c.id)], coverage.get(c.id, 0.0), cosine.get(c.id)) for c in fused
                ]
    finally:
        search.KEYWORD_IDF_SHARE = saved
    return out


def _source_hash() -> str:
    """What the collected lists depend on: the ranking code and the unrelated queries."""
    import hashlib
    import inspect

    from memories import search, sequence

    text = (
        inspect.getsource(search)
        + inspect.getsource(sequence)
        + UNRELATED_PATH.read_text()
        + inspect.getsource(collect)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def kept(rows: list[Row], floor: Any, scale: Any) -> list[str]:
    """The doc keys ``search.fuse`` would keep under ``floor``, best first (the real ``Floor``)."""
    relevance = {k: max(cov, scale.relevance(cos) if cos is not None else 0.0) for k, cov, cos in rows}
    chosen = set(floor.keep(relevance))
    return [k for k, _, _ in rows if k in chosen]


def evaluate(
    datasets: dict[str, tuple[retrieval.Dataset, list[retrieval.Query]]], lists: dict[str, dict[str, Any]], model: str
) -> list[dict[str, Any]]:
    """Every (IDF share, answering floor, keeping share): unrelated empty rate, R@5 per dataset part."""
    from memories import search

    scale = search.cosine_scale(model)
    grid = []
    for share in IDF_SHARES:
        for answer_from in (0.0, *FLOORS):
            for keep_share in KEEP_SHARES if answer_from else (1.0,):
                floor = search.Floor(answer_from, answer_from * keep_share)
                entry: dict[str, Any] = {"idf_share": share, "answer_from": answer_from, "keep_from": floor.keep_from}
                empty = total = 0
                for name, (data, extra) in datasets.items():
                    ranked = lists[name][str(share)]
                    got = {q.qid: kept(ranked[q.qid], floor, scale) for q in data.queries}
                    parts = retrieval.breakdown(data, got)
                    entry[f"{name} R@5"] = parts["all"]["R@5"]
                    for key in ("kind=cross-lingual", "kind=same-language"):
                        if key in parts:
                            entry[f"{name} {key.split('=')[1]} R@5"] = parts[key]["R@5"]
                    empty += sum(1 for q in extra if not kept(ranked[q.qid], floor, scale))
                    total += len(extra)
                entry["unrelated empty"] = round(empty / total, 3) if total else 0.0
                grid.append(entry)
    return grid


def combined_kept(rows: list[Row], answer_from: float, keep_from: float, share: float, scale: Any) -> list[str]:
    """A candidate floor rule (measured, not shipped): answer when the best relevance reaches
    ``answer_from`` *or* the best scaled cosine plus ``share`` x the best keyword coverage does
    (two weaker signals together), then keep what reaches ``keep_from``."""
    scored = [(k, cov, scale.relevance(cos) if cos is not None else 0.0) for k, cov, cos in rows]
    if not scored:
        return []
    best = max(max(cov, cos) for _, cov, cos in scored)
    joint = max(cos for _, _, cos in scored) + share * max(cov for _, cov, _ in scored)
    if max(best, joint) < answer_from:
        return []
    return [k for k, cov, cos in scored if max(cov, cos) >= keep_from]


def evaluate_combined(
    datasets: dict[str, tuple[retrieval.Dataset, list[retrieval.Query]]], lists: dict[str, dict[str, Any]], model: str
) -> list[dict[str, Any]]:
    """``combined_kept`` at the shipped IDF share, over a grid of its three settings."""
    from memories import search

    scale = search.cosine_scale(model)
    share_key = str(search.KEYWORD_IDF_SHARE)
    grid = []
    for answer_from in (0.5, 0.55, 0.6, 0.65, 0.7):
        for share in (0.25, 0.5, 0.75, 1.0):
            for keep_from in (0.2, 0.25, 0.3):
                entry: dict[str, Any] = {"answer_from": answer_from, "coverage_share": share, "keep_from": keep_from}
                empty = total = 0
                for name, (data, extra) in datasets.items():
                    ranked = lists[name][share_key]
                    got = {
                        q.qid: combined_kept(ranked[q.qid], answer_from, keep_from, share, scale) for q in data.queries
                    }
                    parts = retrieval.breakdown(data, got)
                    entry[f"{name} R@5"] = parts["all"]["R@5"]
                    if "kind=cross-lingual" in parts:
                        entry[f"{name} cross-lingual R@5"] = parts["kind=cross-lingual"]["R@5"]
                    empty += sum(
                        1 for q in extra if not combined_kept(ranked[q.qid], answer_from, keep_from, share, scale)
                    )
                    total += len(extra)
                entry["unrelated empty"] = round(empty / total, 3) if total else 0.0
                grid.append(entry)
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 LoCoMo conversations instead of 5")
    parser.add_argument("--data-dir", type=Path, default=common.DEFAULT_DATA_DIR)
    parser.add_argument("--backend", default="use")
    args = parser.parse_args()
    started = time.time()
    common.setup_django(args.data_dir.resolve())
    locomo = retrieval.locomo(2 if args.quick else None)
    multilingual = retrieval.multilingual()
    datasets = {
        "locomo": (locomo, unrelated_queries(locomo, "locomo")),
        "multilingual": (multilingual, unrelated_queries(multilingual, "multilingual")),
    }
    lists = {}
    for name, (data, extra) in datasets.items():
        cache = common.OUT_DIR / f"floor-{name}-{args.backend}-{len(data.queries)}-{_source_hash()}.json"
        if cache.exists():
            lists[name] = json.loads(cache.read_text())
            continue
        with common.stopwatch() as took:
            lists[name] = collect(data, extra, args.backend)
        log(f"floor: {name}: {len(data.queries)} questions and {len(extra)} unrelated queries in {took():.0f}s")
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(lists[name]))
    from memories import vectors

    grid = evaluate(datasets, lists, vectors.current().model_id)
    combined = evaluate_combined(datasets, lists, vectors.current().model_id)
    out = {
        "command": "MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.floor " + " ".join(sys.argv[1:]),
        "backend": args.backend,
        "grid": grid,
        "combined_rule_grid": combined,
        "duration_seconds": round(time.time() - started),
    }
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "floor.json").write_text(json.dumps(out, indent=1))
    print(report(grid))
    reaching = sorted(
        (e for e in combined if e["unrelated empty"] >= 0.9), key=lambda e: -e["multilingual cross-lingual R@5"]
    )[:5]
    print("\nCombined rule (answer on cosine + share x coverage too), best cross-lingual R@5 at >= 90 % empty:")
    print(markdown_table(list(reaching[0]) if reaching else ["none"], [list(e.values()) for e in reaching]))


def report(grid: list[dict[str, Any]]) -> str:
    """The no-floor row, the shipped floor, and the settings that empty >= 90 % of unrelated
    queries at the least cost."""
    from memories import search

    base = next(e for e in grid if e["answer_from"] == 0.0 and e["idf_share"] == search.KEYWORD_IDF_SHARE)
    shipped = next(
        e
        for e in grid
        if e["idf_share"] == search.KEYWORD_IDF_SHARE
        and e["answer_from"] == search.DEFAULT_FLOOR.answer_from
        and e["keep_from"] == search.DEFAULT_FLOOR.keep_from
    )
    names = [k for k in base if k.endswith("R@5")]

    def cost(e: dict[str, Any]) -> float:
        return float(max(base[n] - e[n] for n in names))

    settings = ("idf_share", "answer_from", "keep_from", "unrelated empty")
    good = sorted((e for e in grid if e["unrelated empty"] >= 0.9), key=cost)[:10]
    rows = [[*(e[s] for s in settings), *(e[n] for n in names)] for e in [base, shipped, *good]]
    return markdown_table(["IDF share", "answer from", "keep from", "unrelated empty", *names], rows) + (
        "\n\nRows: no floor; the shipped floor; the ten cheapest settings emptying >= 90 % of unrelated queries."
    )


if __name__ == "__main__":
    main()
