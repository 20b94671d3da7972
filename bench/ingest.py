"""Ingest through REST (issue #15): records acknowledged per second and time until every vector is in,
for one-at-a-time ``remember`` (the baseline, measured in the same run) and ``POST
/api/v1/memories/batch`` with 1 / 50 / 200 / 500 records per call, from 1 to 4 concurrent clients.

One ``manage.py serve`` *with* its Celery worker (the vectors of a batch are computed there) on the
bench database; every configuration starts from an idle worker (the previous one's archivist
backlog dropped: ``_settle``) so configurations do not pay for each other.

- acknowledged/s: records in 2xx answers / wall time from the first request to the last answer;
- embedded/s: the same records / wall time from the first request until each has its vector
  (one-at-a-time ``remember`` embeds inside the request: its two rates are the same);
- archived/s: records the archivist has related within ``ARCHIVE_WINDOW`` s after the vectors
  (reported, not a goal: its rate, ~6-8/s here, is the next limit after ingest).

``--scale N``: afterwards, load N records into one project with 500-record batches from 4
clients, and report the time, the database size and search p50/p95 at that size.

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench import common
from bench.common import log
from bench.latency import Texts

BATCH_SIZES = (1, 50, 200, 500)
CLIENTS = (1, 2, 4)
ARCHIVE_WINDOW = 30.0  # seconds the archivist is watched after the vectors are in (its rate, not its backlog)
EMBED_TIMEOUT = 600.0
POLL = 0.25


@dataclass(frozen=True)
class Config:
    label: str
    batch: int  # 0: one-at-a-time remember (the baseline)
    clients: int
    records: int


def plan(quick: bool) -> list[Config]:
    """The baseline and every batch size x client count; enough records that a run lasts seconds."""
    baseline_records = 120 if quick else 400
    configs = [Config(f"remember x{c}", 0, c, baseline_records) for c in (1, 4)]
    for size in BATCH_SIZES:
        for clients in CLIENTS if not quick else (1, 4):
            total = 200 if size == 1 else max(size * clients * (1 if quick else 4), 1000 if not quick else 500)
            configs.append(Config(f"batch {size} x{clients}", size, clients, total))
    return configs


async def _send(url: str, key: str, config: Config, bodies: list[dict[str, Any]]) -> tuple[list[str], float]:
    """Send ``bodies`` as ``config`` says; the stored ids and the seconds until the last answer."""
    headers = {"Authorization": f"Bearer {key}"}
    ids: list[str] = []
    if config.batch == 0:
        calls: list[Any] = [("/api/v1/memories", body) for body in bodies]
    else:
        calls = [
            ("/api/v1/memories/batch", {"records": bodies[i : i + config.batch]})
            for i in range(0, len(bodies), config.batch)
        ]

    async def client(share: Sequence[tuple[str, dict[str, Any]]]) -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=300.0) as http:
            for path, body in share:
                response = await http.post(path, json=body)
                if response.status_code >= 300:
                    raise RuntimeError(f"POST {path} -> {response.status_code}: {response.text[:300]}")
                answer = response.json()
                results = answer["results"] if config.batch else [answer]
                ids.extend(r["id"] for r in results if "id" in r)

    start = time.perf_counter()
    await asyncio.gather(*(client(calls[i :: config.clients]) for i in range(config.clients)))
    return ids, time.perf_counter() - start


def _count(ids: Sequence[str], column: str) -> int:
    from memories.models import Memory

    wanted = [uuid.UUID(i) for i in ids]
    return Memory.objects.filter(id__in=wanted, **{f"{column}__isnull": False}).count()


def _wait(ids: Sequence[str], column: str, timeout: float) -> float | None:
    """Seconds (from now) until every record of ``ids`` has ``column`` set; None past ``timeout``."""
    start = time.perf_counter()
    while _count(ids, column) < len(ids):
        if time.perf_counter() - start > timeout:
            return None
        time.sleep(POLL)
    return time.perf_counter() - start


def _settle() -> None:
    """Bench only: drop the archivist runs still queued (and mark their records archived), so the
    next configuration starts with an idle worker. The archivist relates ~6-8 records/s on this
    machine (``archived_per_s`` below, measured for the first ``ARCHIVE_WINDOW`` seconds): a
    backlog of thousands would otherwise take the next configuration's CPU."""
    from django.utils import timezone

    from memories.models import Memory
    from mmw.celery import app

    app.control.purge()
    time.sleep(2.0)  # the runs the worker had already taken finish
    Memory.objects.filter(archived_at__isnull=True).update(archived_at=timezone.now())


def measure(url: str, key: str, config: Config, texts: Texts) -> dict[str, Any]:
    source = f"ingest/{config.label}"
    bodies = [{"content": texts.record(), "source_id": source, "position": i} for i in range(config.records)]
    started = time.perf_counter()
    ids, acknowledged = asyncio.run(_send(url, key, config, bodies))
    embedded_after = _wait(ids, "embedding", EMBED_TIMEOUT)
    embedded = None if embedded_after is None else time.perf_counter() - started
    archived_after = _wait(ids, "archived_at", ARCHIVE_WINDOW)
    archived_count = len(ids) if archived_after is not None else _count(ids, "archived_at")
    archived = time.perf_counter() - started
    row = {
        "config": config.label,
        "batch": config.batch,
        "clients": config.clients,
        "records": len(ids),
        "acknowledged_per_s": round(len(ids) / acknowledged, 1),
        "seconds_to_acknowledge": round(acknowledged, 2),
        "embedded_per_s": None if embedded is None else round(len(ids) / embedded, 1),
        "seconds_to_every_vector": None if embedded is None else round(embedded, 2),
        "archived_per_s": round(archived_count / archived, 1),
    }
    log(f"ingest {config.label}: {row}")
    return row


def scale(
    url: str, tenant: common.Tenant, texts: Texts, total: int, queries: int = 100, vector_wait: float | None = None
) -> dict[str, Any]:
    """Load ``total`` records into one project with 500-record batches from 4 clients, wait for
    every vector (at most ``vector_wait`` seconds after the last acknowledgement, when given),
    then time ``queries`` searches over the project; records still without a vector are counted."""
    from django.db import connection

    from memories.models import Memory

    config = Config(f"scale {total}", 500, 4, total)
    loaded = 0
    started = time.perf_counter()
    chunk = 20_000  # records per round, so the texts are generated as we go
    for offset in range(0, total, chunk):
        bodies = [{"content": texts.record()} for _ in range(min(chunk, total - offset))]
        ids, _ = asyncio.run(_send(url, tenant.api_key, config, bodies))
        loaded += len(ids)
        log(f"scale: {loaded} records acknowledged after {time.perf_counter() - started:.0f}s")
    acknowledged = time.perf_counter() - started
    waiting = Memory.objects.filter(project_id=tenant.project_id, embedding__isnull=True)
    while waiting.exists() and (vector_wait is None or time.perf_counter() - started - acknowledged < vector_wait):
        time.sleep(2.0)
    embedded = time.perf_counter() - started
    missing = waiting.count()
    log(f"scale: after {embedded:.0f}s, {missing} records still without a vector")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database()), pg_total_relation_size('memories_memory')")
        row = cursor.fetchone()
    assert row is not None
    database_bytes, table_bytes = row
    common.vacuum_analyze()
    latencies: list[float] = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tenant.api_key}"}, timeout=60.0) as http:
        for _ in range(queries):
            start = time.perf_counter()
            http.post("/api/v1/memories/search", json={"query": texts.query()}).raise_for_status()
            latencies.append((time.perf_counter() - start) * 1000)
    return {
        "records": loaded,
        "seconds_to_acknowledge": round(acknowledged),
        "seconds_to_every_vector": round(embedded) if not missing else None,
        "vectors_missing_at_search": missing,
        "database_mb": round(database_bytes / 2**20),
        "memories_table_mb": round(table_bytes / 2**20),
        "search_ms": common.summary_ms(latencies),
    }


def run(
    data_dir: Path,
    quick: bool,
    scale_to: int | None = None,
    backend: str = "use",
    *,
    configs: bool = True,
    vector_wait: float | None = None,
) -> dict[str, Any]:
    common.reset_memories()
    tenant = common.bench_tenant(f"ingest-{int(time.time())}")
    texts = Texts(seed=15)
    rows: list[dict[str, Any]] = []
    result: dict[str, Any] = {"backend": backend, "rows": rows}
    with common.Server(data_dir, backend, "ingest", worker=True) as server:
        for config in plan(quick) if configs else []:
            _settle()
            rows.append(measure(server.url, tenant.api_key, config, texts))
        if scale_to:
            _settle()
            tenant = common.bench_tenant(f"scale-{int(time.time())}")
            result["scale"] = scale(server.url, tenant, texts, scale_to, vector_wait=vector_wait)
            log(f"scale: {result['scale']}")
    return result


def tables(result: dict[str, Any]) -> list[str]:
    """BENCHMARKS.md's tables: each configuration with its ratios to the one-at-a-time baseline."""
    rows = result["rows"]
    out: list[str] = []
    if rows:
        out.append(_config_table(rows))
    if "scale" in result:
        s = result["scale"]
        out.append(
            common.markdown_table(
                ["records", "acknowledged (s)", "every vector in (s)", "database MB", "table MB", "search p50/p95 ms"],
                [
                    [
                        s["records"],
                        s["seconds_to_acknowledge"],
                        s["seconds_to_every_vector"]
                        if s["seconds_to_every_vector"] is not None
                        else f"{s.get('vectors_missing_at_search', '?')} still missing at search",
                        s["database_mb"],
                        s["memories_table_mb"],
                        f"{s['search_ms']['p50']} / {s['search_ms']['p95']}",
                    ]
                ],
            )
        )
    return out


def _config_table(rows: list[dict[str, Any]]) -> str:
    base = next(r for r in rows if r["config"] == "remember x1")
    base4 = next(r for r in rows if r["config"] == "remember x4")

    def ratio(value: float | None, of: float) -> str:
        return "—" if value is None else f"{value / of:.1f}×"

    return common.markdown_table(
        [
            "configuration",
            "records",
            "acknowledged/s",
            "vs remember x1",
            "vs remember x4",
            "every vector in (s)",
            "embedded/s",
            "vs remember x1",
            "archived/s",
        ],
        [
            [
                r["config"],
                r["records"],
                r["acknowledged_per_s"],
                ratio(r["acknowledged_per_s"], base["acknowledged_per_s"]),
                ratio(r["acknowledged_per_s"], base4["acknowledged_per_s"]),
                r["seconds_to_every_vector"],
                r["embedded_per_s"],
                ratio(r["embedded_per_s"], base["embedded_per_s"]),
                r["archived_per_s"],
            ]
            for r in rows
        ],
    )
