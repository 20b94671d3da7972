"""Where one search's time goes, part by part, in process, on a loaded ``bench/goals.py`` project:

    .venv/bin/python bench/archive/search_parts.py --data-dir var/bench-1m --size 1000000 [--calls 300]

Each call is ``memories.selectors.memory_search`` (what REST and MCP call) with ``goals.py``'s
queries, autocommit as in a web request, with a psycopg pool of 4 beside Django's connection as
``manage.py serve`` lends the dense ranker (``mmw.db.aside``). The core's functions are wrapped
by timers for the run (nothing in the server changes); per call the bench records:

- ``total``: the whole ``memory_search``;
- ``admission``: ``begin_read`` (the billing gate and the rate counters);
- ``scope``: ``search_scope`` (the caller's readable workspaces, compiled once);
- ``term stats``: the ``TermStat`` read of the query's words;
- ``window``: the recency window's bucket counts (only broad queries ask);
- ``keyword statement``: ``sql.keyword_ranked``;
- ``embed``: the query embedding (in the embedding thread, beside the keyword ranker);
- ``dense aside``: the dense ranker on the side connection (in the embedding thread);
- ``dense wait``: how long the request's thread waited for the embedding thread after its own
  keyword ranking (the part of embed + dense aside not hidden behind it);
- ``dense here``: the dense ranker on the request's connection (when no side connection was free);
- ``load winners``: ``sql.presented``;
- ``present``: ``selectors.present`` (statuses, relations, the answer's dicts);
- ``rest``: ``total`` minus the parts on the request's thread;
- ``gc``: the garbage collector's pauses during the call (inside the parts above, any thread),
  and ``gc gen2``: those of full collections.

Prints p50 / p95 / max per part and, for the slowest 5 % of calls, the mean of each part (what
the tail is made of). A profile, not a test: it never fails on a figure.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import functools
import gc
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, goals, latency
from bench.archive import hotpaths

# Parts timed on the request's thread (their sum leaves ``rest``), then those of the embedding thread.
MAIN_PARTS: tuple[str, ...] = ("admission", "scope", "term stats", "window", "keyword statement")
MAIN_PARTS += ("dense wait", "dense here", "load winners", "present")
SIDE_PARTS = ("embed", "dense aside")
GC_PARTS = ("gc", "gc gen2")


class Timers:
    """Per-call milliseconds per part, from wrappers installed on the core's functions."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.calls: list[dict[str, float]] = []
        self.lock = threading.Lock()
        self._gc_started = 0.0
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        took = (time.perf_counter() - self._gc_started) * 1000
        self.current["gc"] += took
        if info.get("generation") == 2:
            self.current["gc gen2"] += took

    def wrap(self, owner: Any, name: str, part: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                with self.lock:
                    self.current[part] += (time.perf_counter() - started) * 1000

        setattr(owner, name, timed)

    def finish(self, total_ms: float) -> None:
        with self.lock:
            call = dict(self.current)
            self.current = defaultdict(float)
        call["total"] = total_ms
        call["rest"] = total_ms - sum(call.get(p, 0.0) for p in MAIN_PARTS)
        self.calls.append(call)


def install(timers: Timers) -> None:
    """Wrap the parts of a search (module attributes, looked up at call time by their callers)."""
    from concurrent.futures import Future

    from memories import search, selectors, sql, vectors

    timers.wrap(selectors, "begin_read", "admission")
    timers.wrap(selectors, "search_scope", "scope")
    timers.wrap(search, "term_stats", "term stats")
    timers.wrap(search, "bucket_counts", "window")
    timers.wrap(sql, "keyword_ranked", "keyword statement")
    timers.wrap(vectors, "embed_query", "embed")
    timers.wrap(search, "_nearest_here", "dense here")
    timers.wrap(sql, "presented", "load winners")
    timers.wrap(selectors, "present", "present")
    original_run = search.NearestQuery.run

    def run(self: Any, cursor: Any, vector: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return original_run(self, cursor, vector)  # inside _nearest_here: already timed
        started = time.perf_counter()
        try:
            return original_run(self, cursor, vector)
        finally:
            with timers.lock:
                timers.current["dense aside"] += (time.perf_counter() - started) * 1000

    search.NearestQuery.run = run  # type: ignore[method-assign]
    original_result = Future.result

    def result(self: Any, timeout: float | None = None) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return original_result(self, timeout)
        started = time.perf_counter()
        try:
            return original_result(self, timeout)
        finally:
            with timers.lock:
                timers.current["dense wait"] += (time.perf_counter() - started) * 1000

    Future.result = result  # type: ignore[method-assign]


def table(calls: list[dict[str, float]]) -> list[list[str]]:
    parts = ("total", *MAIN_PARTS, "rest", *SIDE_PARTS, *GC_PARTS)
    slowest = sorted(calls, key=lambda c: c["total"])[-max(1, len(calls) // 20) :]
    rows = []
    for part in parts:
        values = sorted(c.get(part, 0.0) for c in calls)
        summary = common.summary_ms(values)
        tail = statistics.fmean(c.get(part, 0.0) for c in slowest)
        side = " (embedding thread)" if part in SIDE_PARTS else ""
        rows.append([part + side, f"{summary['p50']} / {summary['p95']} / {max(values):.1f}", f"{tail:.1f}"])
    return rows


def main() -> None:
    parser = goals.project_parser(__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from memories import selectors
    from mmw.db import aside

    _tenant, size, principal = goals.project_principal(args.size)
    pool = hotpaths.side_pool()
    aside.side_pool = lambda alias="default": pool
    texts = latency.Texts(seed=7)
    queries = [texts.query() for _ in range(args.calls + 20)]
    timers = Timers()
    install(timers)

    def search_once(query: str) -> object:
        return selectors.memory_search(principal=principal, payload={"query": query})

    for query in queries[:20]:  # warm: the model, the plans, the caches
        search_once(query)
    timers.current.clear()
    load = os.getloadavg()[0]
    for query in queries[20:]:
        started = time.perf_counter()
        search_once(query)
        timers.finish((time.perf_counter() - started) * 1000)
    print(
        f"bench/archive/search_parts.py --size {args.size} --calls {args.calls}: project of {size:,} records, "
        f"load average {load:.2f}–{os.getloadavg()[0]:.2f}, git {common.machine_notes()['git']}\n"
    )
    print(markdown(table(timers.calls)))


def markdown(rows: list[list[str]]) -> str:
    return common.markdown_table(["part", "ms p50 / p95 / max", "mean in the slowest 5 %"], rows)


if __name__ == "__main__":
    main()
