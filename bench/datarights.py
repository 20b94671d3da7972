"""Export and import speed and memory (issue #21): records per second and peak resident memory of
the process doing the work, at two project sizes, so "memory stays flat" is a measured claim.

1. Server A (``serve --no-worker``, its own fresh data directory ``<data-dir>/a``): load
   ``--records`` records into one project through ``POST /api/v1/memories/batch`` (500 per call,
   4 clients; ``bench.ingest``'s sender), 1 % of them forgotten (stubs), every 20th in a fact_key
   with versions. After the first tenth and at the end: ``GET /api/v1/export`` streamed by the web
   process (its RSS sampled every 20 ms), and ``manage.py export`` (its RSS likewise).
2. Fresh data directory ``<data-dir>/b``: ``manage.py import`` of the full export (RSS sampled),
   then a second import of the same file (idempotent: every line unchanged).

``python -m bench.datarights --records 100000``. A benchmark, not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench import common
from bench.common import log
from bench.ingest import Config, _send
from bench.latency import Texts

ROOT = common.ROOT


class PeakRss:
    """The highest resident set size of ``pid`` (and its children) while the ``with`` runs."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self.start = self._now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _now(self) -> int:
        try:
            procs = [self.process, *self.process.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs if p.is_running())
        except psutil.Error:
            return 0

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._now())
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)}: {done.stderr[-2000:]}")
    return done.stdout


def timed_command(env: dict[str, str], *args: str) -> tuple[float, int, str]:
    """Run ``manage.py args``; (seconds, peak RSS bytes, stderr)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    with PeakRss(proc.pid) as rss:
        out, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)}: {err.decode()[-2000:]}")
    return time.perf_counter() - started, rss.peak, (out + err).decode()


def count_lines(path: Path) -> int:
    with gzip.open(path, "rt") as lines:
        return sum(1 for _ in lines)


def web_pid(server: common.Server) -> int:
    assert server._proc is not None
    children = psutil.Process(server._proc.pid).children()
    web = [c for c in children if "uvicorn" in " ".join(c.cmdline()) or "web" in " ".join(c.cmdline())]
    return int((web or children)[0].pid)


def rest_export(server: common.Server, key: str, path: Path) -> dict[str, Any]:
    pid = web_pid(server)
    before = psutil.Process(pid).memory_info().rss
    started = time.perf_counter()
    with (
        PeakRss(pid) as rss,
        path.open("wb") as out,
        httpx.stream(
            "GET", f"{server.url}/api/v1/export", headers={"Authorization": f"Bearer {key}"}, timeout=600
        ) as answer,
    ):
        answer.raise_for_status()
        for chunk in answer.iter_bytes():
            out.write(chunk)
    seconds = time.perf_counter() - started
    lines = count_lines(path)
    return {
        "lines": lines,
        "seconds": round(seconds, 1),
        "lines_per_s": round(lines / seconds),
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "web_rss_before_mb": round(before / 2**20),
        "web_rss_peak_mb": round(rss.peak / 2**20),
    }


def load(server: common.Server, tenant: common.Tenant, texts: Texts, count: int, offset: int) -> None:
    bodies = []
    for i in range(offset, offset + count):
        body: dict[str, Any] = {"content": texts.record(), "tags": [f"t{i % 7}"]}
        if i % 20 == 0:
            body["fact_key"] = f"fact-{i % 1000}"
        bodies.append(body)
    ids, _ = asyncio.run(_send(server.url, tenant.api_key, Config("load", 500, 4, count), bodies))
    forget = ids[::100]
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {tenant.api_key}"}) as http:
        for memory_id in forget:
            http.delete(f"/api/v1/memories/{memory_id}").raise_for_status()


def run(data_dir: Path, records: int) -> dict[str, Any]:
    shutil.rmtree(data_dir, ignore_errors=True)
    a_dir, b_dir = data_dir / "a", data_dir / "b"
    env_a, env_b = common.bench_environment(a_dir), common.bench_environment(b_dir)
    common.setup_django(a_dir)
    from mmw import embedded_redis

    embedded_redis.redis_dir(a_dir).mkdir(parents=True, exist_ok=True)
    tenant = common.bench_tenant("export")
    texts = Texts(seed=21)
    results: dict[str, Any] = {"records": records}
    first = max(records // 10, 1)
    with common.Server(a_dir, "use", "datarights") as server:
        for label, count, offset in (("small", first, 0), ("full", records - first, first)):
            started = time.perf_counter()
            load(server, tenant, texts, count, offset)
            log(f"loaded {offset + count} records ({time.perf_counter() - started:.0f} s)")
            results[f"rest_export_{label}"] = rest_export(server, tenant.api_key, data_dir / f"rest-{label}.jsonl.gz")
            log(f"REST export ({label}): {results[f'rest_export_{label}']}")
    for label in ("full",):
        out = data_dir / f"cmd-{label}.jsonl.gz"
        seconds, peak, _ = timed_command(env_a, "export", "--account", tenant.tenant_id, "-o", str(out))
        lines = count_lines(out)
        results["command_export"] = {
            "lines": lines,
            "seconds": round(seconds, 1),
            "lines_per_s": round(lines / seconds),
            "rss_peak_mb": round(peak / 2**20),
        }
        log(f"manage.py export: {results['command_export']}")
    manage(env_a, "pg", "stop")
    manage(env_b, "migrate", "--noinput")
    manage(env_b, "quickstart", "--email", common.BENCH_EMAIL, "--project", "landing", "--json")
    source = data_dir / "rest-full.jsonl.gz"
    lines = count_lines(source)
    for label in ("import", "reimport"):
        seconds, peak, output = timed_command(env_b, "import", str(source), "--account", common.BENCH_EMAIL)
        results[label] = {
            "lines": lines,
            "seconds": round(seconds, 1),
            "lines_per_s": round(lines / seconds),
            "rss_peak_mb": round(peak / 2**20),
            "summary": output.strip().splitlines()[-1],
        }
        log(f"manage.py {label}: {results[label]}")
    manage(env_b, "pg", "stop")
    results["machine"] = common.machine_notes()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    common.add_data_dir(parser, ROOT / "var" / "bench-datarights")
    args = parser.parse_args()
    os.environ.setdefault("MMW_LOG_LEVEL", "WARNING")
    results = run(args.data_dir.resolve(), args.records)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
