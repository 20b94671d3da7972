"""Before/after ratios of issue #19's hot-path changes, in process, interleaved in one run:

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/archive/hotpaths.py [--size 100000] [--calls 200]

- the dense ranker: ``search.nearest`` (one round trip) against the ORM ranker it replaced
  (``SET LOCAL`` x 2 in an ``atomic`` block, then the query: five statements), on ``bench/goals.py``'s
  project (load it first with ``bench/goals.py``), autocommit as in a web request;
- presenting 10 search winners: records loaded with their workspace row (now) against records
  loaded without it (before: one more statement in ``selectors.present``);
- a search's ranking (``search.hybrid_ranking``: query embedding, both rankers, fusion) with the
  dense ranker on the request's connection after the keyword ranker (before) against the dense
  ranker on a second pooled connection beside it (``mmw.db.aside``; a psycopg pool of 4 as
  ``manage.py serve`` has);
- the keyword ranker's statement, for ordinary queries and for queries whose rarest word is in
  more than ``KEYWORD_SCORED_ROWS`` records: the ORM's (``tests.memories.orm_reference.orm_keyword_ranked``,
  before) against ``memories.sql.keyword_ranked`` with the scope compiled for it (after);
- loading 10 search winners: the ORM's ``select_related`` (``tests.memories.orm_reference.orm_presented``,
  before) against ``memories.sql.presented`` with the scope compiled for it (after).

The Guard's card/IBAN change is measured by ``bench/guard/profile_rules.py --against <rev>``.
Prints ms p50 / p95 of each variant and the ratio after/before of the p50s. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, goals, latency
from bench.common import log, markdown_table
from tests.memories import orm_reference


def interleaved(ops: dict[str, Callable[[], object]], calls: int) -> dict[str, dict[str, float]]:
    samples: dict[str, list[float]] = {name: [] for name in ops}
    for i in range(calls + 5):
        for name, op in ops.items():
            start = time.perf_counter()
            op()
            if i >= 5:
                samples[name].append((time.perf_counter() - start) * 1000)
    return {name: common.summary_ms(values) for name, values in samples.items()}


def statements(op: Callable[[], object]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        op()
    return len(captured.captured_queries)


def _over_budget(search: Any, query: str, stats_of: Any) -> bool:
    """Whether ``query``'s keyword ranking takes the newest-matches branch (its rarest word is in
    more than ``KEYWORD_SCORED_ROWS`` records)."""
    asked = search.keyword_query(query, stats_of)
    return asked is not None and bool(asked.newest)


def side_pool() -> Any:
    """A psycopg pool of 4 connections configured as Django's (what ``manage.py serve`` borrows from)."""
    from django.db import connection
    from psycopg_pool import ConnectionPool

    params = connection.get_connection_params()
    params["autocommit"] = True
    configure = connection._configure_connection  # type: ignore[attr-defined]
    pool = ConnectionPool(kwargs=params, min_size=4, max_size=4, configure=configure)
    pool.wait()
    return pool


def main() -> None:
    parser = goals.project_parser(__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from memories import search, selectors, sql, vectors
    from memories.models import Memory
    from mmw.db import aside

    _tenant, size, principal = goals.project_principal(args.size)
    qs = selectors.memory_queryset(principal=principal, workspace="default")
    assert qs is not None
    texts = latency.Texts(seed=3)
    queries = [vectors.embed_query(texts.query()) for _ in range(50)]
    vecs = [(q[0], q[1].model_id) for q in queries if q is not None]
    turn = [0]

    def next_vector() -> tuple[list[float], str]:
        turn[0] += 1
        return vecs[turn[0] % len(vecs)]

    def new() -> object:
        return search.nearest(qs, *next_vector(), 50)

    def old() -> object:
        return orm_reference.orm_nearest(qs, *next_vector(), 50)

    ids: list[Any] = [c.id for c in search.nearest(qs, *vecs[0], 10)]
    joined = list(qs.filter(id__in=ids))
    plain = list(Memory.objects.filter(id__in=ids).select_related("author", "api_key"))
    pool = side_pool()
    questions = [texts.query() for _ in range(50)]

    def ranking(with_pool: Any) -> Callable[[], object]:
        def run() -> object:
            turn[0] += 1
            aside.side_pool = lambda alias="default": with_pool
            return search.hybrid_ranking(qs, questions[turn[0] % len(questions)], 10, stats)

        return run

    def stats(terms: list[str]) -> search.TermStats:
        return search.term_stats(principal.project.pk, terms)

    stats_of = stats
    broad = [q for q in (texts.query() for _ in range(400)) if _over_budget(search, q, stats_of)][:20] or questions[:1]

    def keyword(queries: list[str], raw: bool) -> Callable[[], object]:
        asked = [a for a in (search.keyword_query(q, stats_of, 0.3) for q in queries) if a is not None]

        def run() -> object:
            turn[0] += 1
            one = asked[turn[0] % len(asked)]
            if raw:
                scope = sql.Scope.of(qs)
                assert scope is not None
                return sql.keyword_ranked(scope, one, 50)
            return orm_reference.orm_keyword_ranked(qs, one, 50)

        return run

    def winners(raw: bool) -> Callable[[], object]:
        def run() -> object:
            if raw:
                scope = sql.Scope.of(qs)
                assert scope is not None
                return sql.presented(scope, ids)
            return orm_reference.orm_presented(qs, ids)

        return run

    load = os.getloadavg()[0]
    ranked = interleaved(
        {
            "before: dense ranker after the keyword ranker": ranking(None),
            "after: dense ranker beside it": ranking(pool),
        },
        args.calls,
    )
    variants: dict[str, dict[str, Callable[[], object]]] = {
        "dense": {"before: ORM ranker": old, "after: one round trip": new},
        "keywords": {
            "before: ORM statement": keyword(questions, False),
            "after: memories.sql": keyword(questions, True),
        },
        "broad": {"before: ORM statement ": keyword(broad, False), "after: memories.sql ": keyword(broad, True)},
        "winners": {"before: ORM select_related": winners(False), "after: memories.sql.presented": winners(True)},
        "present": {
            "before: records without their workspace": lambda: selectors.present(principal, plain),
            "after: workspace loaded with the record": lambda: selectors.present(principal, joined),
        },
    }
    dense = interleaved(variants["dense"], args.calls)
    keywords = interleaved(variants["keywords"], args.calls)
    broad_keywords = interleaved(variants["broad"], args.calls)
    loaded = interleaved(variants["winners"], args.calls)
    present = interleaved(variants["present"], args.calls)
    counts = {name: statements(call) for group in variants.values() for name, call in group.items()}
    counts["before: dense ranker after the keyword ranker"] = statements(ranking(None))
    counts["after: dense ranker beside it"] = statements(ranking(pool))
    rows = []
    parts = (
        ("dense ranker, 50 candidates", dense),
        ("present 10 winners", present),
        ("search ranking", ranked),
        ("keyword ranker's statement", keywords),
        (f"keyword ranker's statement, a word in > 1,000 records ({len(broad)} queries)", broad_keywords),
        ("load 10 winners", loaded),
    )
    for part, result in parts:
        (b_name, b), (a_name, a) = result.items()
        for name, s in ((b_name, b), (a_name, a)):
            rows.append([part, name, counts[name], f"{s['p50']} / {s['p95']}", ""])
        rows[-1][-1] = f"{a['p50'] / b['p50']:.2f}x"
    print(
        f"bench/archive/hotpaths.py --size {args.size} --calls {args.calls}: project of {size:,} records, "
        f"load average {load:.2f}–{os.getloadavg()[0]:.2f}, git {common.machine_notes()['git']}"
    )
    print(markdown_table(["part", "variant", "statements", "ms p50 / p95", "after/before p50"], rows))
    log("done")


if __name__ == "__main__":
    main()
