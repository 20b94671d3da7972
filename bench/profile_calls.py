"""Where a REST call's time goes, in process: SQL statements per call, and a cProfile of each.

Usage (a project of ``--size`` records is loaded once into the bench database, then reused)::

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/profile_calls.py --size 10000 --calls 60

Each operation (``search``, ``remember``, ``get``, ``history``, ``list_workspaces``) goes
through Django's full stack (middleware, DRF, the key check, the billing gate, the rate counters)
with the test client, so only the HTTP server is left out (compare ``/healthz`` through uvicorn in
``bench/run.py --only latency``). Printed per operation: p50 ms, SQL statements per call (the
statements of the last call are listed with ``--sql``), and the functions with the largest
cumulative time. The report also lands in ``bench/out/profile-<size>.txt``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, latency


def operations(client: Any, texts: latency.Texts, memory_id: str) -> dict[str, Callable[[], Any]]:
    def post(path: str, body: dict[str, Any]) -> Any:
        return client.post(path, body, content_type="application/json")

    return {
        "search": lambda: post("/api/v1/memories/search", {"query": texts.query()}),
        "remember": lambda: post("/api/v1/memories", {"content": texts.record()}),
        "get": lambda: client.get(f"/api/v1/memories/{memory_id}"),
        "history": lambda: client.get(f"/api/v1/memories/{memory_id}/history"),
        "list_workspaces": lambda: client.get("/api/v1/workspaces"),
    }


def profile_one(name: str, call: Callable[[], Any], calls: int, show_sql: bool) -> str:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(5):
        response = call()
        assert response.status_code < 400, (name, response.status_code, response.content[:300])
    timings: list[float] = []
    profiler = cProfile.Profile()
    for _ in range(calls):
        start = time.perf_counter()
        profiler.enable()
        call()
        profiler.disable()
        timings.append((time.perf_counter() - start) * 1000)
    with CaptureQueriesContext(connection) as queries:
        call()
    out = io.StringIO()
    p50 = statistics.median(timings)
    p95 = sorted(timings)[int(0.95 * (len(timings) - 1))]
    out.write(f"\n=== {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, {len(queries)} SQL statements per call\n")
    if show_sql:
        for q in queries.captured_queries:
            out.write(f"  [{q['time']}s] {q['sql'][:220]}\n")
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(r"(mmw|memories|accounts|billing|orgs|rest_framework|django)/", 28)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--only", nargs="+", help="operations to profile (default: all)")
    parser.add_argument("--sql", action="store_true", help="list the SQL of one call of each operation")
    parser.add_argument("--project", help="an existing bench project instead (goals-100000: bench/goals.py)")
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from django.test import Client

    from memories.models import Memory

    tenant = common.bench_tenant(args.project or f"profile-{args.size}")
    texts = latency.Texts()
    missing = args.size - latency.project_size(tenant)
    if missing > 0:
        latency.bulk_load(tenant, "default", missing, texts, "use")
        common.vacuum_analyze()
    memory = Memory.objects.filter(project_id=tenant.project_id).order_by("-created_at").first()
    assert memory is not None
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tenant.api_key}", SERVER_NAME="127.0.0.1")
    size = latency.project_size(tenant)
    report = [f"bench/profile_calls.py --size {args.size} --calls {args.calls} (project {size})"]
    for name, call in operations(client, texts, str(memory.pk)).items():
        if args.only and name not in args.only:
            continue
        report.append(profile_one(name, call, args.calls, args.sql))
        common.log(report[-1].splitlines()[1])
    text = "\n".join(report)
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / f"profile-{args.size}.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
