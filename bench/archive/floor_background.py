"""Which *background* the relevance floor should discount: a record's closeness to what?

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.archive.floor_background

Replays ``bench/floor.py``'s cached candidate lists (run it first: the lists of the current
ranking code must be in ``bench/out``) with the shipped joint floor rule (``search.Floor(answer,
0.25, joint=True)``: the best keyword coverage plus the best vector evidence answers), the vector
evidence being the scaled cosine less ``weight`` x the record's background, for several
backgrounds:

- ``workspace`` — the cosine with the sum of the workspace's other records' vectors (shipped:
  ``VectorSum`` less the record; recomputed here from the same vectors, and checked against the
  lists' own);
- ``workspace, record included`` — the cosine with the sum the record is part of (shipped until
  the small-workspace check, ``bench/archive/floor_small.py``);
- ``project`` — the same over the whole project (LoCoMo's five conversations are one project);
- ``neighbours`` — the mean cosine with the record's 10 nearest records of its workspace;
- ``docs corpus`` — a fixed centre: this repository's ``docs/*.md`` sentences (technical English);
- ``multilingual notes`` — a fixed centre: the multilingual set's records, for every workspace.

For each, the best (weight, answering floor) by unrelated queries emptied while LoCoMo R@5 and
cross-lingual R@5 stay within 0.01 of no floor. Vectors: the shipped backend's, of the texts as
indexed (``retrieval.indexed_texts``). A benchmark, not a test; prints a table, writes
``bench/out/floor-background.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, floor, retrieval
from bench.common import log, markdown_table

WEIGHTS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4)
ANSWERS = tuple(round(0.2 + 0.01 * i, 2) for i in range(41))  # 0.20 .. 0.60


def _unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v)
    return out


def workspace_background(d: np.ndarray, *, record_included: bool = False) -> np.ndarray:
    """Each row of ``d`` (one workspace's vectors): its cosine with the sum of the others, as
    ``sql.nearest_statement`` computes it (0 for a lone row), or with the sum it is part of."""
    total = d.sum(0)
    if record_included:
        out: np.ndarray = d @ _unit(total) / np.linalg.norm(d, axis=1)
        return out
    if len(d) < 2:
        return np.zeros(len(d))
    rest = total - d
    out = (d * rest).sum(1) / np.linalg.norm(d, axis=1) / np.linalg.norm(rest, axis=1)
    return out


def _docs_sentences() -> list[str]:
    texts = []
    for path in sorted((Path(__file__).resolve().parents[2] / "docs").glob("*.md")):
        body = re.sub(r"`[^`]*`", " ", path.read_text())
        for part in re.split(r"(?<=[.!?])\s+|\n\s*\n", body):
            sentence = " ".join(part.split())
            if 30 <= len(sentence) <= 400 and not sentence.startswith("|"):
                texts.append(sentence)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from memories import search
    from memories.embeddings import get_backend

    backend = get_backend("use")
    scale = search.cosine_scale(backend.model_id)
    corpora = {"locomo": retrieval.locomo(), "multilingual": retrieval.multilingual()}
    vectors: dict[str, np.ndarray] = {}
    keys: dict[str, dict[str, int]] = {}
    workspaces: dict[str, np.ndarray] = {}
    for name, data in corpora.items():
        vectors[name] = np.array(retrieval.embed_cached(backend, retrieval.indexed_texts(data)), dtype=np.float32)
        keys[name] = {d.key: i for i, d in enumerate(data.docs)}
        workspaces[name] = np.array([d.workspace for d in data.docs])
    lists = {}
    for name, data in corpora.items():
        extra = floor.unrelated_queries(data, name)
        found = sorted(common.OUT_DIR.glob(f"floor-{name}-use-{len(data.queries)}-{floor._source_hash()}.json"))
        if not found:
            sys.exit("run bench.floor first: no candidate lists of the current ranking code in bench/out")
        lists[name] = (data, extra, json.loads(found[0].read_text())[str(search.KEYWORD_IDF_SHARE)])

    # Each background: doc index -> its background cosine, per corpus.
    backgrounds: dict[str, dict[str, np.ndarray]] = {}
    fixed = {
        "docs corpus": _unit(np.array(backend.embed_documents(_docs_sentences()), dtype=np.float32).mean(0)),
        "multilingual notes": _unit(vectors["multilingual"].mean(0)),
    }
    for label in ("workspace", "workspace, record included", "project", "neighbours", *fixed):
        backgrounds[label] = {}
        for name in corpora:
            d, ws = vectors[name], workspaces[name]
            out = np.zeros(len(d))
            for w in set(ws):
                idx = np.where(ws == w)[0]
                if label.startswith("workspace"):
                    out[idx] = workspace_background(d[idx], record_included=label != "workspace")
                elif label == "project":
                    out[idx] = d[idx] @ _unit(d.sum(0))
                elif label == "neighbours":
                    sims = d[idx] @ d[idx].T
                    np.fill_diagonal(sims, -1.0)
                    out[idx] = np.sort(sims, axis=1)[:, -10:].mean(axis=1)
                else:
                    out[idx] = d[idx] @ fixed[label]
            backgrounds[label][name] = out
    drift = max(
        abs(bg - backgrounds["workspace"][name][keys[name][k]])
        for name, (_, _, ranked) in lists.items()
        for rows in ranked.values()
        for k, _, cos, bg in rows
        if cos is not None
    )
    log(f"floor_background: the lists' background (VectorSum, SQL) vs numpy: max difference {drift:.2e}")

    def evaluate(label: str, weight: float, answer: float) -> dict[str, float]:
        rule = search.Floor(answer, search.DEFAULT_FLOOR.keep_from, joint=True)
        hit: dict[str, list[bool]] = {"locomo": [], "cross-lingual": []}
        empty = total = 0
        for name, (data, extra, ranked) in lists.items():
            bg = backgrounds[label][name]
            for q in [*data.queries, *extra]:
                rows = [(k, cov, cos, float(bg[keys[name][k]])) for k, cov, cos, _ in ranked[q.qid]]
                got = floor.kept(rows, rule, scale, weight)
                if q in extra:
                    total += 1
                    empty += not got
                elif name == "locomo":
                    hit["locomo"].append(bool(set(got[:5]) & q.relevant))
                elif q.group.get("kind") == "cross-lingual":
                    hit["cross-lingual"].append(bool(set(got[:5]) & q.relevant))
        return {
            "unrelated empty": round(empty / total, 3),
            "locomo R@5": round(float(np.mean(hit["locomo"])), 3),
            "cross-lingual R@5": round(float(np.mean(hit["cross-lingual"])), 3),
        }

    base = evaluate_none(lists, scale)
    rows = [["no floor", "-", base["unrelated empty"], base["locomo R@5"], base["cross-lingual R@5"]]]
    results: dict[str, Any] = {"no floor": base}
    for label in backgrounds:
        best = None
        for weight in WEIGHTS:
            for answer in ANSWERS:
                f = evaluate(label, weight, answer)
                fits = all(base[g] - f[g] <= 0.01 + 1e-9 for g in ("locomo R@5", "cross-lingual R@5"))
                if fits and (best is None or f["unrelated empty"] > best[0]["unrelated empty"]):
                    best = (f, weight, answer)
        results[label] = best
        if best:
            f, weight, answer = best
            rows.append([label, f"{weight} / {answer}", f["unrelated empty"], f["locomo R@5"], f["cross-lingual R@5"]])
        log(f"floor_background: {label} done")
    print(
        markdown_table(
            ["background", "weight / answer from", "unrelated empty", "LoCoMo R@5", "cross-lingual R@5"], rows
        )
    )
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "floor-background.json").write_text(json.dumps(results, indent=1, default=str))


def evaluate_none(lists: dict[str, Any], scale: Any) -> dict[str, float]:
    """No floor: every candidate, best first."""
    from memories import search

    hit: dict[str, list[bool]] = {"locomo": [], "cross-lingual": []}
    for name, (data, _, ranked) in lists.items():
        for q in data.queries:
            got = floor.kept(ranked[q.qid], search.NO_FLOOR, scale)
            if name == "locomo":
                hit["locomo"].append(bool(set(got[:5]) & q.relevant))
            elif q.group.get("kind") == "cross-lingual":
                hit["cross-lingual"].append(bool(set(got[:5]) & q.relevant))
    return {
        "unrelated empty": 0.0,
        "locomo R@5": round(float(np.mean(hit["locomo"])), 3),
        "cross-lingual R@5": round(float(np.mean(hit["cross-lingual"])), 3),
    }


if __name__ == "__main__":
    main()
