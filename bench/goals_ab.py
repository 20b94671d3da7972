"""Issue #19's REST goals, before and after, in one run: two (or more) servers on the same project.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/goals_ab.py --before /tmp/before \
        [--also LABEL=/tmp/other ...] [--explain] [--only search] [--calls 100] [--size 100000]

``--before`` is another checkout (``git archive <rev> | tar -x -C /tmp/before``, with a ``.venv``
link): it serves with its own code beside this checkout's, both ``manage.py serve --no-worker`` on
the same database (``bench/goals.py``'s project, loaded by it). ``--also LABEL=PATH`` serves one
more checkout the same way (repeatable: e.g. the commit between the two). ``--explain`` adds the
series "after, explain on": this checkout's server asked the same searches with ``explain: true``
(what a search costs when it asks why). Each round sends every operation to every series back to
back, the series' order rotating from round to round, with the same query text, so the machine's
noise (two shared cores) hits all alike; ``/healthz`` of each is measured the same way. ``--only``
measures some operations (``/healthz`` always). Prints p50 / p95 per operation and series and each
series' ratios to ``before``. A benchmark, not a test.

The checkouts serve today's schema (migrated by this checkout): compare code whose models the
database still fits (a newer schema that only adds tables, columns with defaults and indexes).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import contextlib
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common, goals, latency
from bench.common import markdown_table

OPERATIONS = ("healthz", "search", "remember", "get", "history", "list_workspaces")
EXPLAIN_SERIES = "after, explain on"


@dataclass
class Series:
    """One column of the comparison: a server, and what its searches add to the body."""

    name: str
    url: str
    search_extra: dict[str, Any] = field(default_factory=dict)

    @property
    def only_search(self) -> bool:
        return bool(self.search_extra)


def measure(
    series: list[Series], key: str, ids: list[str], calls: int, operations: tuple[str, ...]
) -> dict[str, dict[str, list[float]]]:
    """ms per operation per series, each call sent to every series back to back."""
    texts = latency.Texts(seed=11)
    rng = random.Random(5)
    clients = {
        s.name: httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) for s in series
    }
    samples: dict[str, dict[str, list[float]]] = {s.name: {op: [] for op in operations} for s in series}
    try:
        for i in range(goals.WARMUP + calls):
            shift = i % len(series)
            order = series[shift:] + series[:shift]
            for op in operations:
                query, record, memory_id = texts.query(), texts.record(), rng.choice(ids)
                for s in order:
                    if s.only_search and op != "search":
                        continue
                    method, path, body = {
                        "healthz": ("GET", "/healthz", None),
                        "search": ("POST", "/api/v1/memories/search", {"query": query, **s.search_extra}),
                        "remember": ("POST", "/api/v1/memories", {"content": f"{record} ({s.name})"}),
                        "get": ("GET", f"/api/v1/memories/{memory_id}", None),
                        "history": ("GET", f"/api/v1/memories/{memory_id}/history", None),
                        "list_workspaces": ("GET", "/api/v1/workspaces", None),
                    }[op]
                    start = time.perf_counter()
                    response = clients[s.name].request(method, path, json=body)
                    elapsed = (time.perf_counter() - start) * 1000
                    if response.status_code >= 400:
                        raise RuntimeError(f"{s.name} {method} {path}: {response.status_code} {response.text[:200]}")
                    if i == 0 and s.search_extra.get("explain") and "explain" not in response.json():
                        raise RuntimeError(f"{s.name}: the answer carries no explain")
                    if i >= goals.WARMUP:
                        samples[s.name][op].append(elapsed)
    finally:
        for client in clients.values():
            client.close()
    return samples


def main() -> None:
    parser = goals.ab_parser(__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument(
        "--also", action="append", default=[], metavar="LABEL=PATH", help="one more checkout to serve beside"
    )
    parser.add_argument("--explain", action="store_true", help="add this checkout's searches with explain: true")
    parser.add_argument("--only", nargs="+", choices=OPERATIONS[1:], help="measure these operations (and /healthz)")
    args = parser.parse_args()
    operations = ("healthz", *args.only) if args.only else OPERATIONS
    data_dir = args.data_dir.resolve()
    tenant, ids = goals.loaded_project(data_dir, args.size)
    # As bench/goals.py: room above the project's size for the measured ``remember`` calls.
    os.environ.setdefault("MMW_MAX_MEMORIES_PER_WORKSPACE", str(max(goals.ONE_MILLION, 2 * args.size)))
    checkouts = [("before", args.before.resolve())]
    for also in args.also:
        label, _, path = also.partition("=")
        if not path:
            parser.error(f"--also {also}: LABEL=PATH")
        checkouts.append((label, Path(path).resolve()))
    with contextlib.ExitStack() as stack:
        after = stack.enter_context(common.Server(data_dir, "use", "goals-ab-after"))
        servers = {
            label: stack.enter_context(common.Server(data_dir, "use", f"goals-ab-{label}", root=root, broker=False))
            for label, root in checkouts
        }
        series = [Series(label, server.url) for label, server in servers.items()]
        series.append(Series("after", after.url))
        if args.explain:
            series.append(Series(EXPLAIN_SERIES, after.url, {"explain": True}))
        load = os.getloadavg()[0]
        samples = measure(series, tenant.api_key, ids, args.calls, operations)
        load_end = os.getloadavg()[0]
    rows = []
    for op in operations:
        base = common.summary_ms(samples["before"][op])
        for s in series:
            if not samples[s.name][op]:
                continue
            m = common.summary_ms(samples[s.name][op])
            ratios = (
                ("", "") if s.name == "before" else (f"{m['p50'] / base['p50']:.2f}x", f"{m['p95'] / base['p95']:.2f}x")
            )
            rows.append([op, s.name, f"{m['p50']}", f"{m['p95']}", *ratios])
    command = " ".join(
        ["bench/goals_ab.py", f"--before {args.before}"]
        + [f"--also {a}" for a in args.also]
        + (["--explain"] if args.explain else [])
        + ([f"--only {' '.join(args.only)}"] if args.only else [])
        + [f"--calls {args.calls}", f"--size {args.size}"]
    )
    print(
        f"`{command}` — {latency.project_size(tenant):,} records, "
        f"after = git {common.machine_notes()['git']}; load average {load:.2f}–{load_end:.2f}. ms:\n"
    )
    print(markdown_table(["REST call", "series", "p50", "p95", "p50 / before", "p95 / before"], rows))


if __name__ == "__main__":
    main()
