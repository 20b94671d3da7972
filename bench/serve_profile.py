"""Where a served call's time goes: py-spy on the uvicorn process, one call kind at a time.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/serve_profile.py [--size 10000] [--calls 150]

Needs ``py-spy`` (``.venv/bin/pip install py-spy``; a profiling tool, not a requirement of MMW).
Uses ``bench/goals.py``'s project of ``--size`` records (loaded by it when missing), served by
``manage.py serve --no-worker`` as ``bench/goals.py`` serves it. For each call kind — REST
``search``, ``remember``, ``get``, ``/healthz``, then MCP ``tools/call`` from 8 concurrent
clients (the official SDK client, and the same JSON-RPC POSTs sent with plain ``httpx``) — py-spy
samples every Python thread of the uvicorn process (``--idle``, 250 Hz, non-blocking) while this
process makes the calls; REST calls are sequential on one kept-alive connection.

Each sample that is request work (idle waits in the event loop's ``select``, in a pool thread's
queue or a lock are dropped) is given to the innermost *phase* on its stack (a path/function
rule in ``PHASES``: the key check, the billing gate, a ranker, presenting, JSON, DRF, Django,
uvicorn, the MCP SDK, thread hops…) and a *kind*: SQL (the driver and the wait for PostgreSQL:
a ``psycopg`` frame on the stack), ORM (``django/db/models``: compiling queries, building model
objects) or Python. The tables give ms per call of each (samples / sampling rate / calls), so the
rows sum to the server's busy time per call, not its latency: threads that overlap (the query
embedding runs beside the keyword ranker) both count, and time outside Python (the kernel, the
network) is not seen. The generator's own CPU (``time.process_time`` of this process) is
printed beside the MCP figures: it shares the two cores with the server.

Results: ``bench/out/serve-profile-<size>.json`` and the tables on stdout. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import json
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, goals, latency
from bench.common import log, markdown_table

RATE_HZ = 250
PROJECT_DIRS = ("accounts/", "billing/", "memories/", "mmw/", "orgs/", "oauth/", "ledger/", "datarights/")

# (phase, path fragment, function names or None for any): the innermost matching frame names the
# phase of a sample. Order matters only among rules that match the same frame.
PHASES: tuple[tuple[str, str, frozenset[str] | None], ...] = (
    ("query embedding", "memories/vectors.py", None),
    ("query embedding", "memories/embeddings/", None),
    ("query embedding", "tensorflow", None),
    (
        "keyword ranker",
        "memories/search.py",
        frozenset(
            {
                "keyword_hits",
                "keyword_ranking",
                "term_stats",
                "term_stats_among",
                "matching_terms",
                "keyword_terms",
                "_term_sum",
            }
        ),
    ),
    (
        "dense ranker",
        "memories/search.py",
        frozenset({"nearest", "_nearest_here", "_dense_aside", "run", "cosine_scale"}),
    ),
    ("search: fusion, filters", "memories/search.py", None),
    ("presenting", "memories/presenters.py", None),
    ("presenting", "memories/selectors.py", None),
    ("Memory Guard", "memories/guard/", None),
    ("key resolution", "accounts/keys.py", None),
    ("key resolution", "accounts/key_cache.py", None),
    ("key resolution", "accounts/authentication.py", None),
    ("key resolution", "interfaces/mcp_server/auth.py", None),
    ("rate counters", "billing/counters.py", None),
    ("billing gate, admission", "billing/", None),
    ("billing gate, admission", "memories/admission.py", None),
    ("billing gate, admission", "accounts/limits.py", None),
    ("write: remember service", "memories/remember.py", None),
    ("write: remember service", "memories/services.py", None),
    ("write: remember service", "memories/record_rules.py", None),
    ("write: remember service", "mmw/bulk.py", None),
    ("MCP server and tools (MMW)", "interfaces/mcp_server/", None),
    ("MCP server and tools (MMW)", "memories/mcp/", None),
    ("REST views (MMW)", "memories/api/", None),
    ("JSON", "/json/", None),
    ("JSON", "rest_framework/renderers.py", None),
    ("JSON", "rest_framework/parsers.py", None),
    ("DRF", "rest_framework/", None),
    ("MCP SDK: validation (pydantic)", "pydantic", None),
    ("MCP SDK: transport, dispatch", "/mcp/", None),
    ("MCP SDK: transport, dispatch", "mcp_types/", None),
    ("thread hops (asgiref, executor)", "asgiref/", None),
    ("thread hops (asgiref, executor)", "concurrent/futures/", None),
    ("Django handler, middleware", "django/", None),
    ("Django handler, middleware", "mmw/", None),
    ("HTTP server (uvicorn, h11), Starlette", "uvicorn/", None),
    ("HTTP server (uvicorn, h11), Starlette", "h11/", None),
    ("HTTP server (uvicorn, h11), Starlette", "httptools", None),
    ("HTTP server (uvicorn, h11), Starlette", "starlette/", None),
    ("event loop, anyio tasks", "asyncio/", None),
    ("event loop, anyio tasks", "anyio/", None),
)
IDLE_LEAVES = ("selectors.py", "threading.py", "queue.py")


def _frames(stack: str) -> list[tuple[str, str]]:
    """``func (path:line)`` frames of a py-spy raw line, root first, as (func, path)."""
    out: list[tuple[str, str]] = []
    for frame in stack.split(";"):
        func, _, rest = frame.partition(" (")
        out.append((func, rest.rsplit(":", 1)[0]))
    return out


def _phase(frames: list[tuple[str, str]]) -> str:
    paths = [p for _, p in frames]
    if any("psycopg_pool" in p for p in paths):
        return "connection borrow (pool health check)"
    if any(f.rsplit(".", 1)[-1] in ("commit", "_commit") and "django/db/" in p for f, p in frames):
        return "transaction commit"
    for func, path in reversed(frames):
        if "django/db/" in path or "psycopg" in path or path.endswith("django/utils/asyncio.py"):
            continue
        for name, fragment, funcs in PHASES:
            if fragment in path and (funcs is None or func in funcs):
                return name
    return "other"


def _kind(frames: list[tuple[str, str]]) -> str:
    paths = [p for _, p in frames]
    if any("psycopg" in p or "django/db/backends/" in p for p in paths):
        return "SQL"
    if any("django/db/models/" in p for p in paths):
        return "ORM"
    return "Python"


def classify(raw: str) -> tuple[dict[str, dict[str, int]], int, int]:
    """Samples per phase and kind, busy samples, and the number of sampling ticks."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    busy = 0
    per_thread: dict[str, int] = defaultdict(int)
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        thread, _, rest = stack.partition(";")
        per_thread[thread] += count
        frames = _frames(rest)
        if not frames or frames[-1][1].endswith(IDLE_LEAVES):
            continue
        if not any(p for _, p in frames if any(d in p for d in PROJECT_DIRS) or "site-packages" in p):
            continue
        table[_phase(frames)][_kind(frames)] += count
        busy += count
    # With --idle every thread is sampled at every tick: the busiest count is the number of ticks.
    return table, busy, max(per_thread.values(), default=0)


class Sampler:
    """``py-spy record`` attached to ``pid`` for the life of a ``with``."""

    def __init__(self, pid: int, out: Path, *, gil: bool = False) -> None:
        self.pid, self.out, self.gil = pid, out, gil
        self.seconds = 0.0

    def __enter__(self) -> Sampler:
        spy = Path(sys.executable).parent / "py-spy"
        cmd = [str(spy), "record", "--pid", str(self.pid), "--idle", "--threads", "--nonblocking",
               "-r", str(RATE_HZ), "-f", "raw", "-o", str(self.out)]  # fmt: skip
        if self.gil:  # only the thread holding the GIL: what the process's one core is spent on
            cmd.remove("--idle")
            cmd.append("--gil")
        self.started = time.perf_counter()  # ticks are counted from here (the sampling clock)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)  # attached
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=60)
        if not self.out.exists():
            raise RuntimeError(f"py-spy wrote nothing: {err.decode()[-500:]}")


def rest_kinds(ids: list[str]) -> dict[str, tuple[str, str, Callable[[], Any]]]:
    texts = latency.Texts(seed=23)
    rng = random.Random(3)
    return {
        "REST search": ("POST", "/api/v1/memories/search", lambda: {"query": texts.query()}),
        "REST remember": ("POST", "/api/v1/memories", lambda: {"content": texts.record()}),
        "REST get": ("GET", "", lambda: f"/api/v1/memories/{rng.choice(ids)}"),
        "healthz": ("GET", "", lambda: "/healthz"),
    }


def run_rest(url: str, key: str, method: str, path: str, body: Callable[[], Any], calls: int) -> list[float]:
    samples: list[float] = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60.0) as http:
        for _ in range(calls):
            target, payload = (path, body()) if method == "POST" else (body(), None)
            start = time.perf_counter()
            response = http.request(method, target, json=payload)
            samples.append((time.perf_counter() - start) * 1000)
            if response.status_code >= 400:
                raise RuntimeError(f"{target}: {response.status_code} {response.text[:200]}")
    return samples


def tool_mix(index: int, ids: list[str]) -> Callable[[int], tuple[str, dict[str, Any]]]:
    texts = latency.Texts(seed=100 + index)
    rng = random.Random(index)
    mix: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("search", lambda: {"query": texts.query()}),
        ("get_memory", lambda: {"memory_id": rng.choice(ids)}),
        ("list_workspaces", lambda: {}),
        ("remember", lambda: {"content": texts.record()}),
    ]

    def pick(i: int) -> tuple[str, dict[str, Any]]:
        tool, args = mix[i % len(mix)]
        return tool, args()

    return pick


async def raw_mcp(url: str, key: str, ids: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` loops POSTing ``tools/call`` JSON-RPC to the stateless endpoint with plain httpx
    (no SDK client, no ``initialize``: a stateless server needs none)."""
    counts = {"ok": 0, "errors": 0}
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    deadline = time.perf_counter() + seconds

    async def one(index: int) -> None:
        pick = tool_mix(index, ids)
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60.0) as http:
            i = index
            while time.perf_counter() < deadline:
                tool, args = pick(i)
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}}
                i += 1
                response = await http.post("/mcp", json=body)
                ok = response.status_code == 200 and not response.json().get("result", {}).get("isError", True)
                counts["ok" if ok else "errors"] += 1

    await asyncio.gather(*(one(i) for i in range(clients)))
    return counts


def measure_mcp(kind: str, url: str, key: str, ids: list[str], clients: int, seconds: float) -> dict[str, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if kind == "sdk":
        result = asyncio.run(goals.measure_mcp(url, key, ids, clients, seconds))
        calls, errors = result["calls"], result["errors"]
    else:
        counts = asyncio.run(raw_mcp(url, key, ids, clients, seconds))
        calls, errors = counts["ok"], counts["errors"]
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "calls": calls,
        "errors": errors,
        "seconds": round(wall, 1),
        "calls_per_s": round(calls / wall, 1),
        "generator_cpu_ms_per_call": round(cpu * 1000 / max(calls, 1), 2),
        "generator_cpu_share_of_wall": round(cpu / wall, 2),
    }


def profile_rows(table: dict[str, dict[str, int]], rate: float, calls: int) -> list[list[Any]]:
    def ms(n: int) -> float:
        return round(n / rate / calls * 1000, 2)

    rows: list[list[Any]] = []
    sums = [0.0, 0.0, 0.0, 0.0]
    for phase, kinds in sorted(table.items(), key=lambda kv: -sum(kv[1].values())):
        values = [ms(sum(kinds.values())), ms(kinds.get("SQL", 0)), ms(kinds.get("ORM", 0)), ms(kinds.get("Python", 0))]
        if values[0] < 0.05:
            continue
        rows.append([phase, *values])
        sums = [a + b for a, b in zip(sums, values, strict=True)]
    rows.append(["**busy total**", *(round(s, 2) for s in sums)])
    return rows


def run(data_dir: Path, size: int, calls: int, mcp_seconds: float, clients: int) -> dict[str, Any]:
    tenant = common.bench_tenant(f"goals-{size}")
    if latency.project_size(tenant) < size:
        goals.load_project(tenant, size - latency.project_size(tenant), data_dir)
    ids = goals.some_ids(tenant)
    result: dict[str, Any] = {"size": latency.project_size(tenant), "machine": common.machine_notes(), "kinds": {}}
    with common.Server(data_dir, "use", f"serve-profile-{size}") as server:
        pid = server.uvicorn_pid()
        for name, (method, path, body) in rest_kinds(ids).items():
            run_rest(server.url, tenant.api_key, method, path, body, 10)  # warm
            load = os.getloadavg()[0]
            out = common.OUT_DIR / f"pyspy-{name.replace(' ', '-')}.txt"
            with Sampler(pid, out) as sampler, common.CpuMeter(pid, data_dir) as cpu:
                samples = run_rest(server.url, tenant.api_key, method, path, body, calls)
            table, busy, main = classify(out.read_text())
            rate = main / sampler.seconds if main else RATE_HZ
            result["kinds"][name] = {
                "latency_ms": common.summary_ms(samples),
                "loadavg": [round(load, 2), round(os.getloadavg()[0], 2)],
                "rate_hz": round(rate, 1),
                "calls": calls,
                "raw": out.name,
                "cpu_ms_per_call": cpu.per_call_ms(calls),
                "table": {k: dict(v) for k, v in table.items()},
            }
            log(f"{name}: {result['kinds'][name]['latency_ms']} (rate {rate:.0f} Hz)")
        for kind in ("sdk", "raw"):
            name = f"MCP tools/call, {clients} clients ({'SDK client' if kind == 'sdk' else 'plain httpx'})"
            load = os.getloadavg()[0]
            out = common.OUT_DIR / f"pyspy-mcp-{kind}.txt"
            with Sampler(pid, out, gil=True) as sampler, common.CpuMeter(pid, data_dir) as cpu:
                mcp = measure_mcp(kind, server.url, tenant.api_key, ids, clients, mcp_seconds)
            table, busy, main = classify(out.read_text())
            rate = RATE_HZ  # --gil: no sample at a tick where no thread holds the GIL
            result["kinds"][name] = {
                **mcp,
                "raw": out.name,
                "cpu_ms_per_call": cpu.per_call_ms(mcp["calls"]),
                "gil_busy_share": round(busy / rate / sampler.seconds, 2),
                "loadavg": [round(load, 2), round(os.getloadavg()[0], 2)],
                "rate_hz": round(rate, 1),
                "table": {k: dict(v) for k, v in table.items()},
            }
            log(f"{name}: {mcp}")
    return result


def render(result: dict[str, Any], command: str) -> str:
    parts = [f"`{command}` — {result['size']:,} records, git {result['machine']['git']}, {result['machine']['date']}"]
    for name, data in result["kinds"].items():
        calls = data["calls"]
        if "latency_ms" in data:
            lat = data["latency_ms"]
            head = f"**{name}** — {calls} sequential calls, p50 {lat['p50']} / p95 {lat['p95']} ms"
        else:
            head = (
                f"**{name}** — {data['calls']} calls in {data['seconds']} s = {data['calls_per_s']} calls/s, "
                f"{data['errors']} errors; the generator's own CPU {data['generator_cpu_ms_per_call']} ms per call "
                f"({data['generator_cpu_share_of_wall']:.0%} of a core)"
            )
        cpu = data["cpu_ms_per_call"]
        head += (
            f"; load average {data['loadavg'][0]}–{data['loadavg'][1]}. CPU ms per call: server {cpu['server']}, "
            f"PostgreSQL {cpu['postgres']}, generator {cpu['generator']}. "
        )
        if "gil_busy_share" in data:
            head += (
                f"py-spy --gil {data['rate_hz']} Hz (the GIL was held {data['gil_busy_share']:.0%} of the time). "
                "ms per call with the GIL held:"
            )
        else:
            head += f"py-spy --idle {data['rate_hz']} Hz. Server busy (wall) ms per call:"
        rows = profile_rows(data["table"], data["rate_hz"], calls)
        parts.append(head + "\n\n" + markdown_table(["phase", "ms/call", "SQL", "ORM", "Python"], rows))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--mcp-seconds", type=float, default=10.0)
    parser.add_argument("--mcp-clients", type=int, default=8)
    parser.add_argument("--render", type=Path, help="only print the tables of an earlier result file (and its samples)")
    args = parser.parse_args()
    command = "MMW_DATA_DIR=$PWD/var/bench .venv/bin/python " + " ".join(["bench/serve_profile.py", *sys.argv[1:]])
    if args.render:  # the samples are classified again (PHASES may have changed since)
        result = json.loads(args.render.read_text())
        for data in result["kinds"].values():
            raw = common.OUT_DIR / data.get("raw", "")
            if raw.is_file():
                data["table"] = {k: dict(v) for k, v in classify(raw.read_text())[0].items()}
        print(render(result, command))
        return
    data_dir = args.data_dir.resolve()
    common.setup_django(data_dir)
    common.clear_broker(data_dir)
    result = run(data_dir, args.size, args.calls, args.mcp_seconds, args.mcp_clients)
    result["command"] = command
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / f"serve-profile-{args.size}.json").write_text(json.dumps(result, indent=1))
    print(render(result, command))


if __name__ == "__main__":
    main()
