"""Latency and scale: ``remember`` and ``search`` through REST and through MCP as one project grows.

One project, two workspaces: ``default`` grows to each size in turn, ``side`` holds a fixed 500
records (a search there is a selective filter: 500 of N rows of the global HNSW index). Records
up to each size are written by a bench-only bulk loader (Django ``bulk_create`` of the same fields
``remember`` writes, vectors computed in batches by the configured backend); the measured calls
then go through a real server. At each size, one call after another, interleaved so that noise
hits every operation alike:

- ``list_workspaces`` (auth, billing gate, a count of each workspace's readable records: O(n),
  so not a floor at scale) on both surfaces, and
  ``GET /healthz`` (no key): what any call costs on this machine at this moment;
- ``search`` (``default`` workspace, limit 10) and ``remember`` (new text, ``default``) on REST
  and MCP (the official SDK client, one connected client);
- ``search`` in ``side`` on REST (selective filter).

Then an ingest burst (REST ``remember`` from 4 concurrent clients) and ``EXPLAIN ANALYZE`` of
the SQL ``search`` issues (captured from the real selector, run in this process).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench import common
from bench.common import log

SIDE_RECORDS = 500
WARMUP_CALLS = 8
INGEST_CLIENTS = 4
LOAD_CHUNK = 2000
EMBED_BATCH = 256


# --- synthetic records ----------------------------------------------------------------------


class Texts:
    """Record texts and queries drawn from the benchmark corpora (LoCoMo turns and the
    multilingual facts, EN/RU/FR): each record joins two random sentences, so texts are unique,
    of realistic length and vocabulary, and their vectors spread like real ones."""

    def __init__(self, seed: int = 7) -> None:
        locomo = json.loads(common.LOCOMO_PATH.read_text())
        multi = json.loads(common.MULTILINGUAL_PATH.read_text())
        pool: list[str] = []
        questions: list[str] = []
        for sample in locomo:
            for key, turns in sample["conversation"].items():
                if re.fullmatch(r"session_\d+", key) and isinstance(turns, list):
                    pool += [f"{t['speaker']}: {t['text']}" for t in turns if t.get("text", "").strip()]
            questions += [str(qa["question"]) for qa in sample["qa"]]
        pool += [f["content"] for f in multi["facts"]]
        questions += [q["query"] for q in multi["queries"]]
        self.pool = pool
        self.questions = questions
        self._rng = random.Random(seed)

    def record(self) -> str:
        a, b = self._rng.sample(self.pool, 2)
        return f"{a} {b}"

    def query(self) -> str:
        return self._rng.choice(self.questions)


# --- bulk loader (bench only) -------------------------------------------------------------------


@dataclass
class Project:
    tenant: common.Tenant
    records: int = 0


def bulk_load(
    tenant: common.Tenant, workspace: str, count: int, texts: Texts, backend_name: str
) -> list[dict[str, float]]:
    """Bench-only: add ``count`` records to ``workspace`` with the fields ``remember`` writes
    (vectors from ``backend_name`` in batches; ``archived_at`` set, as after the archivist).
    Returns the growth curve: rows per second of each chunk against the table's size."""
    from memories.embeddings import get_backend
    from memories.models import Memory
    from memories.vectors import MAX_EMBEDDED_CHARS

    backend = get_backend(backend_name)
    target = common.load_target(tenant, workspace)
    project = target[0]
    curve: list[dict[str, float]] = []
    done = 0
    while done < count:
        n = min(LOAD_CHUNK, count - done)
        batch = [texts.record() for _ in range(n)]
        start = time.perf_counter()
        # Batches of similar length: the model pads a batch to its longest text.
        by_length = sorted(range(n), key=lambda j: len(batch[j]))
        vectors: list[list[float]] = [[] for _ in range(n)]
        for i in range(0, n, EMBED_BATCH):
            part = by_length[i : i + EMBED_BATCH]
            for j, vector in zip(
                part, backend.embed_documents([batch[j][:MAX_EMBEDDED_CHARS] for j in part]), strict=True
            ):
                vectors[j] = vector
        embedded = time.perf_counter()
        common.insert_archived(
            target,
            list(zip(batch, vectors, strict=True)),
            model_id=backend.model_id,
            source="bench",
            first=done,
            batch_size=500,
        )
        inserted = time.perf_counter()
        done += n
        size = Memory.objects.filter(project=project).count()
        curve.append(
            {
                "size": size,
                "rows": n,
                "embed_rows_per_s": round(n / (embedded - start), 1),
                "insert_rows_per_s": round(n / (inserted - embedded), 1),
            }
        )
        if len(curve) % 5 == 0 or done >= count:
            log(f"bulk loader: {workspace} +{done}/{count} (project {size}); last chunk {curve[-1]}")
    return curve


def project_size(tenant: common.Tenant) -> int:
    from memories.models import Memory

    return Memory.objects.filter(project_id=tenant.project_id, forgotten_at__isnull=True).count()


# --- the measured calls ---------------------------------------------------------------------------


async def _measure(url: str, key: str, texts: Texts, calls: int) -> dict[str, list[float]]:
    """Interleaved sequential calls on both surfaces; milliseconds per operation."""
    samples: dict[str, list[float]] = {}
    headers = {"Authorization": f"Bearer {key}"}

    async def work(client: Any) -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120.0) as http:

            async def rest(path: str, body: dict[str, Any] | None) -> None:
                r = await (http.get(path) if body is None else http.post(path, json=body))
                if r.status_code >= 400:
                    raise RuntimeError(f"{path}: {r.status_code} {r.text[:200]}")

            async def mcp(tool: str, args: dict[str, Any]) -> None:
                common.mcp_payload(await client.call_tool(tool, args))

            ops: list[tuple[str, Callable[[], Awaitable[None]]]] = [
                ("REST healthz (no auth)", lambda: rest("/healthz", None)),
                ("REST list_workspaces (floor)", lambda: rest("/api/v1/workspaces", None)),
                ("MCP list_workspaces (floor)", lambda: mcp("list_workspaces", {})),
                ("REST search", lambda: rest("/api/v1/memories/search", {"query": texts.query()})),
                ("MCP search", lambda: mcp("search", {"query": texts.query()})),
                ("REST remember", lambda: rest("/api/v1/memories", {"content": texts.record()})),
                ("MCP remember", lambda: mcp("remember", {"content": texts.record()})),
                (
                    "REST search, selective workspace",
                    lambda: rest("/api/v1/memories/search", {"query": texts.query(), "workspace": "side"}),
                ),
            ]
            for i in range(WARMUP_CALLS + calls):
                for name, op in ops:
                    start = time.perf_counter()
                    await op()
                    if i >= WARMUP_CALLS:
                        samples.setdefault(name, []).append((time.perf_counter() - start) * 1000)

    await common.mcp_session(url, key, work)
    return samples


async def _ingest(url: str, key: str, texts: Texts, total: int) -> float:
    """Records per second stored by ``INGEST_CLIENTS`` concurrent REST clients."""
    headers = {"Authorization": f"Bearer {key}"}
    bodies = [{"content": texts.record()} for _ in range(total)]

    async def client(share: Sequence[dict[str, Any]]) -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120.0) as http:
            for body in share:
                r = await http.post("/api/v1/memories", json=body)
                r.raise_for_status()

    start = time.perf_counter()
    await asyncio.gather(*(client(bodies[i::INGEST_CLIENTS]) for i in range(INGEST_CLIENTS)))
    return total / (time.perf_counter() - start)


# --- EXPLAIN ---------------------------------------------------------------------------------------


def explain_search(tenant: common.Tenant, query: str, workspace: str, out: Path) -> dict[str, Any]:
    """Capture the SQL the real ``search`` selector issues, then EXPLAIN ANALYZE its dense and
    keyword statements in the same settings (``hnsw.iterative_scan``, ``hnsw.ef_search``)."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from accounts.keys import resolve_key
    from memories import selectors
    from memories.dense import EF_SEARCH

    principal = resolve_key(tenant.api_key)
    assert principal is not None
    with CaptureQueriesContext(connection) as captured:
        selectors.memory_search(principal=principal, payload={"query": query, "workspace": workspace})
    statements = [q["sql"] for q in captured.captured_queries]
    dense = next((s for s in statements if "<=>" in s), None)
    keyword = next((s for s in statements if "search_document @@" in s), None)
    plans: dict[str, str] = {}
    for name, sql in (("dense", dense), ("keyword", keyword)):
        if sql is None:
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {int(EF_SEARCH)}")
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
            plans[name] = "\n".join(row[0] for row in cursor.fetchall())
    out.write_text(
        "\n\n".join(
            f"-- {name} ({workspace!r}, query {query!r})\n{sql}\n\n{plans.get(name, '')}"
            for name, sql in (("dense", dense), ("keyword", keyword))
        )
    )
    dense_plan = plans.get("dense", "")
    return {
        "workspace": workspace,
        "dense_uses_hnsw": "memory_emb_hnsw" in dense_plan,
        "dense_ms": _execution_ms(dense_plan),
        "keyword_uses_gin": "memory_search_document_gin" in plans.get("keyword", ""),
        "keyword_ms": _execution_ms(plans.get("keyword", "")),
        "plan_file": str(out.relative_to(common.ROOT)),
        "dense_top_node": dense_plan.splitlines()[0] if dense_plan else "",
    }


EF_VALUES = (40, 64, 100, 200)


def ef_sweep(tenant: common.Tenant, texts: Texts, workspace: str, queries: int = 30) -> list[dict[str, Any]]:
    """Bench-only, in-process: ``common.dense_hits`` with other ``EF_SEARCH`` values; time per
    call and recall@10 against the exact answer (same SQL with index scans disabled)."""
    from django.db import connection, transaction

    from accounts.keys import resolve_key
    from memories import dense, search, selectors

    principal = resolve_key(tenant.api_key)
    assert principal is not None
    qs = selectors.memory_queryset(principal=principal, workspace=workspace)
    assert qs is not None
    asked = [texts.query() for _ in range(queries)]
    exact: list[list[str]] = []
    for q in asked:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
            exact.append([str(h.id) for h in common.dense_hits(qs, q, 10)])
    original = dense.EF_SEARCH
    out = []
    try:
        for ef in EF_VALUES:
            dense.EF_SEARCH = ef
            times, recall = [], []
            for q, truth in zip(asked, exact, strict=True):
                start = time.perf_counter()
                hits = common.dense_hits(qs, q, max(search.MIN_CANDIDATES, 40))
                times.append((time.perf_counter() - start) * 1000)
                recall.append(len({str(h.id) for h in hits[:10]} & set(truth)) / max(1, len(truth)))
            out.append(
                {"ef_search": ef, **common.summary_ms(times), "recall@10_vs_exact": round(sum(recall) / len(recall), 3)}
            )
    finally:
        dense.EF_SEARCH = original
    log(f"ef_search sweep ({workspace}): {out}")
    return out


def inprocess_breakdown(tenant: common.Tenant, texts: Texts, calls: int = 40) -> dict[str, dict[str, float]]:
    """Bench-only, in-process (no HTTP): where ``search`` and ``remember`` spend their time, and
    what candidate fixes outside the tuning constants would save. Each variant patches the
    module for its own calls only; calls are interleaved.

    - search, as is: ``selectors.memory_search``;
    - parts: ``embed_query``, ``keyword_hits``, ``dense_hits``, ``present``, a floor call;
    - remember, as is / without ``_check_technical_limits`` (two ``count(*)`` per write, O(n)).
    """
    from django.db import transaction

    from accounts.keys import resolve_key
    from memories import remember, search, selectors, services, vectors

    principal = resolve_key(tenant.api_key)
    assert principal is not None
    original_hybrid = search.hybrid_hits
    original_limits = remember._Writer._check_technical_limits

    def run_search(patch: Any) -> None:
        search.hybrid_hits = patch
        try:
            selectors.memory_search(principal=principal, payload={"query": texts.query()})
        finally:
            search.hybrid_hits = original_hybrid

    def run_remember(skip_limits: bool) -> None:
        if skip_limits:
            remember._Writer._check_technical_limits = lambda self, state: None  # type: ignore[method-assign]
        try:
            services.memory_remember(principal=principal, payload={"content": texts.record()})
        finally:
            remember._Writer._check_technical_limits = original_limits  # type: ignore[method-assign]

    qs = selectors.memory_queryset(principal=principal, workspace="default")
    assert qs is not None
    project_id = principal.project.pk
    hits = original_hybrid(qs, texts.query(), 10, project_id)

    def parts_present() -> None:
        selectors.present(principal, [h.memory for h in hits], [h.score for h in hits])

    ops: dict[str, Callable[[], object]] = {
        "floor: list_workspaces": lambda: selectors.workspace_list(principal=principal),
        "search, as is": lambda: run_search(original_hybrid),
        "part: embed_query": lambda: vectors.embed_query(texts.query()),
        "part: keyword_hits (50)": lambda: search.keyword_hits(qs, texts.query(), 50, project_id),
        "part: keyword_hits (100)": lambda: search.keyword_hits(qs, texts.query(), 100, project_id),
        "part: keyword_hits (200)": lambda: search.keyword_hits(qs, texts.query(), 200, project_id),
        "part: dense_hits (50)": lambda: common.dense_hits(qs, texts.query(), 50),
        "part: dense_hits (100)": lambda: common.dense_hits(qs, texts.query(), 100),
        "part: dense_hits (200)": lambda: common.dense_hits(qs, texts.query(), 200),
        "part: present (10 results)": parts_present,
        "remember, as is": lambda: run_remember(False),
        "remember, without technical-limit counts": lambda: run_remember(True),
    }
    samples: dict[str, list[float]] = {name: [] for name in ops}
    for i in range(calls + 3):
        for name, op in ops.items():
            start = time.perf_counter()
            with transaction.atomic():
                op()
            if i >= 3:
                samples[name].append((time.perf_counter() - start) * 1000)
    out = {name: common.summary_ms(values) for name, values in samples.items()}
    log(f"in-process breakdown: {out}")
    return out


def _execution_ms(plan: str) -> float | None:
    match = re.search(r"Execution Time: ([\d.]+) ms", plan)
    return float(match.group(1)) if match else None


# --- one run -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    label: str
    blas_threads: int | None


VARIANTS = (Variant("as shipped", None),)  # serve already caps BLAS at one thread


def run(data_dir: Path, sizes: Sequence[int], calls: int, ingest_calls: int, backend: str = "use") -> dict[str, Any]:
    """Grow one project through ``sizes`` and measure at each; returns everything for the report."""
    common.reset_memories()
    common.clear_broker(data_dir)
    tenant = common.bench_tenant(f"latency-{int(time.time())}")
    texts = Texts()
    growth = bulk_load(tenant, "side", SIDE_RECORDS, texts, backend)
    points: list[dict[str, Any]] = []
    for size in sizes:
        missing = size - project_size(tenant)
        if missing > 0:
            with common.stopwatch() as load_time:
                growth += bulk_load(tenant, "default", missing, texts, backend)
            log(f"bulk loader: {missing} records in {load_time():.0f}s")
            common.vacuum_analyze()
        point: dict[str, Any] = {"size": project_size(tenant), "variants": {}}
        for variant in VARIANTS:
            if variant.blas_threads is not None and size not in (sizes[0], sizes[-1]):
                continue  # the BLAS setting changes the embedding cost, not how it grows
            with common.Server(data_dir, backend, f"latency-{size}", variant.blas_threads) as server:
                samples = asyncio.run(_measure(server.url, tenant.api_key, texts, calls))
                rate = asyncio.run(_ingest(server.url, tenant.api_key, texts, ingest_calls))
            stats = {name: common.summary_ms(values) for name, values in samples.items()}
            point["variants"][variant.label] = {"latency_ms": stats, "ingest_records_per_s": round(rate, 1)}
            log(
                f"size {point['size']} [{variant.label}]: "
                + ", ".join(f"{k} {v['p50']}/{v['p95']}" for k, v in stats.items())
            )
        explain_dir = common.OUT_DIR / "explain"
        explain_dir.mkdir(parents=True, exist_ok=True)
        point["explain"] = [
            explain_search(tenant, texts.query(), ws, explain_dir / f"search-{size}-{ws}.txt")
            for ws in ("default", "side")
        ]
        log(f"size {point['size']}: EXPLAIN {point['explain']}")
        if size == sizes[-1]:
            point["ef_search"] = {ws: ef_sweep(tenant, texts, ws) for ws in ("default", "side")}
        point["inprocess"] = inprocess_breakdown(tenant, texts)
        points.append(point)
    return {"backend": backend, "calls_per_operation": calls, "points": points, "growth": growth}


def plot(result: dict[str, Any], path: Path) -> None:
    """p50 / p95 of search and remember (REST, MCP) against project size, log x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result["points"]
    sizes = [p["size"] for p in points]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=False)
    for ax, op, target in ((axes[0], "search", 25.0), (axes[1], "remember", 30.0)):
        for variant in sorted({v for p in points for v in p["variants"]}):
            for surface, color in (("REST", "tab:blue"), ("MCP", "tab:orange")):
                name = f"{surface} {op}"
                for stat, style in (("p50", "-"), ("p95", "--")):
                    have = [p for p in points if variant in p["variants"]]
                    xs = [p["size"] for p in have]
                    values = [p["variants"][variant]["latency_ms"][name][stat] for p in have]
                    ax.plot(xs, values, style, color=color, marker="o", label=f"{name} {stat} ({variant})")
        # What any call costs on the machine at that moment (no key, one SELECT 1).
        floor = [p["variants"]["as shipped"]["latency_ms"]["REST healthz (no auth)"]["p50"] for p in points]
        ax.plot(sizes, floor, ":", color="gray", marker=".", label="REST /healthz p50 (machine floor)")
        ax.axhline(target, color="red", linewidth=0.8, label=f"target p95 {target:g} ms at 100k")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories in the project")
        ax.set_ylabel("ms per call")
        ax.set_title(f"{op} latency (2 shared cores)")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
