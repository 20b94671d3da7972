"""Contextual indexing of records that form a sequence (``memories.sequence``) on LoCoMo dev:
plain records against records indexed with their predecessor, at several keyword weights of
the predecessor's words, in one run (same machine, same query vectors).

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.sequence [--weights 0 0.15 0.3 0.5]

In process on the bench database: LoCoMo dev bulk-loaded twice with USE vectors
(``retrieval.bulk_load_dataset``: once plain, once as ``remember`` indexes a turn with a
``source_id`` and a ``position``), every question through the real rankers and fusion, without
the relevance floor (bench/floor.py measures that). A benchmark, not a test.
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
from bench.common import markdown_table


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
            keyword = search.keyword_ranking(
                scoped[q.workspace],  # type: ignore[arg-type]
                q.text,
                depth,
                lambda terms: search.term_stats(project_id, terms),
                context_weight=weight,
            )
            fused = search.fuse(
                [search.Ranking(keyword, search.KEYWORD_WEIGHT), search.Ranking(dense[q.qid], search.DENSE_WEIGHT)],
                retrieval.LIMIT,
            )
            ranked[q.qid] = [keys[str(c.id)] for c in fused]
        out[weight] = ranked
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=common.DEFAULT_DATA_DIR)
    parser.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.15, 0.3, 0.5])
    args = parser.parse_args()
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
