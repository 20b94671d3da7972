"""What ``other_workspaces`` costs a search (docs/search.md, "Other workspaces"), at 100k records.

    .venv/bin/python -m bench.elsewhere_cost [--size 100000] [--workspaces 10] [--queries 300]

One project of ``--size`` records spread over ``--workspaces`` workspaces (kept in
``var/bench-elsewhere`` between runs; loaded as ``bench/goals.py`` loads, each record two sentences
of the latency corpora with the sum of their USE vectors). In process, ``selectors.memory_search``
in the first workspace for ``--queries`` queries (a third the pool's sentences with limit 100 and a
third unrelated questions, both short answers that look elsewhere; a third ordinary, limit 10), each
query asked twice, interleaved: with the other-workspaces lookup (this code) and without it (the
lookup replaced by an empty answer: the code before it). Printed: p50 / p95 of both, the difference
of the p95s, and how many searches came back short (so looked elsewhere) and found something there.

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import random
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, goals, latency
from bench.common import log

DATA_DIR = common.ROOT / "var" / "bench-elsewhere"
UNRELATED = Path(__file__).resolve().parent / "data" / "unrelated.json"
PROJECT = "elsewhere"


def load(tenant: common.Tenant, size: int, workspaces: int) -> None:
    """Fill the project's workspaces ``ws0`` … up to ``size`` records in all (only what is missing)."""
    from django.utils import timezone

    from memories.embeddings import get_backend
    from memories.models import Memory

    have = Memory.objects.filter(project_id=tenant.project_id).count()
    if have >= size:
        log(f"{have} records already loaded")
        return
    texts = latency.Texts(seed=size)
    pool = goals._sentence_vectors(texts, DATA_DIR)
    model_id = get_backend("use").model_id
    rng = random.Random(size)
    per = (size - have) // workspaces
    start = timezone.now() - timedelta(days=goals.SPREAD_DAYS)
    for w in range(workspaces):
        target = common.load_target(tenant, f"ws{w}")
        done = 0
        while done < per:
            n = min(goals.CHUNK, per - done)
            pairs = [rng.sample(range(len(texts.pool)), 2) for _ in range(n)]
            summed = pool[[a for a, _ in pairs]] + pool[[b for _, b in pairs]]
            summed /= np.linalg.norm(summed, axis=1, keepdims=True)
            rows = [(f"{texts.pool[a]} {texts.pool[b]}", v.tolist()) for (a, b), v in zip(pairs, summed, strict=True)]
            created = [start + timedelta(seconds=rng.randrange(goals.SPREAD_DAYS * 86400)) for _ in range(n)]
            common.insert_archived(target, rows, model_id=model_id, source="elsewhere", first=done,
                                   batch_size=1000, created=created)  # fmt: skip
            done += n
        log(f"ws{w}: {per} records")
    common.vacuum_analyze()


def measure(tenant: common.Tenant, queries: list[tuple[str, int]]) -> dict[str, Any]:
    from accounts.keys import resolve_key
    from memories import selectors

    principal = resolve_key(tenant.api_key)
    assert principal is not None
    real = selectors.elsewhere
    timings: dict[str, list[float]] = {"with": [], "without": []}
    short = found = 0
    for query, limit in queries:
        for label in ("without", "with") if random.random() < 0.5 else ("with", "without"):
            selectors.elsewhere = real if label == "with" else (lambda *a, **k: [])
            payload = {"query": query, "workspace": "ws0", "limit": limit}
            started = time.perf_counter()
            answer = selectors.memory_search(principal=principal, payload=payload)
            timings[label].append((time.perf_counter() - started) * 1000)
            if label == "with":
                short += len(answer["results"]) < limit
                found += bool(answer["other_workspaces"])
    selectors.elsewhere = real
    out: dict[str, Any] = {k: common.summary_ms(v) for k, v in timings.items()}
    out["p95_added_ms"] = round(out["with"]["p95"] - out["without"]["p95"], 2)
    out["short"], out["found_elsewhere"], out["queries"] = short, found, len(queries)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--workspaces", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    common.setup_django(DATA_DIR)
    tenant = common.bench_tenant(PROJECT)
    load(tenant, args.size, args.workspaces)
    texts = latency.Texts(seed=7)
    rng = random.Random(7)
    unrelated = [q["query"] for q in json.loads(UNRELATED.read_text())["both"]]
    # Searches that come back short, so look elsewhere: a third of the corpus's own sentences asked
    # for 100 results (a sentence is in ~70 records of 100k), a third about nothing stored (the
    # floor answers []); and a third of ordinary searches with a full page (they look nowhere else).
    queries = [
        (rng.choice(texts.pool), 100) if i % 3 == 0 else (rng.choice(unrelated), 10) if i % 3 == 1
        else (rng.choice(texts.pool), 10)
        for i in range(args.queries)
    ]  # fmt: skip
    for query in queries[:20]:  # warm the model, the plans and the caches
        measure(tenant, [query])
    result = measure(tenant, queries)
    load_average = os.getloadavg()
    print(f"{args.size:,} records in {args.workspaces} workspaces; {args.queries} searches of ws0, load {load_average}")
    print(f"  without other_workspaces: p50 {result['without']['p50']:.1f} ms, p95 {result['without']['p95']:.1f} ms")
    print(f"  with other_workspaces:    p50 {result['with']['p50']:.1f} ms, p95 {result['with']['p95']:.1f} ms")
    print(f"  added to p95: {result['p95_added_ms']:+.1f} ms; short answers {result['short']}/{result['queries']}, "
          f"of which with other workspaces named {result['found_elsewhere']}")  # fmt: skip


if __name__ == "__main__":
    main()
