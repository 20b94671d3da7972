"""Issue #19's latency goals, each measured beside a baseline taken in the same run.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/goals.py [--size 100000] [--calls 100]
    make bench-goals

One project of ``--size`` records (kept in ``var/bench`` between runs: only the missing records
are loaded) is served by a real ``manage.py serve --no-worker`` (uvicorn, one process). Then:

- sequential REST calls, interleaved so that noise hits every operation alike: ``GET /healthz``
  (no key, one ``SELECT 1``: the baseline), ``search``, ``remember``, ``get``, ``history``,
  ``list_workspaces``; p50 / p95 of each and its p95 as a ratio of ``/healthz``'s p95;
- ``--mcp-clients`` concurrent MCP clients (the official SDK), each looping over a mix of
  ``search``, ``remember``, ``get_memory`` and ``list_workspaces`` for ``--mcp-seconds``:
  calls per second and errors, and the CPU a call cost the server, PostgreSQL and the clients
  (``common.CpuMeter``) with the calls per second that cost allows on this machine's cores;
- the Memory Guard's CPU time on ``bench/guard``'s 100,000 ordinary characters (in this process).

Every goal is printed as met or missed with the load average at the time; results land in
``bench/out/goals-<size>.json``. The 1M-record search goal is not measured here.

The records: every record joins two sentences of the benchmark corpora (``latency.Texts``) as the
latency bench's loader does, but its vector is the normalised sum of the two sentences' USE vectors
(each of the ~3,000 sentences is embedded once) instead of an embedding of the joined text, so a
100k project loads in minutes instead of the better part of an hour. The vectors spread like real
ones (the HNSW graph and the plans are those of a real project); retrieval quality is not what this
bench measures (``bench/run.py`` does).

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, latency
from bench.common import log, markdown_table

CHUNK = 5_000
WARMUP = 10
GUARD_RUNS = 30

# (goal name, operation, p95 bound in ms) — issue #19's goals through REST at 100k records.
LATENCY_GOALS = (
    ("search p95", "search", 25.0),
    ("remember p95", "remember", 30.0),
    ("get p95", "get", 15.0),
    ("history p95", "history", 15.0),
    ("list_workspaces p95", "list_workspaces", 15.0),
)
MCP_GOAL_CALLS_PER_S = 300.0
GUARD_GOAL_MS = 5.0


# --- the project --------------------------------------------------------------------------------


def _sentence_vectors(texts: latency.Texts, data_dir: Path) -> np.ndarray:
    """USE vectors of every sentence of the pool, cached in the data directory."""
    from memories.embeddings import get_backend
    from memories.vectors import MAX_EMBEDDED_CHARS

    cache = data_dir / f"goals-sentences-{len(texts.pool)}.npy"
    if cache.exists():
        cached: np.ndarray = np.load(cache)
        return cached
    backend = get_backend("use")
    log(f"embedding {len(texts.pool)} sentences once (cached in {cache})")
    vectors = np.asarray(backend.embed_documents([s[:MAX_EMBEDDED_CHARS] for s in texts.pool]), dtype=np.float32)
    np.save(cache, vectors)
    return vectors


def load_project(tenant: common.Tenant, count: int, data_dir: Path) -> float:
    """Add ``count`` records to the ``default`` workspace of ``tenant``'s project (fields as
    ``remember`` writes them, archived); returns the seconds taken."""
    from memories.embeddings import get_backend

    started = time.perf_counter()
    texts = latency.Texts(seed=int(time.time()))
    pool = _sentence_vectors(texts, data_dir)
    model_id = get_backend("use").model_id
    target = common.load_target(tenant, "default")
    rng = random.Random(count)
    done = 0
    while done < count:
        n = min(CHUNK, count - done)
        pairs = [rng.sample(range(len(texts.pool)), 2) for _ in range(n)]
        summed = pool[[a for a, _ in pairs]] + pool[[b for _, b in pairs]]
        summed /= np.linalg.norm(summed, axis=1, keepdims=True)
        common.insert_archived(
            target,
            [
                (f"{texts.pool[a]} {texts.pool[b]}", vector.tolist())
                for (a, b), vector in zip(pairs, summed, strict=True)
            ],
            model_id=model_id,
            source="goals",
            first=done,
            batch_size=1000,
        )
        done += n
        log(f"goals loader: +{done}/{count} ({time.perf_counter() - started:.0f}s)")
    common.vacuum_analyze()
    return time.perf_counter() - started


def some_ids(tenant: common.Tenant, n: int = 50) -> list[str]:
    from memories.models import Memory

    ids = Memory.objects.filter(project_id=tenant.project_id, forgotten_at__isnull=True).values_list("id", flat=True)
    return [str(i) for i in ids.order_by("?")[:n]]


def ab_parser(description: str) -> argparse.ArgumentParser:
    """The arguments every before/after bench on the goals project takes: ``--data-dir``,
    ``--before`` (the checkout to compare with) and ``--size`` (which ``goals-<size>`` project)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=common.DEFAULT_DATA_DIR)
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the code to compare with")
    parser.add_argument("--size", type=int, default=100_000)
    return parser


def loaded_project(data_dir: Path, size: int) -> tuple[common.Tenant, list[str]]:
    """Django set up on ``data_dir``, then the ``goals-<size>`` project (a fresh key) and some of
    its record ids; exits when the project is not loaded (``bench/goals.py`` loads it)."""
    common.setup_django(data_dir)
    tenant = common.bench_tenant(f"goals-{size}")
    if latency.project_size(tenant) < size:
        raise SystemExit(f"load the project first: bench/goals.py --size {size}")
    return tenant, some_ids(tenant)


# --- the measured calls ---------------------------------------------------------------------------


def measure_rest(url: str, key: str, ids: list[str], calls: int) -> dict[str, list[float]]:
    """Sequential interleaved REST calls on one kept-alive connection; ms per operation."""
    texts = latency.Texts(seed=11)
    rng = random.Random(5)
    headers = {"Authorization": f"Bearer {key}"}
    samples: dict[str, list[float]] = {}
    with httpx.Client(base_url=url, headers=headers, timeout=60.0) as http:

        def call(method: str, path: str, body: dict[str, Any] | None = None) -> None:
            response = http.request(method, path, json=body)
            if response.status_code >= 400:
                raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:200]}")

        ops: list[tuple[str, Callable[[], None]]] = [
            ("healthz", lambda: call("GET", "/healthz")),
            ("search", lambda: call("POST", "/api/v1/memories/search", {"query": texts.query()})),
            ("remember", lambda: call("POST", "/api/v1/memories", {"content": texts.record()})),
            ("get", lambda: call("GET", f"/api/v1/memories/{rng.choice(ids)}")),
            ("history", lambda: call("GET", f"/api/v1/memories/{rng.choice(ids)}/history")),
            ("list_workspaces", lambda: call("GET", "/api/v1/workspaces")),
        ]
        for i in range(WARMUP + calls):
            for name, op in ops:
                start = time.perf_counter()
                op()
                if i >= WARMUP:
                    samples.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    return samples


async def measure_mcp(url: str, key: str, ids: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` concurrent MCP sessions, each calling a mix of tools until the deadline."""
    counts = {"ok": 0, "errors": 0}
    errors: list[str] = []
    ready = asyncio.Event()
    started_sessions = [0]
    window: dict[str, float] = {}

    async def one(index: int) -> None:
        texts = latency.Texts(seed=100 + index)
        rng = random.Random(index)

        async def work(client: Any) -> None:
            mix: list[tuple[str, Callable[[], dict[str, Any]]]] = [
                ("search", lambda: {"query": texts.query()}),
                ("get_memory", lambda: {"memory_id": rng.choice(ids)}),
                ("list_workspaces", lambda: {}),
                ("remember", lambda: {"content": texts.record()}),
            ]
            await client.call_tool("list_workspaces", {})  # connected and warm
            started_sessions[0] += 1
            if started_sessions[0] == clients:
                window["start"] = time.perf_counter()
                window["end"] = window["start"] + seconds
                ready.set()
            await ready.wait()
            i = index
            while time.perf_counter() < window["end"]:
                tool, args = mix[i % len(mix)]
                i += 1
                try:
                    common.mcp_payload(await client.call_tool(tool, args()))
                    counts["ok"] += 1
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    counts["errors"] += 1
                    if len(errors) < 5:
                        errors.append(f"{tool}: {exc!r}"[:200])

        await common.mcp_session(url, key, work)

    await asyncio.gather(*(one(i) for i in range(clients)))
    elapsed = time.perf_counter() - window["start"]
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "calls": counts["ok"],
        "errors": counts["errors"],
        "calls_per_s": round(counts["ok"] / elapsed, 1),
        "first_errors": errors,
    }


def cpu_ceiling(per_call_ms: dict[str, float]) -> dict[str, Any]:
    """What the MCP load cost per call in CPU (server, PostgreSQL, the clients: ``CpuMeter``), and
    the most calls per second this machine's cores could serve at that cost, all busy."""
    total = sum(per_call_ms.values())
    cores = os.cpu_count() or 1
    return {
        "cpu_ms_per_call": per_call_ms,
        "cores": cores,
        "cpu_ceiling_calls_per_s": round(cores * 1000 / total, 1) if total else None,
    }


def guard_cpu_ms() -> float:
    from bench.guard import run as guard_run

    content = guard_run.ordinary_content(guard_run.load("ordinary.jsonl"))
    _wall, _p95, cpu = guard_run.timing(content)
    return round(cpu, 2)


# --- one run --------------------------------------------------------------------------------------


def run(data_dir: Path, size: int, calls: int, mcp_clients: int, mcp_seconds: float) -> dict[str, Any]:
    tenant = common.bench_tenant(f"goals-{size}")
    missing = size - latency.project_size(tenant)
    load_seconds = None
    if missing > 0:
        log(f"loading {missing} records into goals-{size}")
        load_seconds = round(load_project(tenant, missing, data_dir))
    records = latency.project_size(tenant)
    ids = some_ids(tenant)
    result: dict[str, Any] = {
        "size": records,
        "load_seconds": load_seconds,
        "machine": common.machine_notes(),
        "database": common.database_versions(),
    }
    with common.Server(data_dir, "use", f"goals-{size}") as server:
        load_before = os.getloadavg()[0]
        samples = measure_rest(server.url, tenant.api_key, ids, calls)
        result["loadavg_rest"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        result["rest_ms"] = {name: common.summary_ms(values) for name, values in samples.items()}
        log(f"REST: {result['rest_ms']}")
        load_before = os.getloadavg()[0]
        with common.CpuMeter(server.uvicorn_pid(), data_dir) as cpu:
            result["mcp"] = asyncio.run(measure_mcp(server.url, tenant.api_key, ids, mcp_clients, mcp_seconds))
        result["mcp"].update(cpu_ceiling(cpu.per_call_ms(result["mcp"]["calls"])))
        result["loadavg_mcp"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        log(f"MCP: {result['mcp']}")
    result["guard_cpu_ms_per_100k"] = guard_cpu_ms()
    result["loadavg_end"] = round(os.getloadavg()[0], 2)
    return result


def render(result: dict[str, Any], command: str) -> str:
    rest = result["rest_ms"]
    base = rest["healthz"]
    rows: list[list[Any]] = [
        ["`/healthz` (baseline)", f"{base['p50']} / {base['p95']}", "1.00x", "—", "—"],
    ]
    for goal, op, bound in LATENCY_GOALS:
        s = rest[op]
        met = "met" if s["p95"] <= bound else "**missed**"
        rows.append([goal, f"{s['p50']} / {s['p95']}", f"{s['p95'] / base['p95']:.2f}x", f"≤ {bound:g} ms", met])
    mcp = result["mcp"]
    mcp_met = mcp["calls_per_s"] >= MCP_GOAL_CALLS_PER_S and mcp["errors"] == 0
    used = mcp["cpu_ms_per_call"]
    cost = (
        f"; CPU per call: server {used['server']} + PostgreSQL {used['postgres']} + clients {used['generator']} ms"
        f" = at most {mcp['cpu_ceiling_calls_per_s']} calls/s on {mcp['cores']} cores"
    )
    rows.append(
        [
            f"MCP mixed calls, {mcp['clients']} clients",
            f"{mcp['calls_per_s']} calls/s, {mcp['errors']} errors{cost}",
            "—",
            f"≥ {MCP_GOAL_CALLS_PER_S:g}/s, 0 errors",
            "met" if mcp_met else "**missed**",
        ]
    )
    guard = result["guard_cpu_ms_per_100k"]
    rows.append(
        [
            "Memory Guard CPU per 100k chars",
            f"{guard} ms",
            "—",
            f"≤ {GUARD_GOAL_MS:g} ms",
            "met" if guard <= GUARD_GOAL_MS else "**missed**",
        ]
    )
    machine = result["machine"]
    head = (
        f"`{command}` — {result['size']:,} records, git {machine['git']}, {machine['date']}; "
        f"load average (1 min) {result['loadavg_rest'][0]}–{result['loadavg_rest'][1]} during the REST calls, "
        f"{result['loadavg_mcp'][0]}–{result['loadavg_mcp'][1]} during the MCP load; "
        f"{rest['search']['n']} calls per operation. ms p50 / p95:"
    )
    return head + "\n\n" + markdown_table(["goal", "measured", "p95 / healthz p95", "goal", "status"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=common.DEFAULT_DATA_DIR)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--mcp-clients", type=int, default=8)
    parser.add_argument("--mcp-seconds", type=float, default=20.0)
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    command = "MMW_DATA_DIR=$PWD/var/bench .venv/bin/python " + " ".join(["bench/goals.py", *sys.argv[1:]])
    common.setup_django(data_dir)
    common.clear_broker(data_dir)
    result = run(data_dir, args.size, args.calls, args.mcp_clients, args.mcp_seconds)
    result["command"] = command
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / f"goals-{args.size}.json").write_text(json.dumps(result, indent=1))
    print(render(result, command))


if __name__ == "__main__":
    main()
