"""Where a record search's time goes on long content: LongMemEval-S records against as many
synthetic short records, part by part, in process, interleaved in one run:

    MMW_DATA_DIR=$PWD/var/bench-lme-parts .venv/bin/python bench/lme_search_parts.py --questions 10 [--passes 4]

The first ``--questions`` dev questions' records (one user turn and its answer, as
``bench/lme_speed.py`` uploads them) go into project ``lme-parts``, one workspace per question
(~250 records); as many synthetic records (``bench.latency.Texts``, ~a dozen words each) into
project ``lme-syn`` in workspaces of the same sizes; vectors by USE (kept between runs). Then every
question is searched (``selectors.memory_search``, what REST and MCP call, limit 50, the question's
date as ``now``) and, right after it, a synthetic query in the matching synthetic workspace, as
``bench/lme_speed.py`` does; per call the parts of ``bench/archive/search_parts.py`` (timers
installed on the core's functions), the process CPU of the call (``time.process_time``: the
request's and the embedding thread's, not PostgreSQL's) and, with ``--explain``, the keyword
statement's ``EXPLAIN (ANALYZE, BUFFERS)`` for the slowest LME question.

``--probe-agreement 100,200,400``: instead, every dev question (all 100 texts, each asked in the
workspace of a loaded question) and as many synthetic queries ask ``selectors.elsewhere`` (the
``other_workspaces`` look of a search that came back short) scoring at most
``search.KEYWORD_SCORED_ROWS`` rows by keywords (as shipped) and at most each value (a variant,
set for the look only), interleaved: how many answers are identical, and the look's time.

``--layout-ab``: instead, the same LME records loaded twice more, into projects ``lme-ab-extended``
(written with the keyword documents' storage set back to PostgreSQL's default, ``EXTENDED``: out of
line past ~2 KB) and ``lme-ab-main`` (the shipped ``MAIN``: kept in the row; migration
memories 0017), vectors copied from ``lme-parts``; every question searched in both, interleaved,
``--passes`` times: the results compared (sources and positions, in order) and timed.

``--cprofile PATH`` writes a cProfile of the LME searches (one pass) to PATH.

A profile, not a test: it prints figures and never fails on one.
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

from bench import common, lme_retrieval, lme_speed
from bench.archive import search_parts
from bench.common import log


def load(who: Any, bodies: list[dict[str, Any]], backend_name: str = "use") -> None:
    """``bodies`` into ``who``'s project, unless its workspaces already hold them; then vectors."""
    from bench import retrieval
    from memories.embeddings import get_backend
    from memories.models import Memory
    from memories.remember import memory_remember_batch

    have = set(Memory.objects.filter(project=who.project).values_list("workspace__name", flat=True).distinct())
    todo = [b for b in bodies if b["workspace"] not in have]
    for start in range(0, len(todo), 250):
        memory_remember_batch(principal=who, payload={"records": todo[start : start + 250]})
    backend = get_backend(backend_name)
    pending = Memory.objects.filter(project=who.project).exclude(embedding_model=backend.model_id)
    ids = [str(i) for i in pending.values_list("id", flat=True)]
    if ids:
        retrieval.fill_vectors(ids, backend)
    log(f"{who.project.name}: {Memory.objects.filter(project=who.project).count()} records")


def explain_keyword(who: Any, payload: dict[str, Any]) -> str:
    """The keyword statement of ``payload``'s search, EXPLAIN (ANALYZE, BUFFERS)."""
    from django.db import connection

    from memories import selectors, sql

    captured: list[tuple[str, list[Any]]] = []
    original = connection.cursor

    class Spy:
        def __init__(self, cursor: Any) -> None:
            self.cursor = cursor

        def __enter__(self) -> Spy:
            self.cursor.__enter__()
            return self

        def __exit__(self, *exc: Any) -> None:
            self.cursor.__exit__(*exc)

        def execute(self, statement: str, params: Any = None) -> Any:
            if "AS h0" in statement and not captured:
                captured.append((statement, list(params)))
            return self.cursor.execute(statement, params)

        def __iter__(self) -> Any:
            return iter(self.cursor)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.cursor, name)

    connection.cursor = lambda *a, **k: Spy(original(*a, **k))  # type: ignore[method-assign,assignment]
    try:
        selectors.memory_search(principal=who, payload=payload)
    finally:
        connection.cursor = original  # type: ignore[method-assign]
    del sql
    if not captured:
        return "(no keyword statement)"
    statement, params = captured[0]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def load_with_storage(who: Any, bodies: list[dict[str, Any]], storage: str, vectors_of: Any) -> None:
    """``bodies`` into ``who``'s project (unless there) with the keyword documents' storage set to
    ``storage`` while they are written, their vectors copied from project ``vectors_of``'s records
    of the same workspace, source and position; the shipped storage (``MAIN``) set back after."""
    from django.db import connection

    from memories.models import Memory

    if Memory.objects.filter(project=who.project).exists():
        return
    alter = (
        "ALTER TABLE memories_memory ALTER COLUMN search_document SET STORAGE {0},"
        " ALTER COLUMN context_document SET STORAGE {0}"
    )
    with connection.cursor() as cursor:
        cursor.execute(alter.format(storage))
    try:
        from memories.remember import memory_remember_batch

        for start in range(0, len(bodies), 250):
            memory_remember_batch(principal=who, payload={"records": bodies[start : start + 250]})
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_memory m SET embedding = o.embedding, embedding_model = o.embedding_model"
                " FROM memories_memory o, accounts_workspace mw, accounts_workspace ow"
                " WHERE m.project_id = %s AND o.project_id = %s AND mw.id = m.workspace_id AND ow.id = o.workspace_id"
                " AND mw.name = ow.name AND o.source_id = m.source_id AND o.position = m.position",
                [who.project.pk, vectors_of.pk],
            )
    finally:
        with connection.cursor() as cursor:
            cursor.execute(alter.format("MAIN"))
    common.vacuum_analyze()


def layout_ab(source: Any, real: list[dict[str, Any]], qs: list[Any], passes: int) -> None:
    """The same searches over the same records stored out of line (``EXTENDED``) and in the row (``MAIN``)."""
    from django.db import connection

    from memories import selectors

    layouts = {"EXTENDED": lme_retrieval.principal("lme-ab-extended"), "MAIN": lme_retrieval.principal("lme-ab-main")}
    for storage, who in layouts.items():
        load_with_storage(who, real, storage, source.project)
    with connection.cursor() as cursor:
        for storage, who in layouts.items():
            cursor.execute(
                "SELECT count(*), count(embedding_model), avg(pg_column_size(search_document))::int,"
                " sum(CASE WHEN pg_column_size(search_document) > 2000 THEN 1 ELSE 0 END)"
                " FROM memories_memory WHERE project_id = %s",
                [who.project.pk],
            )
            log(f"{storage}: records, embedded, mean stored keyword document, documents over 2 KB: {cursor.fetchone()}")
        cursor.execute("SELECT pg_relation_size('memories_memory'), pg_total_relation_size('memories_memory')")
        log(f"memories_memory heap / total bytes: {cursor.fetchone()}")
    samples: dict[str, list[float]] = {s: [] for s in layouts}
    cpu: dict[str, list[float]] = {s: [] for s in layouts}
    differing = 0
    for n in range(passes + 1):
        for q in qs:
            payload = {"query": q.text, "workspace": q.qid, "limit": 50, "now": q.asked_at.isoformat()}
            answers = {}
            for storage, who in layouts.items() if n % 2 else reversed(layouts.items()):
                started, before = time.perf_counter(), backend_cpu(connection)
                answer = selectors.memory_search(principal=who, payload=payload)
                if n:  # the first pass warms
                    samples[storage].append((time.perf_counter() - started) * 1000)
                    cpu[storage].append(backend_cpu(connection) - before)
                answers[storage] = (
                    [(r["source_id"], r.get("position"), r["score"]) for r in answer["results"]],
                    answer["other_workspaces"],
                )
            differing += answers["EXTENDED"] != answers["MAIN"]
    rows = [[s, f"{common.summary_ms(samples[s])['p50']} / {common.summary_ms(samples[s])['p95']}",
             f"{statistics.fmean(cpu[s]):.1f}"] for s in layouts]  # fmt: skip
    print(f"layout A/B, {passes} passes of {len(qs)} questions, interleaved; answers differing: {differing}\n")
    print(common.markdown_table(["keyword documents", "search ms p50 / p95", "request backend CPU ms, mean"], rows))


def backend_cpu(connection: Any) -> float:
    """CPU milliseconds (user + system) the request connection's PostgreSQL backend has used."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def probe_agreement(lme: Any, syn: Any, loaded: list[Any], values: list[int]) -> None:
    """``other_workspaces`` with the probe scoring ``values`` rows against scoring as many as a search."""
    from bench.latency import Texts
    from memories import search, selectors
    from memories.selectors import MemoryFilters

    texts = Texts(seed=372)
    asks = [(lme, q.text, loaded[i % len(loaded)].qid) for i, q in enumerate(lme_retrieval.questions(None))]
    asks += [(syn, texts.query(), f"syn-{loaded[i % len(loaded)].qid}") for i in range(len(asks))]
    shipped = search.KEYWORD_SCORED_ROWS
    settings = [shipped, *values]
    same = dict.fromkeys(values, 0)
    named = 0
    times: dict[int, list[float]] = {v: [] for v in settings}
    for who, query, workspace in asks:
        answers = {}
        for value in settings:
            search.KEYWORD_SCORED_ROWS = value
            started = time.perf_counter()
            try:
                answers[value] = selectors.elsewhere(who, workspace, MemoryFilters(), query, search.DEFAULT_FLOOR)
            finally:
                search.KEYWORD_SCORED_ROWS = shipped
            times[value].append((time.perf_counter() - started) * 1000)
        named += bool(answers[shipped])
        for value in values:
            same[value] += answers[value] == answers[shipped]
    print(f"other_workspaces looks: {len(asks)} ({named} named a workspace at {shipped} rows)\n")
    rows = []
    for v in settings:
        summary = common.summary_ms(times[v])
        rows.append([str(v), f"{same.get(v, len(asks))} of {len(asks)}", f"{summary['p50']} / {summary['p95']}"])
    print(common.markdown_table(["probe scores at most", "identical answers", "ms p50 / p95"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--passes", type=int, default=4)
    common.add_data_dir(parser, common.ROOT / "var" / "bench-lme-parts")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--cprofile", default="")
    parser.add_argument("--layout-ab", action="store_true")
    parser.add_argument(
        "--backend", default="use", help="the embedding backend of records and queries (ngram: a quick load)"
    )
    parser.add_argument("--probe-agreement", default="", help="comma-separated row bounds")
    args = parser.parse_args()
    common.setup_django(Path(args.data_dir).resolve())
    from django.conf import settings

    settings.MMW_EMBEDDING_BACKEND = args.backend
    from bench.archive import hotpaths
    from bench.latency import Texts
    from memories import selectors
    from mmw.db import aside

    qs = lme_retrieval.questions(args.questions)
    lme, syn = lme_retrieval.principal("lme-parts"), lme_retrieval.principal("lme-syn")
    real = lme_speed.record_bodies(qs)
    load(lme, real, args.backend)
    load(syn, lme_speed.synthetic_bodies(real), args.backend)
    pool = hotpaths.side_pool()
    aside.side_pool = lambda alias="default": pool
    if args.layout_ab:
        layout_ab(lme, real, qs, args.passes)
        return
    if args.probe_agreement:
        probe_agreement(lme, syn, qs, [int(v) for v in args.probe_agreement.split(",")])
        return
    timers = search_parts.Timers()
    search_parts.install(timers)
    texts = Texts(seed=371)

    def payloads(q: lme_retrieval.Question) -> list[tuple[str, Any, dict[str, Any]]]:
        synthetic = texts.query()
        return [
            ("lme", lme, {"query": q.text, "workspace": q.qid, "limit": 50, "now": q.asked_at.isoformat()}),
            ("synthetic", syn, {"query": synthetic, "workspace": f"syn-{q.qid}"}),
            ("synthetic, limit 50", syn, {"query": synthetic, "workspace": f"syn-{q.qid}", "limit": 50}),
            ("lme, limit 10", lme, {"query": q.text, "workspace": q.qid, "now": q.asked_at.isoformat()}),
        ]

    for q in qs:  # warm: the model, the plans, the caches
        for _, who, payload in payloads(q):
            selectors.memory_search(principal=who, payload=payload)
    timers.current.clear()
    calls: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in payloads(qs[0])}
    elsewhere_asked: dict[str, int] = dict.fromkeys(calls, 0)
    original_elsewhere = selectors.elsewhere

    def counted_elsewhere(*a: Any, **k: Any) -> Any:
        elsewhere_asked[current[0]] += 1
        return original_elsewhere(*a, **k)

    current = [""]
    selectors.elsewhere = counted_elsewhere
    load_before = os.getloadavg()[0]
    for _ in range(args.passes):
        for q in qs:
            for label, who, payload in payloads(q):
                current[0] = label
                cpu, started = time.process_time(), time.perf_counter()
                selectors.memory_search(principal=who, payload=payload)
                timers.finish((time.perf_counter() - started) * 1000)
                timers.calls[-1]["process CPU"] = (time.process_time() - cpu) * 1000
                calls[label].append(timers.calls[-1])
    print(
        f"bench/lme_search_parts.py --questions {args.questions} --passes {args.passes}: "
        f"{len(real):,} LME records, as many synthetic; load average {load_before:.2f}–{os.getloadavg()[0]:.2f}, "
        f"git {common.machine_notes()['git']}\n"
    )
    parts = ("total", "process CPU", *search_parts.MAIN_PARTS, "rest", *search_parts.SIDE_PARTS)
    rows = []
    for part in parts:
        row = [part]
        for label in calls:
            values = [c.get(part, 0.0) for c in calls[label]]
            summary = common.summary_ms(values)
            row.append(f"{summary['p50']} / {summary['p95']}")
        lme_p50 = statistics.median(c.get(part, 0.0) for c in calls["lme"])
        syn_p50 = statistics.median(c.get(part, 0.0) for c in calls["synthetic"])
        row.append(f"{lme_p50 / syn_p50:.2f}×" if syn_p50 > 0.05 else "—")
        rows.append(row)
    looked = [f"{elsewhere_asked[label]} of {len(calls[label])}" for label in calls]
    rows.append(["looked in other workspaces", *looked, ""])
    header = ["part", *[f"{label}: ms p50 / p95" for label in calls], "p50 lme / synthetic"]
    print(common.markdown_table(header, rows))
    if args.explain:
        slowest = max(range(len(qs)), key=lambda i: calls["lme"][i]["keyword statement"])
        print("\nkeyword statement of the slowest LME question:\n")
        print(explain_keyword(lme, payloads(qs[slowest])[0][2]))
    if args.cprofile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
        for q in qs:
            selectors.memory_search(principal=lme, payload=payloads(q)[0][2])
        profile.disable()
        profile.dump_stats(args.cprofile)
        log(f"cProfile of {len(qs)} LME searches: {args.cprofile}")


if __name__ == "__main__":
    main()
