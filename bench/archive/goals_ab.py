"""Issue #19's REST goals, before and after, in one run: two servers on the same 100k project.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/archive/goals_ab.py --before /tmp/before [--calls 100]

``--before`` is another checkout (``git archive <rev> | tar -x -C /tmp/before``, with a ``.venv``
link): it serves with its own code beside this checkout's, both ``manage.py serve --no-worker`` on
the same database (``bench/goals.py``'s project, loaded by it). Each operation is sent to one
server then the other, alternating which goes first, with the same query text, so the machine's
noise (two shared cores) hits both alike; ``/healthz`` of each is measured the same way. Prints
p50 / p95 per operation and server and the after/before ratios. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, goals, latency
from bench.common import markdown_table

OPERATIONS = ("healthz", "search", "remember", "get", "history", "list_workspaces")


def measure(urls: dict[str, str], key: str, ids: list[str], calls: int) -> dict[str, dict[str, list[float]]]:
    """ms per operation per server, each call sent to both servers back to back."""
    texts = latency.Texts(seed=11)
    rng = random.Random(5)
    clients = {
        name: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        for name, url in urls.items()
    }
    samples: dict[str, dict[str, list[float]]] = {name: {op: [] for op in OPERATIONS} for name in urls}
    try:
        for i in range(goals.WARMUP + calls):
            order = list(urls) if i % 2 == 0 else list(reversed(urls))
            for op in OPERATIONS:
                query, record, memory_id = texts.query(), texts.record(), rng.choice(ids)
                request: tuple[str, str, Any] = {
                    "healthz": ("GET", "/healthz", None),
                    "search": ("POST", "/api/v1/memories/search", {"query": query}),
                    "remember": ("POST", "/api/v1/memories", {"content": record}),
                    "get": ("GET", f"/api/v1/memories/{memory_id}", None),
                    "history": ("GET", f"/api/v1/memories/{memory_id}/history", None),
                    "list_workspaces": ("GET", "/api/v1/workspaces", None),
                }[op]
                for name in order:
                    method, path, body = request
                    if op == "remember":
                        body = {"content": f"{record} ({name})"}
                    start = time.perf_counter()
                    response = clients[name].request(method, path, json=body)
                    elapsed = (time.perf_counter() - start) * 1000
                    if response.status_code >= 400:
                        raise RuntimeError(f"{name} {method} {path}: {response.status_code} {response.text[:200]}")
                    if i >= goals.WARMUP:
                        samples[name][op].append(elapsed)
    finally:
        for client in clients.values():
            client.close()
    return samples


def main() -> None:
    parser = goals.ab_parser(__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    tenant, ids = goals.loaded_project(data_dir, args.size)
    # As bench/goals.py: room above the project's size for the measured ``remember`` calls.
    os.environ.setdefault("MMW_MAX_MEMORIES_PER_WORKSPACE", str(max(goals.ONE_MILLION, 2 * args.size)))
    before = common.Server(data_dir, "use", "goals-ab-before", root=args.before.resolve(), broker=False)
    with common.Server(data_dir, "use", "goals-ab-after") as after, before:
        load = os.getloadavg()[0]
        samples = measure({"before": before.url, "after": after.url}, tenant.api_key, ids, args.calls)
        load_end = os.getloadavg()[0]
    summary = {name: {op: common.summary_ms(v) for op, v in ops.items()} for name, ops in samples.items()}
    rows = []
    for op in OPERATIONS:
        b, a = summary["before"][op], summary["after"][op]
        rows.append(
            [
                op,
                f"{b['p50']} / {b['p95']}",
                f"{a['p50']} / {a['p95']}",
                f"{a['p50'] / b['p50']:.2f}x",
                f"{a['p95'] / b['p95']:.2f}x",
            ]
        )
    print(
        f"`bench/archive/goals_ab.py --before {args.before} --calls {args.calls}` — "
        f"{latency.project_size(tenant):,} records, "
        f"after = git {common.machine_notes()['git']}; load average {load:.2f}–{load_end:.2f}. ms p50 / p95:\n"
    )
    print(markdown_table(["REST call", "before", "after", "p50 after/before", "p95 after/before"], rows))


if __name__ == "__main__":
    main()
