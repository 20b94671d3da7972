"""What a shorter embedded text costs in recall on LongMemEval-S: the same records embedded from
their first N characters (the worker's ``MAX_EMBEDDED_CHARS``: 500 since issue #37, 2,000 before),
ranked by meaning alone and fused with BM25, per cut:

    .venv/bin/python bench/lme_embed_cut.py [--questions 20] [--cuts 2000,1000,500,250] [--unit turns]

In process, nothing stored (Django is set up only for ``memories.sequence``): the first
``--questions`` dev questions with evidence; each haystack session's records as
``bench/lme_retrieval.py`` makes them (one user turn with the answer after it; ``--unit turns``:
each turn alone, as sessions are uploaded) and embedded as the worker embeds them
(``sequence.contextual_text``: the previous one's last 300 characters, a newline, the text, cut
to N); the question embedded as a query. Per cut:
``R_any@5`` / ``R_all@5`` of sessions ranked by their best record, by cosine alone ("dense") and
by reciprocal-rank fusion of the cosine ranking with BM25 over the full texts ("dense + BM25", a
stand-in for MMW's fusion, whose keyword side always reads the whole text), and the USE CPU
seconds the cut's vectors took (``time.process_time``). ``--others``: dense R@5 per cut on
LoCoMo dev and the multilingual set instead, and the share of their texts each cut shortens.

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, lme_retrieval
from bench.common import log, markdown_table

K = 5
RRF_K = 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--cuts", default="2000,1000,500,250")
    parser.add_argument(
        "--unit",
        choices=("records", "turns"),
        default="records",
        help="records (a user turn with its answer) or session turns (each turn alone)",
    )
    parser.add_argument("--others", action="store_true", help="LoCoMo dev and the multilingual set instead")
    common.add_data_dir(parser, common.ROOT / "var" / "bench-lme-cut")
    args = parser.parse_args()
    cuts = [int(c) for c in args.cuts.split(",")]
    common.setup_django(Path(args.data_dir).resolve())  # memories.sequence reads the models
    from memories.embeddings.registry import get_backend
    from memories.sequence import contextual_text

    backend = get_backend("use")
    if args.others:
        others(backend, cuts)
        return
    qs = [q for q in lme_retrieval.questions(None) if q.evidence and not q.qid.endswith("_abs")][: args.questions]
    haystacks = []
    for q in qs:
        docs: list[tuple[str, str, str | None]] = []  # session, record, previous record
        for sid, _, turns in q.sessions:
            previous = None
            texts = lme_retrieval.pairs(turns) if args.unit == "records" else [t["content"] or "." for t in turns]
            for text in texts:
                docs.append((sid, text, previous))
                previous = text
        haystacks.append(docs)
    queries = backend_queries(backend, [q.text for q in qs])
    bm25 = []
    for docs in haystacks:
        index = common.BM25([text for _, text, _ in docs])
        bm25.append(index)
    rows = []
    for cut in cuts:
        cpu = 0.0
        hits: dict[str, list[tuple[bool, bool]]] = {"dense": [], "dense + BM25": []}
        for q, docs, query, index in zip(qs, haystacks, queries, bm25, strict=True):
            texts = [contextual_text(text, previous, cut) for _, text, previous in docs]
            started = time.process_time()
            vectors = np.array(
                [v for i in range(0, len(texts), 64) for v in backend.embed_documents(texts[i : i + 64])]
            )
            cpu += time.process_time() - started
            cosine = vectors @ np.array(query)
            dense = list(np.argsort(-cosine))
            keyword = common.top_k(index.scores(q.text), len(docs), only_positive=True)
            fused: dict[int, float] = {}
            for ranking in (dense, keyword):
                for rank, i in enumerate(ranking):
                    fused[int(i)] = fused.get(int(i), 0.0) + 1.0 / (RRF_K + rank + 1)
            for label, order in (
                ("dense", [int(i) for i in dense]),
                ("dense + BM25", sorted(fused, key=lambda i: -fused[i])),
            ):
                sessions = list(dict.fromkeys(docs[i][0] for i in order))[:K]
                hits[label].append((bool(set(sessions) & q.evidence), q.evidence <= set(sessions)))
        n = sum(len(d) for d in haystacks)
        row = [str(cut), f"{n / cpu:.0f}"]
        for label in hits:
            row.append(f"{np.mean([a for a, _ in hits[label]]):.3f} / {np.mean([b for _, b in hits[label]]):.3f}")
        rows.append(row)
        log(f"cut {cut}: {row}")
    count = sum(len(d) for d in haystacks)
    print(f"bench/lme_embed_cut.py --unit {args.unit} --questions {len(qs)}: {count:,} {args.unit}, "
          f"mean {np.mean([len(t) for d in haystacks for _, t, _ in d]):.0f} characters\n")  # fmt: skip
    print(markdown_table(["characters embedded", f"{args.unit} per CPU-second", "dense R_any@5 / R_all@5",
                          "dense + BM25 R_any@5 / R_all@5"], rows))  # fmt: skip


def others(backend: Any, cuts: list[int]) -> None:
    """Dense R@5 per cut on LoCoMo dev and the multilingual set (their texts as the write path
    embeds them, ``retrieval.indexed_texts``; a text no longer than the cut keeps its vector)."""
    from bench import retrieval

    rows = []
    for data in (retrieval.locomo(), retrieval.multilingual()):
        full = retrieval.indexed_texts(data)
        queries = {q.qid: np.asarray(backend.embed_query(q.text)) for q in data.queries}
        for cut in cuts:
            texts = [t[:cut] for t in full]
            vectors = np.asarray(retrieval.embed_cached(backend, texts))
            ranks = []
            for workspace in data.workspaces():
                rows_of = [i for i, d in enumerate(data.docs) if d.workspace == workspace]
                matrix = vectors[rows_of]
                for q in (q for q in data.queries if q.workspace == workspace):
                    order = np.argsort(-(matrix @ queries[q.qid]))[:10]
                    ranks.append(common.rank_of([data.docs[rows_of[i]].key for i in order], set(q.relevant)))
            scores = common.recall_scores(ranks)
            changed = sum(len(t) > cut for t in full) / len(full)
            rows.append([data.name, str(cut), f"{changed:.1%}", f"{scores['R@5']:.3f}", f"{scores['MRR']:.3f}"])
            log(f"{data.name} cut {cut}: {rows[-1]}")
    print(markdown_table(["set", "characters embedded", "texts cut", "dense R@5", "dense MRR"], rows))


def backend_queries(backend: object, texts: list[str]) -> list[list[float]]:
    return [backend.embed_query(t) for t in texts]  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
