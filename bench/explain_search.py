"""Where a search's database time goes on ``bench/goals.py``'s project: EXPLAIN (ANALYZE, BUFFERS)
of the keyword and dense rankers' statements, as the REST search sends them.

    .venv/bin/python bench/explain_search.py --data-dir var/bench-1m --size 1000000 [--queries 4]

Each query is first searched as ``POST /api/v1/memories/search`` searches (``selectors.memory_search``
in this process, ``{"query": ...}``, every statement captured), three times, timing the call. Then
the captured keyword ranker's statement and dense ranker's statement (after the same
``SET LOCAL hnsw.*`` in one transaction) run again under ``EXPLAIN (ANALYZE, BUFFERS)``. The
queries are the first ``--queries`` that ``bench/goals.py`` sends, then as many whose rarest word
is in more than ``search.KEYWORD_SCORED_ROWS`` records (the keyword ranker scores only the newest
matches then). Prints each plan and a table of the figures. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, goals, latency
from bench.common import log, markdown_table

_EXECUTION = re.compile(r"Execution Time: ([\d.]+) ms")
_PLANNING = re.compile(r"Planning Time: ([\d.]+) ms")
_BUFFERS = re.compile(r"Buffers: (.*)")
_VECTOR = re.compile(r"'\[[-0-9.e,]+\]'::vector")


def explain(sql: str, prelude: str = "") -> tuple[str, dict[str, Any]]:
    """``sql`` (fully bound) under EXPLAIN (ANALYZE, BUFFERS), after ``prelude`` in one transaction:
    the plan's text and its planning / execution ms and top node's buffers."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        if prelude:
            cursor.execute(prelude)
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        plan = _VECTOR.sub("'[the query's vector]'::vector", "\n".join(row[0] for row in cursor.fetchall()))
    execution = _EXECUTION.search(plan)
    planning = _PLANNING.search(plan)
    buffers = _BUFFERS.search(plan)
    return plan, {
        "execution_ms": float(execution.group(1)) if execution else None,
        "planning_ms": float(planning.group(1)) if planning else None,
        "buffers": buffers.group(1).strip() if buffers else "",
    }


def statements(principal: Any, query: str, runs: int = 3) -> tuple[float, str, str, str]:
    """One search of ``query`` as REST searches it, ``runs`` times: the median ms of the call, the
    keyword ranker's statement, the dense ranker's prelude and statement (as sent)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories import selectors

    times = []
    captured: list[dict[str, Any]] = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            selectors.memory_search(principal=principal, payload={"query": query})
            times.append((time.perf_counter() - start) * 1000)
        captured = list(queries.captured_queries)
    keyword = next(q["sql"] for q in captured if "to_tsquery" in q["sql"] and " AS rank" in q["sql"])
    dense = next(q["sql"] for q in captured if "<=>" in q["sql"])
    prelude, _, select = dense.rpartition("; ")
    return statistics.median(times), keyword, prelude + ";", select


def main() -> None:
    parser = goals.project_parser(__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=4, help="ordinary queries, and as many broad ones")
    parser.add_argument("--plans", action="store_true", help="print every plan in full")
    parser.add_argument(
        "--sweep", type=int, default=0, help="then the first SWEEP queries bench/goals.py sends: p50 / p95 of each"
    )
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from memories import search

    _tenant, size, principal = goals.project_principal(args.size)

    def over_budget(query: str) -> bool:
        asked = search.keyword_query(query, lambda terms: search.term_stats(principal.project.pk, terms), 0.3)
        return asked is not None and bool(asked.newest)

    texts = latency.Texts(seed=11)  # bench/goals.py's REST queries
    ordinary = [texts.query() for _ in range(args.queries)]
    others = dict.fromkeys(q for q in (texts.query() for _ in range(400)) if q not in ordinary)
    broad = [q for q in others if over_budget(q)][: args.queries]
    load = os.getloadavg()[0]
    rows = []
    for query in ordinary + broad:
        call_ms, keyword, prelude, dense = statements(principal, query)
        keyword_plan, k = explain(keyword)
        dense_plan, d = explain(dense, prelude)
        kind = "broad (newest matches)" if over_budget(query) else "ordinary"
        log(f"{query!r} ({kind}): search {call_ms:.1f} ms, keyword {k['execution_ms']}, dense {d['execution_ms']} ms")
        if args.plans:
            print(f"\n### {query!r} ({kind})\n\nkeyword ranker:\n```\n{keyword_plan}\n```\n")
            print(f"dense ranker ({prelude.strip()}):\n```\n{dense_plan}\n```\n")
        rows.append(
            [
                query[:48],
                kind,
                round(call_ms, 1),
                f"{k['execution_ms']} (plan {k['planning_ms']})",
                k["buffers"],
                f"{d['execution_ms']} (plan {d['planning_ms']})",
                d["buffers"],
            ]
        )
    print(
        f"\nbench/explain_search.py --size {args.size}: project of {size:,} records, "
        f"load average {load:.2f}–{os.getloadavg()[0]:.2f}, git {common.machine_notes()['git']}"
    )
    header = ["query", "keyword branch", "search in process, ms (median of 3)", "keyword ms", "keyword buffers"]
    print(markdown_table([*header, "dense ms", "dense buffers"], rows))
    if args.sweep:
        print(sweep(principal, args.sweep, over_budget))


def sweep(principal: Any, count: int, over_budget: Any) -> str:
    """The first ``count`` queries ``bench/goals.py`` sends, each searched twice (the median of the
    two timed) and its two statements explained: p50 / p95 / max of each, by keyword branch."""
    texts = latency.Texts(seed=11)
    queries = [texts.query() for _ in range(count)]
    load = os.getloadavg()[0]
    figures: dict[str, dict[str, list[float]]] = {}
    for query in queries:
        call_ms, keyword, prelude, dense = statements(principal, query, runs=2)
        kind = "broad" if over_budget(query) else "ordinary"
        keyword_ms = explain(keyword)[1]["execution_ms"] or 0.0
        dense_ms = explain(dense, prelude)[1]["execution_ms"] or 0.0
        for group in (kind, "all"):
            into = figures.setdefault(group, {"search": [], "keyword": [], "dense": []})
            into["search"].append(call_ms)
            into["keyword"].append(keyword_ms)
            into["dense"].append(dense_ms)

    def cell(values: list[float]) -> str:
        return f"{common.percentile(values, 50):.1f} / {common.percentile(values, 95):.1f} / {max(values):.1f}"

    rows = [
        [group, len(f["search"]), cell(f["search"]), cell(f["keyword"]), cell(f["dense"])]
        for group, f in sorted(figures.items(), key=lambda item: item[0] != "all")
    ]
    head = (
        f"\nThe first {count} queries of bench/goals.py's REST calls, load average {load:.2f}–{os.getloadavg()[0]:.2f}"
        " (keyword branch: broad = the rarest word is in more than search.KEYWORD_SCORED_ROWS records). "
        "ms p50 / p95 / max:\n\n"
    )
    header = ["queries", "n", "search in process (median of 2)", "keyword statement", "dense statement"]
    return head + markdown_table(header, rows)


if __name__ == "__main__":
    main()
