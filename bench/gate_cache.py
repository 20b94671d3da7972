"""Before/after of ``billing.state_cache`` (the call gate's subscription row kept 1 s), in process,
interleaved in one run:

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/gate_cache.py [--size 10000] [--calls 200]

REST ``get``, ``list_workspaces`` and ``search`` through Django's whole stack (the test client:
middleware, DRF, the key check, the billing gate, the rate counter; no HTTP server) on
``bench/goals.py``'s project, each call made once with ``MMW_BILLING_CACHE_SECONDS=0`` (before: the
subscription read on every call) and once with 1 (after), alternating. Prints statements per call,
ms p50 / p95 and the ratio after/before of the p50s. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, goals, latency
from bench.common import log, markdown_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=common.DEFAULT_DATA_DIR)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    tenant = common.bench_tenant(f"goals-{args.size}")
    ids = goals.some_ids(tenant)
    texts = latency.Texts(seed=5)
    rng = random.Random(1)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tenant.api_key}", SERVER_NAME="127.0.0.1")
    ops: dict[str, Callable[[], Any]] = {
        "get": lambda: client.get(f"/api/v1/memories/{rng.choice(ids)}"),
        "list_workspaces": lambda: client.get("/api/v1/workspaces"),
        "search": lambda: client.post(
            "/api/v1/memories/search", {"query": texts.query()}, content_type="application/json"
        ),
    }
    variants = {"before (cache off)": 0.0, "after (1 s)": 1.0}
    samples: dict[tuple[str, str], list[float]] = {(o, v): [] for o in ops for v in variants}
    counts: dict[tuple[str, str], int] = {}
    load = os.getloadavg()[0]
    for i in range(args.calls + 5):
        for op_name, op in ops.items():
            for variant, ttl in variants.items():
                settings.MMW_BILLING_CACHE_SECONDS = ttl
                start = time.perf_counter()
                with CaptureQueriesContext(connection) as captured:
                    response = op()
                elapsed = (time.perf_counter() - start) * 1000
                assert response.status_code == 200, response.content[:200]
                if i >= 5:
                    samples[(op_name, variant)].append(elapsed)
                    counts[(op_name, variant)] = len(captured.captured_queries)
    rows = []
    for op_name in ops:
        before = common.summary_ms(samples[(op_name, "before (cache off)")])
        after = common.summary_ms(samples[(op_name, "after (1 s)")])
        for variant, s in (("before (cache off)", before), ("after (1 s)", after)):
            rows.append([op_name, variant, counts[(op_name, variant)], f"{s['p50']} / {s['p95']}", ""])
        rows[-1][-1] = f"{after['p50'] / before['p50']:.2f}x"
    print(
        f"bench/gate_cache.py --size {args.size} --calls {args.calls}: project of "
        f"{latency.project_size(tenant):,} records, load average {load:.2f}–{os.getloadavg()[0]:.2f}, "
        f"git {common.machine_notes()['git']}"
    )
    print(markdown_table(["call", "variant", "statements", "ms p50 / p95", "after/before p50"], rows))
    log("done")


if __name__ == "__main__":
    main()
