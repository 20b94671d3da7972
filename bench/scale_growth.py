"""What grows with the record table's size (issue #43), measured on a loaded bench database:

    nice -n 10 .venv/bin/python bench/scale_growth.py --data-dir var/bench-3m [--skip-rewrite]

Run it at each size (``bench/bulk_load.py --size 1000000``, then ``--size 3000000``); results land
in ``bench/out/scale-growth-<records>.json``. Each part, on the ``goals-1000000`` project (the one
``bench/goals.py --size 1000000`` measures) when it touches records:

- **the dense ranker** alone (``search.nearest``) on that project and on a 10k-record account's
  project sharing the same HNSW index: ms and rows returned;
- **sizes**: the heap, its TOAST, every index of ``memories_memory`` by kind (HNSW, GIN, btree),
  ``memories_termstat`` and ``memories_vectorsum``;
- **insert cost and the statement triggers**: one-record ``INSERT``s as ``remember`` writes them
  (the HNSW index taking each), in one transaction rolled back at the end, in blocks of
  ``--inserts`` with every trigger, without ``mmw_vector_sums_insert`` and without any of the
  three insert triggers (live counts, term statistics, ``VectorSum``), interleaved; ms per insert;
- **vacuum**: ``--updates`` records of the project updated (``confidence``: no trigger column, but
  a new row version in every index, HNSW included), then ``VACUUM memories_memory`` timed (the
  HNSW index is scanned whole to drop the dead versions);
- **a table rewrite's parts** (unless ``--skip-rewrite``): a migration that rewrites the table
  (a stored generated column, a type change: ``memories.0012`` took 36.7 min at 1M) copies the heap
  and rebuilds every index under an exclusive lock. Measured here: the heap copy
  (``CREATE TABLE … AS SELECT *``) and one btree build on the copy; the GIN and HNSW builds are
  ``bench/bulk_load.py``'s (``bench/out/bulk-load-<size>.json``), so the sum is the rewrite's
  estimate. The copy is dropped at once.

Search latency beside ``/healthz`` is ``bench/goals.py --data-dir … --size 1000000`` on the same
database, and where a search's time goes (the recency window, the keyword statement, the dense
ranker) ``bench/archive/search_parts.py --data-dir … --size 1000000``. A benchmark: it never fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.bulk_load import INSERT, insert_params, setup
from bench.common import log

PROJECT = "goals-1000000"
INSERT_TRIGGERS = ("mmw_live_counts_insert", "mmw_term_stats_insert", "mmw_vector_sums_insert")


def sizes() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        records = int(cursor.fetchone()[0])
        cursor.execute(
            "SELECT pg_relation_size('memories_memory'), "
            "COALESCE(pg_total_relation_size(reltoastrelid), 0) FROM pg_class WHERE relname = 'memories_memory'"
        )
        heap, toast = cursor.fetchone()
        cursor.execute(
            "SELECT i.relname, am.amname, pg_relation_size(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam "
            "WHERE x.indrelid = 'memories_memory'::regclass ORDER BY 3 DESC"
        )
        indexes = {name: {"kind": kind, "bytes": int(size)} for name, kind, size in cursor.fetchall()}
        others = {}
        for table in ("memories_termstat", "memories_vectorsum"):
            cursor.execute(f"SELECT pg_total_relation_size(%s), (SELECT count(*) FROM {table})", [table])  # noqa: S608 - a constant
            total, rows = cursor.fetchone()
            others[table] = {"bytes": int(total), "rows": int(rows)}
        cursor.execute("SHOW shared_buffers")
        shared_buffers = cursor.fetchone()[0]
    by_kind: dict[str, int] = {}
    for index in indexes.values():
        by_kind[index["kind"]] = by_kind.get(index["kind"], 0) + index["bytes"]
    return {
        "records": records,
        "heap_bytes": int(heap),
        "toast_bytes": int(toast),
        "index_bytes_by_kind": by_kind,
        "indexes": indexes,
        "others": others,
        "shared_buffers": shared_buffers,
    }


def target() -> tuple[Any, Any, Any]:
    from accounts.models import ApiKey, Project, Workspace

    project = Project.objects.select_related("account").get(name=PROJECT)
    key = ApiKey.objects.filter(project=project).order_by("-id").first()
    ws = Workspace.objects.get(project=project, name="default")
    return project, ws, key


def insert_costs(blocks: int, per_block: int) -> dict[str, Any]:
    """ms per one-record insert with all triggers / without VectorSum's / without the three."""
    from django.db import connection, transaction

    from memories.embeddings import get_backend

    variants = {
        "all triggers": (),
        "without VectorSum": ("mmw_vector_sums_insert",),
        "without the 3 insert triggers": INSERT_TRIGGERS,
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # checked per insert, as in autocommit
        cursor.execute("SELECT count(*) FROM bench_sentence")
        pool = int(cursor.fetchone()[0])
        params = insert_params(target(), get_backend("use").model_id, pool, source="scale", total=1)
        for _block in range(blocks):
            for name, disabled in variants.items():
                for trigger in INSERT_TRIGGERS:
                    verb = "DISABLE" if trigger in disabled else "ENABLE"
                    cursor.execute(f"ALTER TABLE memories_memory {verb} TRIGGER {trigger}")
                for _ in range(per_block):
                    started = time.perf_counter()
                    # record 1 of 1: created now, as ``remember`` writes it
                    cursor.execute(INSERT, {**params, "first": 1, "last": 1})
                    samples[name].append((time.perf_counter() - started) * 1000)
        transaction.set_rollback(True)
    out: dict[str, Any] = {name: common.summary_ms(values) for name, values in samples.items()}
    base = statistics.median(samples["without the 3 insert triggers"])
    everything = statistics.median(samples["all triggers"])
    out["vectorsum_ms_per_insert"] = round(everything - statistics.median(samples["without VectorSum"]), 3)
    out["three_triggers_ms_per_insert"] = round(everything - base, 3)
    return out


def dense_costs(queries: int) -> dict[str, Any]:
    """The dense ranker alone (``search.nearest``, production's statement: the partial HNSW index,
    iterative scan) for ``MIN_CANDIDATES`` rows, on the big project and on the smallest other
    account's project (a 10k-record account sharing the index with everyone): ms p50 / p95 and
    how many rows came back (fewer than asked: the iterative scan gave up)."""
    from django.db import connection

    from memories import search
    from memories.embeddings import get_backend
    from memories.models import Memory

    model = get_backend("use").model_id
    with connection.cursor() as cursor:
        cursor.execute("SELECT v::text FROM bench_sentence ORDER BY random() LIMIT %s", [queries])
        vectors = [[float(x) for x in row[0].strip("[]").split(",")] for row in cursor.fetchall()]
        cursor.execute(
            "SELECT p.id, p.account_id, count(*) FROM accounts_project p JOIN memories_memory m "
            "ON m.project_id = p.id WHERE p.name LIKE 'scale-%%' GROUP BY p.id ORDER BY p.id LIMIT 1"
        )
        small = cursor.fetchone()
    big = target()[0]
    projects = {PROJECT: (big.account_id, big.id)}
    if small is not None:
        projects[f"a {small[2]:,}-record account"] = (small[1], small[0])
    out: dict[str, Any] = {}
    for name, (account_id, project_id) in projects.items():
        # as the visibility rule reads: the account and the project
        candidates = Memory.objects.filter(account_id=account_id, project_id=project_id, forgotten_at__isnull=True)
        times, found = [], []
        for vector in vectors:
            started = time.perf_counter()
            hits = search.nearest(candidates, vector, model, search.MIN_CANDIDATES)
            times.append((time.perf_counter() - started) * 1000)
            found.append(len(hits))
        out[name] = {**common.summary_ms(times), "rows_min": min(found), "asked": search.MIN_CANDIDATES}
    return out


def vacuum_cost(updates: int) -> dict[str, Any]:
    from django.db import connection

    project, _ws, _key = target()
    with connection.cursor() as cursor:
        started = time.perf_counter()
        cursor.execute(
            "UPDATE memories_memory SET confidence = CASE WHEN confidence = 0.5 THEN 0.51 ELSE 0.5 END "
            "WHERE id IN (SELECT id FROM memories_memory WHERE project_id = %s ORDER BY random() LIMIT %s)",
            [project.id, updates],
        )
        updated = time.perf_counter() - started
        started = time.perf_counter()
        cursor.execute("VACUUM memories_memory")
        vacuum = time.perf_counter() - started
        started = time.perf_counter()
        cursor.execute("VACUUM memories_memory")
        again = time.perf_counter() - started
    return {
        "updated_records": updates,
        "update_seconds": round(updated, 1),
        "update_ms_per_record": round(updated * 1000 / updates, 2),
        "vacuum_seconds": round(vacuum, 1),
        "vacuum_again_seconds": round(again, 1),
    }


def rewrite_parts() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_rewrite_probe")
        started = time.perf_counter()
        cursor.execute("CREATE TABLE bench_rewrite_probe AS SELECT * FROM memories_memory")
        heap = time.perf_counter() - started
        started = time.perf_counter()
        cursor.execute("CREATE INDEX ON bench_rewrite_probe (project_id, created_at)")
        btree = time.perf_counter() - started
        cursor.execute("DROP TABLE bench_rewrite_probe")
    return {"heap_copy_seconds": round(heap, 1), "one_btree_seconds": round(btree, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser, "var/bench-3m")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--inserts", type=int, default=50, help="inserts per block and variant")
    parser.add_argument("--updates", type=int, default=5000)
    parser.add_argument("--skip-rewrite", action="store_true")
    parser.add_argument("--queries", type=int, default=100, help="dense ranker queries per project")
    parser.add_argument("--only", choices=("sizes", "dense", "inserts", "vacuum", "rewrite"), action="append")
    parser.add_argument("--project", default="goals-1000000", help="the project measured")
    args = parser.parse_args()
    global PROJECT
    PROJECT = args.project
    setup(args.data_dir.resolve())  # no migrate: its hook would build a dropped HNSW index
    parts = args.only or ["sizes", "dense", "inserts", "vacuum", "rewrite"]
    result: dict[str, Any] = {"machine": common.machine_notes()}
    result["sizes"] = sizes()
    records = result["sizes"]["records"]
    log(f"scale growth at {records:,} records: {json.dumps(result['sizes']['index_bytes_by_kind'])}")
    if "dense" in parts:
        result["dense"] = dense_costs(args.queries)
        log(f"dense ranker: {json.dumps(result['dense'])}")
    if "inserts" in parts:
        result["inserts"] = insert_costs(args.blocks, args.inserts)
        log(f"inserts: {json.dumps(result['inserts'])}")
    if "vacuum" in parts:
        result["vacuum"] = vacuum_cost(args.updates)
        log(f"vacuum: {json.dumps(result['vacuum'])}")
    if "rewrite" in parts and not args.skip_rewrite:
        result["rewrite"] = rewrite_parts()
        log(f"rewrite parts: {json.dumps(result['rewrite'])}")
    result["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = common.OUT_DIR / f"scale-growth-{records}.json"
    out.write_text(json.dumps(result, indent=1))
    log(f"written {out}")


if __name__ == "__main__":
    main()
