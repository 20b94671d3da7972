"""Fitting and checking the score a search result shows (``memories.confidence``).

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.score_fit

In process, on the bench database: LoCoMo dev (one workspace per conversation) and the
multilingual set are bulk-loaded with USE vectors (``retrieval.bulk_load_dataset``); every question,
and every query of ``bench/data/unrelated.json`` in every workspace it is unrelated to, goes through
the real rankers and fusion without a floor. For each of the top 10 fused results it keeps the
keyword coverage, the cosine and the workspace background, and whether it answers.

Queries are split in two halves by a hash of their id. A logistic regression on the first half
(both sets, each weighted equally) gives the weights of (coverage, evidence in scale units,
ln(1 + rank)); the report compares, on the other half, the score shown before (the best ranker's
relevance, clamped at 1) with the fitted one: AUC of answering against other top-10 results, how
often a non-answering result in the top 5 shows at least the first result's score when that
result answers, the median first score for answered and for unrelated queries, and R@5 when
the top 10 are re-ranked by the score (to show why the order stays the fusion's).

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import math
import statistics
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, floor, retrieval
from bench.common import log, markdown_table

TOP = 10
# (doc key, coverage, cosine or None, background, rank)
Row = tuple[str, float, float | None, float, int]


def collect(data: retrieval.Dataset, extra: list[retrieval.Query]) -> dict[str, list[Row]]:
    """The top ``TOP`` fused results of every query, unfloored, with their signals."""
    from accounts.keys import resolve_key
    from memories import search, selectors, sequence, vectors

    common.reset_memories()
    api_key, keys = retrieval.bulk_load_dataset(data, "use")
    principal = resolve_key(api_key)
    assert principal is not None
    project_id = principal.project.pk
    scoped = {ws: selectors.memory_queryset(principal=principal, workspace=ws) for ws in data.workspaces()}
    depth = max(search.MIN_CANDIDATES, 4 * TOP)
    out: dict[str, list[Row]] = {}
    for query in [*data.queries, *extra]:
        qs = scoped[query.workspace]
        assert qs is not None
        embedded = vectors.embed_query(query.text)
        assert embedded is not None
        dense = search.nearest(qs, embedded[0], embedded[1].model_id, depth)
        keyword = search.keyword_hits(qs, query.text, depth, project_id, context_weight=sequence.CONTEXT_WEIGHT)
        cosine = {c.id: c.score for c in dense}
        background = {c.id: c.background for c in dense}
        cover = {c.id: c.relevance for c in keyword}
        fused = search.fuse([search.Ranking(keyword, search.KEYWORD_WEIGHT), search.Ranking(dense, 1.0)], TOP)
        out[query.qid] = [
            (keys[str(c.id)], cover.get(c.id, 0.0), cosine.get(c.id), background.get(c.id, 0.0), i)
            for i, c in enumerate(fused)
        ]
    return out


def features(row: Row) -> list[float]:
    """What ``memories.confidence.probability`` reads: coverage, evidence units (clipped; the
    low end less one unit without a vector), ln(1 + rank)."""
    from memories import confidence, search

    _, coverage, cos, background, rank = row
    scale = search.cosine_scale("use-multilingual-v3@512")
    if cos is None:
        units = confidence.NO_VECTOR
    else:
        low, high = confidence.EVIDENCE_RANGE
        units = min(high, max(low, scale.units(cos - search.BACKGROUND_WEIGHT * background)))
    return [coverage, units, math.log1p(rank)]


def shipped(row: Row) -> float:
    """The score shown by this code (before the list's ``descending``)."""
    from memories import confidence

    coverage, units, log_rank = features(row)
    return confidence.probability(coverage, units, round(math.expm1(log_rank)))


def before(row: Row) -> float:
    """The score shown before: the best ranker's relevance (the cosine clamped at the scale's top)."""
    from memories import search

    scale = search.cosine_scale("use-multilingual-v3@512")
    return max(row[1], scale.relevance(row[2]) if row[2] is not None else 0.0)


Lists = dict[str, tuple[dict[str, list[Row]], dict[str, set[str]]]]


def half_of(qid: str) -> int:
    return zlib.crc32(qid.encode()) % 2


def rows_of(lists: Lists, name: str, half: int | None) -> Iterator[tuple[list[Row], set[str]]]:
    ranked, relevant = lists[name]
    for qid, rows in ranked.items():
        if half is None or half_of(qid) == half:
            yield rows, relevant[qid]


def fit(lists: Lists, half: int, l2: float = 1e-3, steps: int = 4000, rate: float = 0.5) -> np.ndarray:
    """Logistic regression of "answers" on ``features`` over ``half``, each set weighted equally."""
    x, y, w = [], [], []
    for name in lists:
        queries = list(rows_of(lists, name, half))
        for rows, relevant in queries:
            for row in rows:
                x.append([*features(row), 1.0])
                y.append(1.0 if row[0] in relevant else 0.0)
                w.append(1.0 / len(queries))
    xs, ys, ws = np.array(x), np.array(y), np.array(w) / sum(w)
    weights = np.zeros(xs.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-xs @ weights))
        weights -= rate * (xs.T @ ((p - ys) * ws) + l2 * weights)
    return weights


def auc(positive: list[float], negative: list[float]) -> float:
    """The chance an answering result outscores another (ties count half)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / max(1, len(positive) * len(negative))


def evaluate(lists: Lists, name: str, half: int, score: Callable[[Row], float]) -> dict[str, Any]:
    positive: list[float] = []
    negative: list[float] = []
    first_answered: list[float] = []
    first_unrelated: list[float] = []
    answered_first = tied = 0
    recall = reranked = asked = 0
    for rows, relevant in rows_of(lists, name, half):
        scores = [score(r) for r in rows]
        if not relevant:
            first_unrelated.extend(scores[:1])
            continue
        asked += 1
        recall += any(r[0] in relevant for r in rows[:5])
        by_score = [r for _, r in sorted(zip(scores, rows, strict=True), key=lambda pair: -pair[0])]
        reranked += any(r[0] in relevant for r in by_score[:5])
        for row, value in zip(rows, scores, strict=True):
            (positive if row[0] in relevant else negative).append(value)
        if rows and rows[0][0] in relevant:
            answered_first += 1
            first_answered.append(scores[0])
            others = [v for r, v in zip(rows[:5], scores[:5], strict=True) if r[0] not in relevant]
            tied += bool(others) and max(others) >= scores[0]
    return {
        "auc": auc(positive, negative),
        "tied_at_top": tied / max(1, answered_first),
        "first_answered": statistics.median(first_answered) if first_answered else float("nan"),
        "first_unrelated": statistics.median(first_unrelated) if first_unrelated else float("nan"),
        "r5": recall / max(1, asked),
        "r5_reranked": reranked / max(1, asked),
    }


def main() -> None:
    common.setup_django(common.data_dir())
    from memories import confidence

    lists: Lists = {}
    for name, data in (("locomo", retrieval.locomo()), ("multilingual", retrieval.multilingual())):
        log(f"collecting {name}")
        extra = floor.unrelated_queries(data, name)
        ranked = collect(data, extra)
        lists[name] = (ranked, {q.qid: set(q.relevant) for q in [*data.queries, *extra]})
    weights = fit(lists, half=0)
    print(f"fitted on half 0: weights (coverage, evidence, ln(1+rank)) {np.round(weights[:3], 3).tolist()}, "
          f"bias {weights[3]:.3f}; shipped {confidence.WEIGHTS}, bias {confidence.BIAS}")  # fmt: skip
    rows = []
    for name in lists:
        for label, score in (("before (best relevance, clamped)", before), ("shipped (memories.confidence)", shipped)):
            for half in (0, 1):
                e = evaluate(lists, name, half, score)
                rows.append([name, label, "dev" if half == 0 else "held-out", f"{e['auc']:.3f}",
                             f"{e['tied_at_top']:.1%}", f"{e['first_answered']:.3f}", f"{e['first_unrelated']:.3f}",
                             f"{e['r5']:.3f} / {e['r5_reranked']:.3f}"])  # fmt: skip
    header = ["set", "score", "half", "AUC answering vs other top-10", "other ≥ answer at top",
              "median first score: answered", "unrelated queries", "R@5 fused / re-ranked by score"]  # fmt: skip
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
