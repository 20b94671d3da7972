"""Before/after of the two per-call savings of issue #19's profile, in process, interleaved in one run:

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/archive/gate_cache.py [--size 10000] [--calls 200]

REST ``get``, ``list_workspaces`` and ``search`` through Django's whole stack (the test client:
middleware, DRF, the key check, the billing gate, the rate counter; no HTTP server) on
``bench/goals.py``'s project, each call made once with ``MMW_BILLING_CACHE_SECONDS=0`` (before: the
subscription read on every call) and once with 1 (after), alternating. Prints statements per call,
ms p50 / p95 and the ratio after/before of the p50s.

Then the MCP endpoint's key verification (``interfaces.mcp_server.auth.ApiKeyVerifier``) of a cached key,
on one event loop: before, ``resolve_key`` in a worker thread (``run_sync``); after,
``cached_principal`` on the loop; alternating, µs p50 / p95. A benchmark, not a test.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, goals, latency
from bench.common import log, markdown_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser)
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
    counts: dict[tuple[str, str], set[int]] = {}
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
                    counts.setdefault((op_name, variant), set()).add(len(captured.captured_queries))
    rows = []
    for op_name in ops:
        before = common.summary_ms(samples[(op_name, "before (cache off)")])
        after = common.summary_ms(samples[(op_name, "after (1 s)")])
        for variant, s in (("before (cache off)", before), ("after (1 s)", after)):
            seen = counts[(op_name, variant)]
            statements = f"{min(seen)}–{max(seen)}" if len(seen) > 1 else str(min(seen))
            rows.append([op_name, variant, statements, f"{s['p50']} / {s['p95']}", ""])
        rows[-1][-1] = f"{after['p50'] / before['p50']:.2f}x"
    print(
        f"bench/archive/gate_cache.py --size {args.size} --calls {args.calls}: project of "
        f"{latency.project_size(tenant):,} records, load average {load:.2f}–{os.getloadavg()[0]:.2f}, "
        f"git {common.machine_notes()['git']}"
    )
    print(markdown_table(["call", "variant", "statements", "ms p50 / p95", "after/before p50"], rows))
    print()
    print(verify_table(tenant.api_key, args.calls * 3))
    log("done")


def verify_table(key: str, calls: int) -> str:
    """µs per MCP key verification of a cached key: in a worker thread (before) or on the loop."""
    import asyncio

    from accounts.keys import cached_principal, resolve_key
    from interfaces.threads import run_sync

    async def before() -> object:
        return await run_sync(resolve_key, key)

    async def after() -> object:
        return cached_principal(key) or await run_sync(resolve_key, key)

    async def measure() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {
            "before: resolve_key in a worker thread": [],
            "after: cache read on the loop": [],
        }
        for i in range(calls + 20):
            for values, fn in zip(samples.values(), (before, after), strict=True):
                start = time.perf_counter()
                assert await fn() is not None
                if i >= 20:
                    values.append((time.perf_counter() - start) * 1e6)
        return samples

    resolve_key(key)  # cached
    samples = asyncio.run(measure())
    rows = []
    summaries = {name: common.summary_ms(values) for name, values in samples.items()}  # µs here
    for name, s in summaries.items():
        rows.append(["MCP key verification (cached key)", name, f"{s['p50']} / {s['p95']}", ""])
    first, last = summaries.values()
    rows[-1][-1] = f"{last['p50'] / first['p50']:.2f}x"
    return markdown_table(["step", "variant", "µs p50 / p95", "after/before p50"], rows)


if __name__ == "__main__":
    main()
