"""The relevance floor in small workspaces: what a new user with a handful of records gets.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.archive.floor_small \
        [--multilingual 1,3,10,30,168] [--locomo 10,30,100]

``bench/floor.py`` calibrates the floor on workspaces of 168 to 700 records. Here the same data
is cut into workspaces of ``k`` records — the multilingual set's facts at random, LoCoMo's first
two conversations in runs of ``k`` consecutive turns — and bulk-loaded (``floor.collect``: the real
rankers, the real ``VectorSum`` and the real fusion, at the shipped IDF share). Each question is
asked in the workspace holding its evidence (questions whose evidence spans two workspaces are
left out); ``unrelated.json``'s queries are asked in 12 workspaces drawn at random. Every list is
replayed with the real ``search.Floor`` (``floor.kept``) under four rules, in the same run:

- ``none`` — no floor;
- ``shipped`` — ``DEFAULT_FLOOR``, the background as the dense ranker's SQL reads it (a record's
  cosine with its workspace's sum *less the record itself*);
- ``record included`` — the same floor with the background the record is part of (before
  2026-12-04 afternoon), recomputed from the same vectors;
- ``no background`` — the same floor, background weight 0.

The lists' SQL backgrounds are checked against a numpy recomputation (largest difference logged,
with the median background of the records).
A benchmark, not a test: prints a table, writes ``bench/out/floor-small.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import dataclasses
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, floor, retrieval
from bench.archive import floor_background
from bench.common import log, markdown_table

UNRELATED_WORKSPACES = 12
RULES = ("none", "shipped", "record included", "no background")


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def partition(base: retrieval.Dataset, k: int, shuffle: bool) -> tuple[retrieval.Dataset, list[retrieval.Query]]:
    """``base`` cut into workspaces of ``k`` docs (shuffled first when ``shuffle``), its questions
    whose evidence lies in one workspace, and the unrelated queries of ``UNRELATED_WORKSPACES``
    of them."""
    rng = random.Random(k)
    docs = list(base.docs)
    if shuffle:
        rng.shuffle(docs)
    workspace_of = {d.key: f"{base.name}-{k}-{i // k:04d}" for i, d in enumerate(docs)}
    cut = [dataclasses.replace(d, workspace=workspace_of[d.key]) for d in base.docs]
    queries = [
        dataclasses.replace(q, workspace=workspace_of[next(iter(q.relevant))])
        for q in base.queries
        if q.relevant and q.relevant <= workspace_of.keys() and len({workspace_of[r] for r in q.relevant}) == 1
    ]
    data = retrieval.Dataset(base.name, cut, queries)
    chosen = data.workspaces()
    rng.shuffle(chosen)
    extra = [q for q in floor.unrelated_queries(data, base.name) if q.workspace in chosen[:UNRELATED_WORKSPACES]]
    return data, extra


def backgrounds(data: retrieval.Dataset, vectors: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    """Per doc key: its cosine with its workspace's sum less itself (0 when alone), and with the
    sum it is part of."""
    spaces = np.array([d.workspace for d in data.docs])
    without: dict[str, float] = {}
    within: dict[str, float] = {}
    for w in set(spaces):
        idx = np.where(spaces == w)[0]
        keys = [data.docs[i].key for i in idx]
        without.update(zip(keys, map(float, floor_background.workspace_background(vectors[idx])), strict=True))
        within.update(
            zip(
                keys, map(float, floor_background.workspace_background(vectors[idx], record_included=True)), strict=True
            )
        )
    return without, within


def measure(data: retrieval.Dataset, extra: list[retrieval.Query], backend_name: str) -> dict[str, Any]:
    """Every rule's R@5 (all, cross-lingual, same-language where the set has them) and share of
    unrelated queries answered ``[]``."""
    from memories import search
    from memories.embeddings import get_backend

    backend = get_backend(backend_name)
    lists = floor.collect(data, extra, backend_name)[str(search.KEYWORD_IDF_SHARE)]
    vectors = np.array(retrieval.embed_cached(backend, retrieval.indexed_texts(data)), dtype=np.float64)
    without, within = backgrounds(data, vectors)
    drift = max(
        (abs(bg - without[k]) for rows in lists.values() for k, _, cos, bg in rows if cos is not None), default=0.0
    )
    scale = search.cosine_scale(backend.model_id)
    result: dict[str, Any] = {
        "workspaces": len(data.workspaces()),
        "questions": len(data.queries),
        "drift": drift,
        "background median": round(float(np.median(list(without.values()))), 3),
    }
    for rule in RULES:
        weight = 0.0 if rule == "no background" else search.background_weight(backend.model_id)
        rule_floor = search.NO_FLOOR if rule == "none" else search.DEFAULT_FLOOR

        def rows(qid: str, rule: str = rule) -> list[floor.Row]:
            if rule != "record included":
                return lists[qid]
            return [(k, cov, cos, within[k]) for k, cov, cos, _ in lists[qid]]

        got = {q.qid: floor.kept(rows(q.qid), rule_floor, scale, weight) for q in data.queries}
        parts = retrieval.breakdown(data, got)
        entry = {"R@5": parts["all"]["R@5"]}
        for kind in ("cross-lingual", "same-language"):
            if f"kind={kind}" in parts:
                entry[f"{kind} R@5"] = parts[f"kind={kind}"]["R@5"]
        empty = sum(1 for q in extra if not floor.kept(rows(q.qid), rule_floor, scale, weight))
        entry["unrelated empty"] = round(empty / len(extra), 3) if extra else 0.0
        result[rule] = entry
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    parser.add_argument("--backend", default="use")
    parser.add_argument("--multilingual", default="1,3,10,30,168", help="workspace sizes for the multilingual set")
    parser.add_argument("--locomo", default="10,30,100", help="workspace sizes for LoCoMo (2 conversations)")
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from django.conf import settings

    settings.MMW_EMBEDDING_BACKEND = args.backend  # queries embedded by the model the records were
    plan = [("multilingual", k) for k in _sizes(args.multilingual)] + [("locomo", k) for k in _sizes(args.locomo)]
    bases = {"multilingual": retrieval.multilingual(), "locomo": retrieval.locomo(2)}
    out: list[dict[str, Any]] = []
    table = []
    for name, k in plan:
        with common.stopwatch() as took:
            data, extra = partition(bases[name], k, shuffle=name == "multilingual")
            result = measure(data, extra, args.backend)
        log(
            f"floor_small: {name} k={k}: {result['questions']} questions, {len(extra)} unrelated, {took():.0f}s,"
            f" median background {result['background median']:.3f},"
            f" largest SQL/numpy background difference {result['drift']:.1e}"
        )
        out.append({"corpus": name, "k": k, **result})
        for rule in RULES:
            r = result[rule]
            table.append(
                [
                    name,
                    k,
                    result["workspaces"],
                    rule,
                    r["R@5"],
                    r.get("cross-lingual R@5", "-"),
                    r.get("same-language R@5", "-"),
                    r["unrelated empty"],
                ]
            )
    print(
        markdown_table(
            [
                "corpus",
                "records per workspace",
                "workspaces",
                "floor",
                "R@5",
                "cross-lingual R@5",
                "same-language R@5",
                "unrelated empty",
            ],
            table,
        )
    )
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "floor-small.json").write_text(
        json.dumps({"command": " ".join(sys.argv), "results": out}, indent=1)
    )


if __name__ == "__main__":
    main()
