"""What ``VectorSum`` costs: a write (one record inserted, then forgotten, with the
``mmw_vector_sums`` triggers enabled and disabled in alternating blocks on the same table), and a
read (the dense ranker's statement with the background — the join and each candidate's cosine
with its workspace's sum less itself — and without it, in alternating blocks).

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.archive.vectorsum_cost [--records 400]

In process, on the bench database, into one workspace already holding ``--existing`` records
(USE-sized vectors): each sample is one transaction inserting one record with a vector
(``Memory.objects.create``, every other trigger as shipped), or one ``UPDATE`` setting its
``forgotten_at`` (the subtract path). Blocks of 20 alternate between the two settings so the
machine's noise hits both alike. The read: ``search.nearest`` for 50 records of that workspace
nearest a random vector; "without" is the same statement in the form session turns get (no
join, background 0). Prints p50 / p95 per statement and setting and the difference. A benchmark,
not a test; the triggers are enabled again whatever happens.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common
from bench.common import markdown_table, summary_ms

TRIGGERS = ("mmw_vector_sums_insert", "mmw_vector_sums_update")
BLOCK = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    parser.add_argument("--records", type=int, default=400, help="samples per setting and statement")
    parser.add_argument("--existing", type=int, default=2000)
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.models import ApiKey, Project, Workspace
    from memories.models import Memory

    common.reset_memories()
    tenant = common.bench_tenant(f"vectorsum-cost-{int(time.time())}")
    project = Project.objects.select_related("account").get(id=tenant.project_id)
    key = ApiKey.objects.select_related("user").filter(project=project).order_by("-id").first()
    assert key is not None
    workspace, _ = Workspace.objects.get_or_create(project=project, name="default")
    rng = random.Random(3)

    def vector() -> list[float]:
        v = [rng.gauss(0.0, 1.0) for _ in range(512)]
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]

    def record(i: int) -> Memory:
        return Memory(
            account=project.account,
            project=project,
            workspace=workspace,
            content=f"fact {i}: the service number {i} deploys on day {i % 7}",
            author=key.user,
            api_key=key,
            embedding=vector(),
            embedding_model="use-multilingual-v3@512",
            occurred_at=timezone.now(),
        )

    Memory.objects.bulk_create([record(i) for i in range(args.existing)], batch_size=500)
    common.vacuum_analyze()
    samples: dict[tuple[str, str], list[float]] = {}

    def timed(statement: str, setting: str, work: Callable[[], object]) -> None:
        started = time.perf_counter()
        with transaction.atomic():
            work()
        samples.setdefault((statement, setting), []).append((time.perf_counter() - started) * 1000)

    def set_triggers(enabled: bool) -> None:
        with connection.cursor() as cursor:
            for name in TRIGGERS:
                cursor.execute(f"ALTER TABLE memories_memory {'ENABLE' if enabled else 'DISABLE'} TRIGGER {name}")

    n = 0
    try:
        for block in range(2 * args.records // BLOCK):
            setting = "triggers on" if block % 2 == 0 else "triggers off"
            set_triggers(setting == "triggers on")
            for _ in range(BLOCK):
                n += 1
                fresh = record(args.existing + n)
                timed("insert", setting, fresh.save)
                forget = Memory.objects.filter(pk=fresh.pk)

                def forget_it(forget: Any = forget) -> object:
                    return forget.update(forgotten_at=timezone.now())

                timed("forget", setting, forget_it)
    finally:
        set_triggers(True)
    read_cost(tenant.api_key, vector, args.records, samples)
    rows = []
    for statement, with_, without in (
        ("insert", "triggers on", "triggers off"),
        ("forget", "triggers on", "triggers off"),
        ("dense ranker (50 nearest)", "background", "no background"),
    ):
        on, off = summary_ms(samples[(statement, with_)]), summary_ms(samples[(statement, without)])
        rows.append(
            [
                statement,
                f"{off['p50']:.2f} / {off['p95']:.2f}",
                f"{on['p50']:.2f} / {on['p95']:.2f}",
                f"{on['p50'] - off['p50']:+.2f} / {on['p95'] - off['p95']:+.2f}",
            ]
        )
    print(markdown_table(["statement", "without (p50 / p95 ms)", "with (p50 / p95 ms)", "difference"], rows))
    print(
        f"\n{args.records} samples per cell, {args.existing} records in the workspace; blocks of {BLOCK} alternating."
    )


def read_cost(
    api_key: str, vector: Callable[[], list[float]], records: int, samples: dict[tuple[str, str], list[float]]
) -> None:
    """``records`` timings of the dense ranker's statement per setting, in alternating blocks."""
    from accounts.keys import resolve_key
    from memories import search, selectors, sql

    principal = resolve_key(api_key)
    assert principal is not None
    scope = selectors.memory_queryset(principal=principal, workspace="default")
    assert scope is not None
    shipped = sql._MEMORY_TABLE
    try:
        for block in range(2 * records // BLOCK):
            setting = "background" if block % 2 == 0 else "no background"
            # The statement's form without the background is the one it takes for other tables.
            sql._MEMORY_TABLE = shipped if setting == "background" else '"not memories"'
            for _ in range(BLOCK):
                query = vector()
                started = time.perf_counter()
                found = search.nearest(scope, query, "use-multilingual-v3@512", 50)
                samples.setdefault(("dense ranker (50 nearest)", setting), []).append(
                    (time.perf_counter() - started) * 1000
                )
                assert len(found) == 50
                assert (setting == "background") == any(c.background for c in found)
    finally:
        sql._MEMORY_TABLE = shipped


if __name__ == "__main__":
    main()
