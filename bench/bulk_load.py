"""Load a bench database to millions of records in SQL, for the scale measurements (issue #43).

    nice -n 10 .venv/bin/python bench/bulk_load.py --data-dir var/bench-3m --size 1000000
    nice -n 10 .venv/bin/python bench/bulk_load.py --data-dir var/bench-3m --size 3000000

``bench/goals.py`` loads through the ORM (``bulk_create`` of Python-built vectors): 1M records
took 25.5 minutes here, so 3M would take well over an hour before its HNSW build. This loader
writes the same records without leaving PostgreSQL: the ~2,900 benchmark sentences and their USE
vectors (``goals._sentence_vectors``, the same cache) go into a scratch table once, then each
chunk of ``--chunk`` records is one ``INSERT … SELECT`` joining two random sentences: the content
is the two sentences joined by a space and the vector ``l2_normalize(a + b)``, exactly the records
and vectors ``goals.load_project`` writes. Everything else is production's schema: the generated
``tsvector`` columns, the btree indexes, the statement triggers (live counts, term statistics,
``VectorSum``) fire per chunk as they fire per batch insert. Only the HNSW index and the two big
GIN indexes (``memory_keyword_gin``, ``memory_tags_gin``) are dropped before the load and built
again after it (``goals.load_project`` does so for HNSW), each build timed.

Where the records go: the first ``--project-size`` records (1M by default) are the ``goals-<N>``
project of the bench account, the very project ``bench/goals.py --size <N>`` measures; the rest
are spread evenly over ``--accounts`` other accounts (one project, one workspace each), as a
hosted service's table fills: one workspace holds at most ``MMW_MAX_MEMORIES_PER_WORKSPACE``
(1M by default) records, so a 3M-record table is many accounts. ``created_at`` spreads over two
years in each project, oldest first. Run it again with a bigger ``--size`` to grow the same
database (what is there is kept); every phase's seconds are logged and written to
``bench/out/bulk-load-<size>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, latency
from bench.common import log

SPREAD_DAYS = 730
BIG_INDEXES = ("memory_keyword_gin", "memory_tags_gin")
HNSW_MEMORY = "9GB"  # 3M x (512 float4 + graph) is ~7.5 GB: the build stays in memory
HNSW_WORKERS = 1
GIN_MEMORY = "1GB"


def setup(data_dir: Path) -> None:
    """Django on the bench database; ``migrate`` only when the memory table is missing. On a
    migrated database ``migrate``'s post-migrate hook would build a dropped HNSW index at once,
    with the server's default memory (minutes at 1M, wasted before a load that drops it again)."""
    env = common.bench_environment(data_dir)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("MMW_", "DJANGO_"))})
    import django

    django.setup()
    from django.db import connection

    if "memories_memory" not in connection.introspection.table_names():
        common.setup_django(data_dir)


def scale_tenant(i: int) -> tuple[Any, Any, Any]:
    """The project, workspace and key of the ``i``-th other account (created when missing)."""
    from accounts import services
    from accounts.models import ApiKey, Workspace
    from billing.models import Plan, Subscription

    user, _ = services.user_get_or_create(email=f"scale-{i:04d}@bench.invalid")
    account = services.personal_account(user=user)
    plan, _ = Plan.objects.get_or_create(
        code=common.BENCH_PLAN,
        defaults={"name": "Bench (unlimited)", "is_active": False, "organization_features": True},
    )
    Subscription.objects.update_or_create(account=account, defaults={"plan": plan, "state": "active"})
    project, _ = services.project_get_or_create(account=account, name=f"scale-{i:04d}", actor=user)
    key = ApiKey.objects.select_related("user").filter(project=project).order_by("-id").first()
    if key is None:
        services.api_key_create(user=user, project=project, name="bench", device_label="bench")
        key = ApiKey.objects.select_related("user").filter(project=project).order_by("-id").first()
    ws, _ = Workspace.objects.get_or_create(project=project, name="default")
    return project, ws, key


def sentences_table(data_dir: Path) -> int:
    """The benchmark sentences and their USE vectors in ``bench_sentence`` (a scratch table)."""
    from django.db import connection

    from bench.goals import _sentence_vectors

    texts = latency.Texts(seed=1)
    vectors = _sentence_vectors(texts, data_dir)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_sentence (i int PRIMARY KEY, text text NOT NULL, v vector NOT NULL)"
        )
        cursor.execute("SELECT count(*) FROM bench_sentence")
        if cursor.fetchone()[0] == len(texts.pool):
            return len(texts.pool)
        cursor.execute("TRUNCATE bench_sentence")
        rows = [
            (i, text, "[" + ",".join(f"{x:.7g}" for x in np.asarray(v, dtype=np.float64)) + "]")
            for i, (text, v) in enumerate(zip(texts.pool, vectors, strict=True))
        ]
        cursor.executemany("INSERT INTO bench_sentence (i, text, v) VALUES (%s, %s, %s::vector)", rows)
    return len(rows)


INSERT = """
INSERT INTO memories_memory (
    id, content, scope, source, source_id, version, confidence, importance, derived_from, tags,
    visibility, department_ids, device_label, created_at, occurred_at, archived_at,
    embedding, embedding_model, account_id, api_key_id, author_id, project_id, workspace_id)
SELECT gen_random_uuid(), a.text || ' ' || b.text, 'shared', 'agent', %(source)s || '/' || (g.n / 50),
    1, 0.5, 0.5, '{}', '{}', 'project', '{}', %(device)s, t.at, t.at, now(),
    l2_normalize(a.v + b.v), %(model)s, %(account)s, %(key)s, %(author)s, %(project)s, %(workspace)s
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g(n)
CROSS JOIN LATERAL (
    SELECT floor(random() * %(pool)s)::int AS x, floor(random() * %(pool)s)::int AS y,
        now() - make_interval(days => %(days)s) + (g.n::float8 / %(total)s) * make_interval(days => %(days)s) AS at
) AS t
JOIN bench_sentence a ON a.i = t.x
JOIN bench_sentence b ON b.i = t.y
"""


def insert_params(target: tuple[Any, Any, Any], model: str, pool: int, source: str, total: int) -> dict[str, Any]:
    """``INSERT``'s parameters for records of ``target`` (project, workspace, key), but the range
    (``first``, ``last``)."""
    project, ws, key = target
    return {
        "source": source,
        "device": key.device_label,
        "model": model,
        "account": project.account_id,
        "key": key.id,
        "author": key.user_id,
        "project": project.id,
        "workspace": ws.id,
        "total": total,
        "pool": pool,
        "days": SPREAD_DAYS,
    }


def insert(target: tuple[Any, Any, Any], first: int, last: int, total: int, model: str, pool: int, source: str) -> None:
    """Records ``first``..``last`` (of ``total`` in this project) into ``target``, one statement."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(INSERT, {**insert_params(target, model, pool, source, total), "first": first, "last": last})


def project_count(project_id: Any) -> int:
    from memories.models import Memory

    return Memory.objects.filter(project_id=project_id).count()


def index_definitions() -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories_memory'")
        return dict(cursor.fetchall())


def watch_progress(stop: threading.Event) -> None:
    """Log ``pg_stat_progress_create_index`` every minute until ``stop`` (a long build's rate)."""
    from django.db import connections

    started = time.perf_counter()
    try:
        while not stop.wait(60):
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index")
                for phase, done, total in cursor.fetchall():
                    log(f"index build: {phase}, {done:,} tuples of {total:,} at {time.perf_counter() - started:.0f}s")
    finally:
        connections["default"].close()


def build(definition: str, memory: str, workers: int) -> tuple[float, list[str]]:
    """Run one CREATE INDEX with ``memory`` of maintenance_work_mem; seconds and the notices."""
    from django.db import connection

    stop = threading.Event()
    watcher = threading.Thread(target=watch_progress, args=(stop,), daemon=True)
    watcher.start()
    try:
        return _build(connection, definition, memory, workers)
    finally:
        stop.set()
        watcher.join()


def _build(connection: Any, definition: str, memory: str, workers: int) -> tuple[float, list[str]]:

    notices: list[str] = []
    with connection.cursor() as cursor:
        raw = cursor.connection
        handler = lambda diag: notices.append(diag.message_primary or "")  # noqa: E731
        raw.add_notice_handler(handler)
        try:
            cursor.execute(f"SET maintenance_work_mem = '{memory}'")
            cursor.execute(f"SET max_parallel_maintenance_workers = {int(workers)}")
            started = time.perf_counter()
            cursor.execute(definition.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
            seconds = time.perf_counter() - started
        finally:
            cursor.execute("RESET maintenance_work_mem")
            cursor.execute("RESET max_parallel_maintenance_workers")
            raw.remove_notice_handler(handler)
    return seconds, notices


def forget_dropped(name: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM bench_dropped_index WHERE name = %s", [name])


def relation_size(name: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s::regclass)", [name])
        return int(cursor.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser, "var/bench-3m")
    parser.add_argument("--size", type=int, required=True, help="records in the table when done")
    parser.add_argument("--project-size", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=200, help="other accounts sharing the rest")
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--hnsw-workers", type=int, default=HNSW_WORKERS, help="parallel workers of the HNSW build")
    parser.add_argument("--hnsw-memory", default=HNSW_MEMORY, help="maintenance_work_mem of the HNSW build")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    setup(data_dir)

    from django.db import connection

    from memories.embeddings import get_backend
    from memories.vector_index import index_name

    phases: dict[str, Any] = {}
    started = time.perf_counter()
    pool = sentences_table(data_dir)
    model = get_backend("use").model_id
    hnsw = index_name(model)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        before = int(cursor.fetchone()[0])
    log(f"bulk load: {before:,} records in the table, target {args.size:,}")

    # Every project's share: goals-<project-size> first, then the other accounts evenly.
    plan: list[tuple[tuple[Any, Any, Any], int, str]] = []
    tenant = common.bench_tenant(f"goals-{args.project_size}")
    plan.append((common.load_target(tenant, "default"), min(args.project_size, args.size), "goals"))
    rest = max(0, args.size - args.project_size)
    if rest:
        per = -(-rest // args.accounts)
        for i in range(args.accounts):
            share = min(per, rest - i * per)
            if share > 0:
                plan.append((scale_tenant(i), share, "scale"))
    phases["tenants"] = round(time.perf_counter() - started, 1)

    # The dropped indexes' definitions are kept in the database until they are built again: a
    # load interrupted in between (or a build cancelled) is finished by the next run.
    definitions = index_definitions()
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS bench_dropped_index (name text PRIMARY KEY, definition text)")
        if before < args.size:
            for name in (hnsw, *BIG_INDEXES):
                if name in definitions:
                    cursor.execute(
                        "INSERT INTO bench_dropped_index VALUES (%s, %s) ON CONFLICT DO NOTHING",
                        [name, definitions[name]],
                    )
                    cursor.execute(f"DROP INDEX IF EXISTS {name}")
        cursor.execute("SELECT name, definition FROM bench_dropped_index")
        dropped = dict(cursor.fetchall())
    log(f"bulk load: indexes to build after the load: {', '.join(dropped) or 'none'}")

    mark = time.perf_counter()
    loaded = 0
    for target, share, source in plan:
        have = project_count(target[0].id)
        n = have
        while n < share:
            last = min(share, n + args.chunk) - 1
            insert(target, n, last, share, model, pool, source)
            loaded += last - n + 1
            n = last + 1
            if loaded % 250_000 < args.chunk:
                elapsed = time.perf_counter() - mark
                log(f"bulk load: +{loaded:,} in {elapsed:.0f}s ({loaded / elapsed:,.0f} records/s)")
    phases["insert"] = round(time.perf_counter() - mark, 1)
    phases["inserted"] = loaded
    phases["insert_per_s"] = round(loaded / max(phases["insert"], 0.001))
    log(f"bulk load: {loaded:,} records inserted in {phases['insert']}s")

    builds: dict[str, Any] = {}
    for name, definition in dropped.items():
        if name == hnsw:
            continue
        seconds, notices = build(definition, GIN_MEMORY, 0)
        builds[name] = {"seconds": round(seconds, 1), "bytes": relation_size(name), "maintenance_work_mem": GIN_MEMORY}
        forget_dropped(name)
        log(f"bulk load: built {name} in {seconds:.0f}s ({builds[name]['bytes'] / 2**20:,.0f} MiB)")
    if hnsw in dropped:
        seconds, notices = build(dropped[hnsw], args.hnsw_memory, args.hnsw_workers)
        builds[hnsw] = {
            "seconds": round(seconds, 1),
            "bytes": relation_size(hnsw),
            "maintenance_work_mem": args.hnsw_memory,
            "parallel_workers": args.hnsw_workers,
            "notices": notices,
        }
        forget_dropped(hnsw)
        log(f"bulk load: built {hnsw} in {seconds:.0f}s ({builds[hnsw]['bytes'] / 2**20:,.0f} MiB) {notices}")
    phases["indexes"] = builds

    mark = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")
    phases["vacuum_analyze"] = round(time.perf_counter() - mark, 1)
    phases["total"] = round(time.perf_counter() - started, 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        phases["records"] = int(cursor.fetchone()[0])
    result = {"size": args.size, "before": before, "phases": phases, "machine": common.machine_notes()}
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / f"bulk-load-{args.size}.json").write_text(json.dumps(result, indent=1))
    log(f"bulk load: {json.dumps(phases)}")


if __name__ == "__main__":
    main()
