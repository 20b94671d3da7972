"""A prototype of hash partitioning the record table by account (issue #43), on a bench database:

    P="nice -n 10 .venv/bin/python bench/partition_prototype.py --data-dir var/bench-3m"
    $P build [--partitions 8] [--hnsw goals|all|none]
    $P swap      # a served MMW now reads the partitioned table
    .venv/bin/python bench/goals.py --data-dir var/bench-3m --size 1000000 --calls 200
    $P unswap    # back to the plain table
    $P drop

NOT a migration of the app: it builds ``memories_memory_part``, a copy of ``memories_memory``
declared ``PARTITION BY HASH (account_id)`` with ``--partitions`` partitions, as a migration would
(create, copy, index), each phase timed, so the costs are measured on real data:

- the copy (``INSERT … SELECT`` of every stored column; the generated ``tsvector`` columns are
  computed again, as any rewrite does);
- what a partitioned table demands of the schema: a primary key and every unique index must
  include the partition key, so ``id`` becomes ``(id, account_id)`` and the fact-key uniqueness
  ``(workspace_id, fact_key, version)`` becomes ``(account_id, workspace_id, fact_key, version)``
  (the same rule: a workspace belongs to one account); a foreign key to the table must then name
  both columns (``memories_memoryrelation`` would carry the account);
- every other index (btree, GIN) is declared once on the parent and built per partition — there
  is no global index, so a lookup that does not name the account visits every partition;
- the HNSW index per partition (``--hnsw goals``: only the partition holding the ``goals-1000000``
  project's account, the one the search bench reads, to save the time of the rest; ``all``: every
  partition), each build timed (serial, ``PART_HNSW_MEMORY``);
- the statement triggers (live counts, term statistics, ``VectorSum``) re-created on the parent
  (statement triggers with transition tables are allowed on a partitioned table's root).

``swap`` renames the tables (and moves the foreign keys that point at the plain table out of
the way, re-added ``NOT VALID`` by ``unswap``) so that a served MMW and ``bench/goals.py`` read
the partitioned table: search latency before and after on the same data. Results:
``bench/out/partition-<records>.json``. A benchmark: it never fails on a figure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.bulk_load import GIN_MEMORY, build, setup
from bench.common import log

PARENT = "memories_memory_part"
FLAT = "memories_memory_flat"
PROJECT = "goals-1000000"
# A partition's HNSW build: no parallel workers (a parallel build reserves all of
# maintenance_work_mem as shared memory at once; a serial one grows to what the graph needs, ~2.7 KB
# a record), so it can run beside the plain table's build on this machine.
PART_HNSW_MEMORY = "4GB"
PART_HNSW_WORKERS = 0


def execute(sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def stored_columns() -> list[str]:
    return [
        name
        for (name,) in execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'memories_memory' "
            "AND is_generated = 'NEVER' ORDER BY ordinal_position"
        )
    ]


def goals_account() -> int:
    return int(execute("SELECT account_id FROM accounts_project WHERE name = %s", [PROJECT])[0][0])


def partition_of(account: int, partitions: int) -> str:
    for i in range(partitions):
        name = f"{PARENT}_p{i}"
        found = execute(
            f"SELECT satisfies_hash_partition('{PARENT}'::regclass, {partitions}, {i}, %s::bigint)", [account]
        )
        if found[0][0]:
            return name
    raise RuntimeError("no partition holds the account")


def index_ddl(partitions: int) -> list[tuple[str, str, str]]:
    """(name, kind, DDL) of every index of the plain table, rewritten for the partitioned one."""
    rows = execute(
        "SELECT i.relname, am.amname, pg_get_indexdef(i.oid), x.indisunique, x.indisprimary FROM pg_index x "
        "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam "
        "WHERE x.indrelid = 'memories_memory'::regclass"
    )
    out = []
    for name, kind, ddl, unique, primary in rows:
        if kind == "hnsw":
            continue  # per partition, below
        new = f"{name}_pt"
        ddl = ddl.replace(f"INDEX {name} ON", f"INDEX {new} ON").replace("public.memories_memory ", f"public.{PARENT} ")
        if primary:
            ddl = f"ALTER TABLE {PARENT} ADD CONSTRAINT {new} PRIMARY KEY (id, account_id)"
        elif unique:
            # every unique index of a partitioned table includes the partition key
            ddl = re.sub(r"USING btree \(", "USING btree (account_id, ", ddl, count=1)
        out.append((new, kind, ddl))
    return out


def cmd_build(partitions: int, hnsw: str) -> dict[str, Any]:
    from memories.embeddings import get_backend

    phases: dict[str, Any] = {"partitions": partitions}
    records = int(execute("SELECT count(*) FROM memories_memory")[0][0])
    phases["records"] = records
    execute(f"DROP TABLE IF EXISTS {PARENT} CASCADE")
    execute(
        f"CREATE TABLE {PARENT} (LIKE memories_memory INCLUDING DEFAULTS INCLUDING GENERATED "
        f"INCLUDING CONSTRAINTS) PARTITION BY HASH (account_id)"
    )
    for i in range(partitions):
        execute(
            f"CREATE TABLE {PARENT}_p{i} PARTITION OF {PARENT} FOR VALUES WITH (MODULUS {partitions}, REMAINDER {i})"
        )
    columns = ", ".join(f'"{c}"' for c in stored_columns())
    started = time.perf_counter()
    execute(f"INSERT INTO {PARENT} ({columns}) SELECT {columns} FROM memories_memory")  # noqa: S608 - catalog names
    phases["copy_seconds"] = round(time.perf_counter() - started, 1)
    log(f"partition: copied {records:,} records in {phases['copy_seconds']}s")
    builds: dict[str, float] = {}
    by_kind: dict[str, float] = {}
    for name, kind, ddl in index_ddl(partitions):
        seconds, _ = build(ddl, GIN_MEMORY, 1) if ddl.startswith("CREATE") else _timed(ddl)
        builds[name] = round(seconds, 1)
        by_kind[kind] = round(by_kind.get(kind, 0) + seconds, 1)
        log(f"partition: {name} ({kind}) in {seconds:.0f}s")
    phases["index_seconds"] = builds
    phases["index_seconds_by_kind"] = by_kind
    backend = get_backend("use")
    model = backend.model_id
    account = goals_account()
    home = partition_of(account, partitions)
    phases["goals_partition"] = home
    counted = "SELECT count(*) FROM {}"
    phases["partition_rows"] = {
        f"{PARENT}_p{i}": int(execute(counted.format(f"{PARENT}_p{i}"))[0][0]) for i in range(partitions)
    }
    targets = [] if hnsw == "none" else [home] if hnsw == "goals" else [f"{PARENT}_p{i}" for i in range(partitions)]
    hnsw_builds = {}
    for table in targets:
        ddl = (
            f"CREATE INDEX {table}_hnsw ON {table} USING hnsw ((embedding::vector({int(backend.dim)})) "
            f"vector_cosine_ops) WHERE embedding_model = '{model}'"
        )
        seconds, notices = build(ddl, PART_HNSW_MEMORY, PART_HNSW_WORKERS)
        size = int(execute("SELECT pg_relation_size(%s::regclass)", [f"{table}_hnsw"])[0][0])
        hnsw_builds[table] = {"seconds": round(seconds, 1), "bytes": size, "rows": phases["partition_rows"][table]}
        log(f"partition: HNSW of {table} ({phases['partition_rows'][table]:,} rows) in {seconds:.0f}s, {notices}")
    phases["hnsw"] = hnsw_builds
    for name, definition in execute(
        "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'memories_memory'::regclass "
        "AND NOT tgisinternal"
    ):
        execute(definition.replace("ON public.memories_memory ", f"ON public.{PARENT} ").replace(name, f"{name}_pt", 1))
    started = time.perf_counter()
    execute(f"ANALYZE {PARENT}")
    phases["analyze_seconds"] = round(time.perf_counter() - started, 1)
    return phases


def _timed(sql: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    execute(sql)
    return time.perf_counter() - started, []


def cmd_swap() -> dict[str, Any]:
    from django.db import transaction

    with transaction.atomic():
        fks = execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE confrelid = 'memories_memory'::regclass AND contype = 'f'"
        )
        execute("CREATE TABLE IF NOT EXISTS bench_moved_fk (tbl text, name text, def text)")
        for table, name, definition in fks:
            execute("INSERT INTO bench_moved_fk VALUES (%s, %s, %s)", [table, name, definition])
            execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
        execute(f"ALTER TABLE memories_memory RENAME TO {FLAT}")
        execute(f"ALTER TABLE {PARENT} RENAME TO memories_memory")
    return {"moved_foreign_keys": [name for _t, name, _d in fks]}


def cmd_unswap() -> dict[str, Any]:
    from django.db import transaction

    with transaction.atomic():
        execute(f"ALTER TABLE memories_memory RENAME TO {PARENT}")
        execute(f"ALTER TABLE {FLAT} RENAME TO memories_memory")
        moved = execute("SELECT tbl, name, def FROM bench_moved_fk")
        for table, name, definition in moved:
            execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition} NOT VALID")
        execute("DELETE FROM bench_moved_fk")
    return {"restored_foreign_keys": [name for _t, name, _d in moved]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser, "var/bench-3m")
    parser.add_argument("action", choices=("build", "swap", "unswap", "drop"))
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--hnsw", choices=("goals", "all", "none"), default="goals")
    parser.add_argument("--project", default="goals-1000000", help="the project measured")
    args = parser.parse_args()
    global PROJECT
    PROJECT = args.project
    setup(args.data_dir.resolve())  # no migrate: its hook would build a dropped HNSW index
    if args.action == "build":
        result = cmd_build(args.partitions, args.hnsw)
        result["machine"] = common.machine_notes()
        common.OUT_DIR.mkdir(parents=True, exist_ok=True)
        out = common.OUT_DIR / f"partition-{result['records']}.json"
        out.write_text(json.dumps(result, indent=1))
        log(f"partition: {json.dumps(result)}")
    elif args.action == "swap":
        log(f"swap: {cmd_swap()}")
    elif args.action == "unswap":
        log(f"unswap: {cmd_unswap()}")
    else:
        execute(f"DROP TABLE IF EXISTS {PARENT} CASCADE")
        log("dropped")


if __name__ == "__main__":
    main()
