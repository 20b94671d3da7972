"""The production layout of docs/deploy.md, run on this machine: two web processes, two Celery
workers and one beat on one PostgreSQL and one broker, behind HAProxy.

    .venv/bin/python bench/scaleout.py [--data-dir var/scaleout] [--load-seconds 12] [--balancer haproxy|python]
    make bench-scaleout   # installs Debian's haproxy where missing (scripts/ensure_haproxy.sh)

Processes (all on 127.0.0.1, private data directory, emptied of memories at the start):

- the embedded PostgreSQL (pgvector) and the embedded broker (Redis protocol, Unix socket), which
  is also Django's cache, so the rate counters are Redis counters shared by every process
  (``MMW_CACHE_URL``), as with ``REDIS_URL`` in production;
- two ``uvicorn mmw.asgi:application`` web processes, two ``celery worker`` (concurrency 1 each:
  two cores) and one ``celery beat`` — the Procfile's commands;
- the load balancer: Debian's ``haproxy`` in the foreground with ``deploy/haproxy.cfg`` itself
  (only its listening port and the two servers' ports rewritten): ``leastconn``, health checks
  on ``/healthz`` every second, ``retries 2`` with ``option redispatch``. ``--balancer python``
  runs :class:`Proxy` instead, a small round-robin TCP proxy in its own process that redispatches
  a refused connection the same way (for a machine without haproxy).

Checks, each printed as passed/failed with its count:

1. idempotency: the same ``remember`` with the same ``X-Idempotency-Key`` sent at once to both web
   processes returns the same record to both, and one record is stored;
2. ``expected_version`` races: two writes naming the same version of one fact, one to each web
   process at once: exactly one is stored, the other answered 409;
3. rate limit across processes: a key limited to 30 calls a minute, 40 concurrent calls spread
   over both web processes: exactly 30 answered, 10 refused with 429;
4. one web process SIGKILLed under load: REST ``remember`` through the proxy from several
   clients (each write with its own idempotency key, retried on a dropped connection or a
   502/503 as a client would); every acknowledged write must be stored, and every answer must be
   2xx or a retried 502/503/dropped connection;
5. the workers: every record the load wrote is archived (the archivist task each ``remember``
   queues on the broker, run by the two workers).
6. read replicas (docs/scale.md): search throughput of one web process with 0 and then 1
   replica — a streaming hot standby of the embedded PostgreSQL made with the wheel's
   ``pg_basebackup`` (tests/standby.py), ``DATABASE_REPLICA_URLS`` pointing at it — over the
   same records and queries, in the same run; each phase counts the transactions the primary and
   the standby served (``pg_stat_database``), which proves where the searches ran. ``--replicas-only``
   runs this phase alone (one web process, the broker, the standby).

A benchmark, not a test (it starts seven processes and runs about a minute and a half on two
shared cores, then about two minutes for the read-replica phase; ``make test`` stays fast): it
prints figures and exits 1 if a check fails.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import contextlib
import functools
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.common import log
from tests.haproxy import haproxy_binary, haproxy_config

RATE_LIMIT = 30
RATE_CALLS = 40
RACES = 10
LOAD_CLIENTS = 6
RETRIES = 8
SKIP_SECONDS = 3.0
IDEMPOTENCY = "X-Idempotency-Key"


# --- the load balancer --------------------------------------------------------------------------


class Proxy:
    """Round-robin TCP proxy: each accepted connection goes to the next backend; a backend that
    refuses the connection is skipped for ``SKIP_SECONDS`` and the connection goes to the next
    (a request that never reached a backend is redispatched, as HAProxy's ``option redispatch``)."""

    def __init__(self, port: int, backends: list[int]) -> None:
        self.port = port
        self.backends = backends
        self._next = 0
        self._down_until = dict.fromkeys(backends, 0.0)
        self.connections: Counter[int] = Counter()

    async def _connect(self) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter] | None:
        for _ in range(len(self.backends)):
            port = self.backends[self._next % len(self.backends)]
            self._next += 1
            if self._down_until[port] > time.monotonic():
                continue
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                self._down_until[port] = time.monotonic() + SKIP_SECONDS
                continue
            return port, reader, writer
        return None

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        upstream = await self._connect()
        if upstream is None:
            client_w.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            with contextlib.suppress(OSError):
                await client_w.drain()
            client_w.close()
            return
        port, up_r, up_w = upstream
        self.connections[port] += 1

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError):
                dst.close()

        await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))

    async def serve(self) -> None:
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        print("ready", flush=True)
        async with server:
            await server.serve_forever()


def proxy_main(port: int, backends: list[int]) -> None:
    proxy = Proxy(port, backends)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(proxy.serve())


# --- the processes --------------------------------------------------------------------------------


@dataclass
class Deployment:
    data_dir: Path
    env: dict[str, str]
    webs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    others: list[subprocess.Popen[bytes]] = field(default_factory=list)
    proxy_port: int = 0
    balancer: str = "haproxy"

    def spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        with (common.OUT_DIR / f"scaleout-{name}.log").open("wb") as logfile:
            return subprocess.Popen(cmd, cwd=common.ROOT, env=self.env, stdout=logfile, stderr=subprocess.STDOUT)

    def start(self) -> None:
        py = sys.executable
        for i in (1, 2):
            port = common.free_port()
            self.webs[port] = self.spawn(
                f"web{i}",
                [py, "-m", "uvicorn", "mmw.asgi:application", "--host", "127.0.0.1", "--port", str(port),
                 "--no-server-header", "--lifespan", "on", "--no-proxy-headers"],
            )  # fmt: skip
        celery = [py, "-m", "celery", "-A", "mmw"]
        worker_env = {**self.env, "MMW_DB_POOL_MAX_SIZE": "0"}
        for i in (1, 2):
            with (common.OUT_DIR / f"scaleout-worker{i}.log").open("wb") as logfile:
                self.others.append(
                    subprocess.Popen(
                        [*celery, "worker", "--loglevel=INFO", "--concurrency=1", "-Q", "celery,imports",
                         "-n", f"w{i}@%h"],
                        cwd=common.ROOT, env=worker_env, stdout=logfile, stderr=subprocess.STDOUT,
                    )
                )  # fmt: skip
        with (common.OUT_DIR / "scaleout-beat.log").open("wb") as logfile:
            self.others.append(
                subprocess.Popen(
                    [*celery, "beat", "--loglevel=INFO", "-s", str(self.data_dir / "celerybeat-schedule")],
                    cwd=common.ROOT, env=worker_env, stdout=logfile, stderr=subprocess.STDOUT,
                )
            )  # fmt: skip
        self.proxy_port = common.free_port()
        if self.balancer == "haproxy":
            config = self.data_dir / "haproxy.cfg"
            config.write_text(haproxy_config(self.proxy_port, list(self.webs)))
            binary = haproxy_binary()
            if binary is None:
                raise SystemExit("haproxy is not installed: bash scripts/ensure_haproxy.sh")
            self.others.append(self.spawn("haproxy", [binary, "-db", "-f", str(config)]))
        else:
            proxy = subprocess.Popen(
                [py, __file__, "--proxy", str(self.proxy_port), *map(str, self.webs)],
                cwd=common.ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )  # fmt: skip
            self.others.append(proxy)
            assert proxy.stdout is not None
            proxy.stdout.readline()
        deadline = time.monotonic() + common.STARTUP_TIMEOUT
        for port, proc in self.webs.items():
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"web on {port} exited; see bench/out/scaleout-web*.log")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2.0).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("a web process did not answer /healthz in time")
                time.sleep(0.2)
        while not self._balanced():  # both servers up in the balancer's own health checks
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.balancer} did not reach both webs; see bench/out/scaleout-*.log")
            time.sleep(0.3)
        log(f"deployment up: webs {list(self.webs)}, {self.balancer} on {self.proxy_port}, 2 workers, beat")

    def _balanced(self) -> bool:
        """Whether answers through the balancer come from both web processes (each answer names
        no process, so: two /healthz in a row both 200 after the health checks' ``rise 2``)."""
        with contextlib.suppress(httpx.HTTPError):
            answers = [httpx.get(f"http://127.0.0.1:{self.proxy_port}/healthz", timeout=2.0) for _ in range(4)]
            return all(a.status_code == 200 for a in answers)
        return False

    def stop(self) -> None:
        for proc in [*self.webs.values(), *self.others]:
            common.stop(proc)


def environment(data_dir: Path) -> dict[str, str]:
    from mmw import embedded_redis

    env = common.bench_environment(data_dir)
    env.update({name: "1" for name in common.BLAS_VARIABLES})
    env["MMW_CACHE_URL"] = f"unix://{embedded_redis.socket_path(data_dir)}"
    env["MMW_TRUSTED_PROXIES"] = "127.0.0.1"  # the balancer, as deploy/haproxy.cfg's comment says
    return env


# --- the checks -----------------------------------------------------------------------------------


def headers(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **extra}


def at_once(calls: list[Any]) -> list[Any]:
    """Run the callables together (a barrier releases them at the same moment)."""
    barrier = threading.Barrier(len(calls))

    def run(call: Any) -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def post(port: int, key: str, body: dict[str, Any], **extra: str) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/api/v1/memories", json=body, headers=headers(key, **extra), timeout=60.0
    )


def check_idempotency(webs: list[int], key: str) -> dict[str, Any]:
    from memories.models import Memory

    def send(port: int, content: str, idem: str) -> httpx.Response:
        return post(port, key, {"content": content}, **{"X-Idempotency-Key": idem})

    passed = 0
    for i in range(RACES):
        content = f"idempotent write {i} {uuid.uuid4()}"
        idem = f"scaleout-{uuid.uuid4()}"
        answers = at_once([functools.partial(send, p, content, idem) for p in webs])
        ids = {r.json().get("id") for r in answers if r.status_code < 300}
        stored = Memory.objects.filter(content=content).count()
        if all(r.status_code < 300 for r in answers) and len(ids) == 1 and stored == 1:
            passed += 1
        else:
            log(f"idempotency {i}: {[r.status_code for r in answers]} ids {ids} stored {stored}")
    return {"passed": passed, "of": RACES}


def check_versions(webs: list[int], key: str) -> dict[str, Any]:
    from memories.models import Memory

    def send(port: int, n: int, fact: str) -> httpx.Response:
        return post(port, key, {"content": f"v2 ({n}) of {fact}", "fact_key": fact, "expected_version": 1})

    passed = 0
    for i in range(RACES):
        fact = f"scaleout-fact-{uuid.uuid4()}"
        first = post(webs[0], key, {"content": f"v1 of {fact}", "fact_key": fact})
        first.raise_for_status()
        answers = at_once([functools.partial(send, p, n, fact) for n, p in enumerate(webs)])
        codes = sorted(r.status_code for r in answers)
        stored = Memory.objects.filter(fact_key=fact).count()
        if codes[0] < 300 and codes[1] == 409 and stored == 2:
            passed += 1
        else:
            log(f"expected_version {i}: {codes}, {stored} versions stored")
    return {"passed": passed, "of": RACES}


def limited_key() -> str:
    """A key of a project on a plan limited to ``RATE_LIMIT`` calls a minute per key."""
    from accounts import services
    from billing.models import Plan, Subscription

    user, _ = services.user_get_or_create(email="scaleout-limited@mmw.invalid")
    account = services.personal_account(user=user)
    plan, _ = Plan.objects.update_or_create(
        code="scaleout-limited",
        defaults={"name": "Scale-out (30/min)", "is_active": False, "calls_per_minute_per_key": RATE_LIMIT},
    )
    Subscription.objects.update_or_create(account=account, defaults={"plan": plan, "state": "active"})
    project, _ = services.project_get_or_create(account=account, name="limited", actor=user)
    return services.api_key_create(user=user, project=project, name="limited", device_label="scaleout").raw


def check_rate_limit(webs: list[int], key: str) -> dict[str, Any]:
    second = time.time() % 60
    if second > 40:  # all the calls in one fixed minute window
        time.sleep(61 - second)

    def one(i: int) -> int:
        port = webs[i % len(webs)]
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/workspaces", headers=headers(key), timeout=60.0).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = Counter(pool.map(one, range(RATE_CALLS)))
    ok = sum(n for c, n in codes.items() if c < 300)
    return {"answered": ok, "refused_429": codes.get(429, 0), "codes": dict(codes), "limit": RATE_LIMIT}


MCP_CALLS = 40
MCP_VERSION = "2026-07-28"  # the protocol revision /mcp serves statelessly (tests pin the SDK's)


def check_mcp_spread(dep: Deployment, key: str) -> dict[str, Any]:
    """``MCP_CALLS`` stateless MCP ``tools/call`` (remember, then search) through the balancer from
    8 clients: every answer a tool result without error, and both web processes served some (each
    web's access log counts its ``POST /mcp``)."""
    url = f"http://127.0.0.1:{dep.proxy_port}/mcp"
    before = {port: _mcp_lines(i) for i, port in enumerate(dep.webs, start=1)}

    def one(i: int) -> str:
        tool, arguments = ("remember", {"content": f"mcp spread {i}"}) if i % 2 else ("search", {"query": "spread"})
        meta = {
            "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        call = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta},
        }
        answer = httpx.post(
            url,
            json=call,
            headers={
                **headers(key),
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": MCP_VERSION,
                "Mcp-Method": "tools/call",
                "Mcp-Name": tool,
            },
            timeout=60.0,
        )
        if answer.status_code != 200:
            return f"HTTP {answer.status_code}"
        result = answer.json().get("result") or {}
        return "error" if result.get("isError") or "content" not in result else "ok"

    with ThreadPoolExecutor(8) as pool:
        outcomes = Counter(pool.map(one, range(MCP_CALLS)))
    served = {port: _mcp_lines(i) - before[port] for i, port in enumerate(dep.webs, start=1)}
    return {"ok": outcomes.get("ok", 0), "of": MCP_CALLS, "outcomes": dict(outcomes), "served_by_web": served}


def _mcp_lines(web: int) -> int:
    log_file = common.OUT_DIR / f"scaleout-web{web}.log"
    return log_file.read_text(errors="replace").count('"POST /mcp HTTP/1.1" 200') if log_file.exists() else 0


@dataclass
class LoadTally:
    acked: dict[str, str] = field(default_factory=dict)  # id -> content
    answers: Counter[str] = field(default_factory=Counter)
    retried: int = 0
    gave_up: int = 0


def load_with_kill(dep: Deployment, key: str, seconds: float) -> dict[str, Any]:
    """``LOAD_CLIENTS`` clients write through the proxy; one web process is SIGKILLed half-way."""
    tally = LoadTally()
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    url = f"http://127.0.0.1:{dep.proxy_port}"

    def client(n: int) -> None:
        with httpx.Client(base_url=url, headers=headers(key), timeout=30.0) as http:
            i = 0
            while time.monotonic() < stop_at:
                content = f"load {n}-{i} {uuid.uuid4()}"
                idem = str(uuid.uuid4())
                i += 1
                for attempt in range(RETRIES):
                    try:
                        r = http.post(
                            "/api/v1/memories", json={"content": content}, headers={"X-Idempotency-Key": idem}
                        )
                        outcome = str(r.status_code)
                    except httpx.TransportError as exc:
                        outcome, r = f"dropped ({type(exc).__name__})", None
                    with lock:
                        tally.answers[outcome] += 1
                        if r is not None and r.status_code < 300:
                            tally.acked[r.json()["id"]] = content
                        elif attempt == RETRIES - 1:
                            tally.gave_up += 1
                        else:
                            tally.retried += 1
                    if r is not None and r.status_code < 300:
                        break
                    if r is not None and r.status_code not in (502, 503):
                        break  # not a retryable answer: counted as unexpected
                    time.sleep(0.2 * (attempt + 1))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(LOAD_CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(seconds / 2)
    victim_port, victim = next(iter(dep.webs.items()))
    victim.kill()
    killed_at = len(tally.acked)
    log(f"killed the web process on {victim_port} after {killed_at} acknowledged writes")
    for t in threads:
        t.join()
    return {"tally": tally, "killed_after_acked": killed_at, "victim": victim_port}


def check_stored(tally: LoadTally) -> dict[str, Any]:
    from memories.models import Memory

    rows = Memory.objects.filter(id__in=list(tally.acked)).values_list("id", "content")
    found = {str(i): content for i, content in rows}
    lost = [i for i, content in tally.acked.items() if found.get(i) != content]
    unexpected = {k: v for k, v in tally.answers.items() if not (k.startswith(("2", "dropped")) or k in ("502", "503"))}
    return {
        "acked": len(tally.acked),
        "lost": len(lost),
        "answers": dict(tally.answers),
        "retried": tally.retried,
        "gave_up": tally.gave_up,
        "unexpected_answers": unexpected,
    }


def check_archived(ids: list[str], timeout: float) -> dict[str, Any]:
    """The workers consumed the broker: every record of the load was archived (``archived_at``,
    set by the archivist task each ``remember`` queues), within ``timeout`` seconds."""
    from memories.models import Memory

    started = time.monotonic()
    while True:
        done = Memory.objects.filter(id__in=ids, archived_at__isnull=False).count()
        if done == len(ids) or time.monotonic() > started + timeout:
            return {"archived": done, "of": len(ids), "seconds": round(time.monotonic() - started, 1)}
        time.sleep(1.0)


# --- read replicas: search throughput with 0 and 1 replica ---------------------------------------

SEARCH_CLIENTS = 4
SEARCH_RECORDS = 400
SEARCH_WORDS = ("deploy", "billing", "queue", "postgres", "replica", "search", "cache", "worker", "latency", "backup")


def _commits(connect: Any) -> int:
    with connect() as conn:
        row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return int(row[0]) if row is not None else 0


def _primary() -> Any:
    import psycopg
    from django.db import connection

    params = {k: v for k, v in connection.get_connection_params().items() if k != "cursor_factory"}
    return psycopg.connect(**params, autocommit=True)


def _search_phase(env: dict[str, str], key: str, seconds: float, label: str, replica: Any = None) -> dict[str, Any]:
    """One web process with ``env``: ``SEARCH_CLIENTS`` clients search for ``seconds``; the
    transactions each database served meanwhile (read after the process exits, when its
    connections have reported their statistics)."""
    port = common.free_port()
    cmd = [sys.executable, "-m", "uvicorn", "mmw.asgi:application", "--host", "127.0.0.1", "--port", str(port),
           "--no-server-header", "--lifespan", "on", "--no-proxy-headers"]  # fmt: skip
    with (common.OUT_DIR / f"scaleout-search-{label}.log").open("wb") as logfile:
        proc = subprocess.Popen(cmd, cwd=common.ROOT, env=env, stdout=logfile, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + common.STARTUP_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the {label} web process exited; see bench/out/scaleout-search-{label}.log")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {label} web process did not answer /healthz in time")
            time.sleep(0.2)
        with httpx.Client(base_url=url, headers=headers(key), timeout=60.0) as http:
            for word in SEARCH_WORDS:  # warm: the model, the pools, the caches
                http.post("/api/v1/memories/search", json={"query": word, "limit": 10})
        primary_before = _commits(_primary)
        replica_before = _commits(replica) if replica is not None else 0
        statuses: Counter[int] = Counter()
        samples: list[float] = []
        lock = threading.Lock()
        stop_at = time.monotonic() + seconds

        def client(n: int) -> None:
            with httpx.Client(base_url=url, headers=headers(key), timeout=60.0) as http:
                i = n
                while time.monotonic() < stop_at:
                    query = f"{SEARCH_WORDS[i % len(SEARCH_WORDS)]} {SEARCH_WORDS[(i * 3 + 1) % len(SEARCH_WORDS)]}"
                    began = time.perf_counter()
                    r = http.post("/api/v1/memories/search", json={"query": query, "limit": 10})
                    with lock:
                        statuses[r.status_code] += 1
                        samples.append((time.perf_counter() - began) * 1000)
                    i += SEARCH_CLIENTS

        started = time.monotonic()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(SEARCH_CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
    finally:
        common.stop(proc)
    time.sleep(1.0)  # the exited backends' statistics reach pg_stat_database
    ok = statuses.get(200, 0)
    result: dict[str, Any] = {
        "searches": ok,
        "per_second": round(ok / elapsed, 1),
        "latency_ms": common.summary_ms(samples),
        "statuses": dict(statuses),
        "primary_transactions": _commits(_primary) - primary_before,
    }
    if replica is not None:
        result["replica_transactions"] = _commits(replica) - replica_before
    return result


def compare_replicas(data_dir: Path, env: dict[str, str], seconds: float) -> dict[str, Any]:
    """Search throughput of one web process with 0, then 1 replica, over the same records."""
    from mmw import embedded_pg
    from tests.standby import Standby

    tenant = common.bench_tenant(f"scaleout-replicas-{int(time.time())}")
    records = [
        {"content": f"note {i}: the {SEARCH_WORDS[i % 10]} of the {SEARCH_WORDS[(i * 7) % 10]} runbook, step {i}"}
        for i in range(SEARCH_RECORDS)
    ]
    port = common.free_port()
    seeder = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "mmw.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=common.ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + common.STARTUP_TIMEOUT
        while not _healthy(port):
            if time.monotonic() > deadline:
                raise RuntimeError("the seeding web process did not answer /healthz in time")
            time.sleep(0.2)
        for start in range(0, SEARCH_RECORDS, 100):
            r = httpx.post(
                f"http://127.0.0.1:{port}/api/v1/memories/batch",
                json={"records": records[start : start + 100]},
                headers=headers(tenant.api_key),
                timeout=300.0,
            )
            r.raise_for_status()
    finally:
        common.stop(seeder)
    without = _search_phase(env, tenant.api_key, seconds, "0-replicas")
    log(f"search, 0 replicas: {without}")
    standby = Standby(data_dir / "pg", data_dir / "standby")
    made = time.monotonic()
    standby.start()
    try:
        standby.catch_up(embedded_pg.DATABASE_NAME)
        made_in = round(time.monotonic() - made, 1)
        replica_env = {**env, "DATABASE_REPLICA_URLS": standby.url(embedded_pg.DATABASE_NAME)}
        with_one = _search_phase(
            replica_env,
            tenant.api_key,
            seconds,
            "1-replica",
            replica=lambda: standby.connect(embedded_pg.DATABASE_NAME),
        )
        log(f"search, 1 replica: {with_one}")
    finally:
        standby.remove()
    return {"clients": SEARCH_CLIENTS, "seconds": seconds, "records": SEARCH_RECORDS, "standby_made_seconds": made_in,
            "0": without, "1": with_one}  # fmt: skip


def _healthy(port: int) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2.0).status_code == 200
    return False


# --- one run --------------------------------------------------------------------------------------


def run(
    data_dir: Path, load_seconds: float, archive_wait: float, balancer: str = "haproxy", search_seconds: float = 15.0
) -> dict[str, Any]:
    common.setup_django(data_dir)
    common.reset_memories()
    common.clear_broker(data_dir)
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    broker = common.start_broker(data_dir, common.OUT_DIR / "scaleout-broker.log")
    dep = Deployment(data_dir, environment(data_dir), balancer=balancer)
    result: dict[str, Any] = {"machine": common.machine_notes(), "balancer": balancer}
    try:
        dep.start()
        webs = list(dep.webs)
        tenant = common.bench_tenant(f"scaleout-{int(time.time())}")
        result["idempotency"] = check_idempotency(webs, tenant.api_key)
        log(f"idempotency: {result['idempotency']}")
        result["expected_version"] = check_versions(webs, tenant.api_key)
        log(f"expected_version: {result['expected_version']}")
        result["rate_limit"] = check_rate_limit(webs, limited_key())
        log(f"rate limit: {result['rate_limit']}")
        result["mcp"] = check_mcp_spread(dep, tenant.api_key)
        log(f"mcp through the balancer: {result['mcp']}")
        result["loadavg_before_kill"] = round(os.getloadavg()[0], 2)
        load = load_with_kill(dep, tenant.api_key, load_seconds)
        result["kill"] = {**check_stored(load["tally"]), "killed_after_acked": load["killed_after_acked"]}
        result["loadavg_after_kill"] = round(os.getloadavg()[0], 2)
        log(f"kill: {result['kill']}")
        result["archived"] = check_archived(list(load["tally"].acked), archive_wait)
        log(f"archived: {result['archived']}")
    finally:
        dep.stop()
    try:
        result["replicas"] = compare_replicas(data_dir, dep.env, search_seconds)
    finally:
        common.stop(broker)
    return result


def run_replicas_only(data_dir: Path, search_seconds: float) -> dict[str, Any]:
    """Only the read-replica phase (``--replicas-only``): the broker, one web process at a time, the standby."""
    common.setup_django(data_dir)
    common.clear_broker(data_dir)
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    broker = common.start_broker(data_dir, common.OUT_DIR / "scaleout-broker.log")
    try:
        return {
            "machine": common.machine_notes(),
            "replicas": compare_replicas(data_dir, environment(data_dir), search_seconds),
        }
    finally:
        common.stop(broker)


def replica_verdicts(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    rep = result["replicas"]
    zero, one = rep["0"], rep["1"]
    return [
        (
            f"search, 0 replicas ({rep['clients']} clients, {rep['seconds']:g} s)",
            f"{zero['per_second']}/s, p50 {zero['latency_ms']['p50']} ms, p95 {zero['latency_ms']['p95']} ms; "
            f"primary {zero['primary_transactions']} transactions",
            set(zero["statuses"]) == {200},
        ),
        (
            "search, 1 replica (same run, same records)",
            f"{one['per_second']}/s, p50 {one['latency_ms']['p50']} ms, p95 {one['latency_ms']['p95']} ms; "
            f"primary {one['primary_transactions']}, replica {one['replica_transactions']} transactions",
            set(one["statuses"]) == {200} and one["replica_transactions"] > one["primary_transactions"],
        ),
    ]


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    idem, ver, rate, kill, vec, mcp = (
        result["idempotency"],
        result["expected_version"],
        result["rate_limit"],
        result["kill"],
        result["archived"],
        result["mcp"],
    )
    return [
        ("idempotency through both webs", f"{idem['passed']}/{idem['of']}", idem["passed"] == idem["of"]),
        ("expected_version races: one winner", f"{ver['passed']}/{ver['of']}", ver["passed"] == ver["of"]),
        (
            f"rate limit {rate['limit']}/min across processes",
            f"{rate['answered']}/{rate['limit']} answered, {rate['refused_429']} refused (429)",
            rate["answered"] == rate["limit"] and rate["refused_429"] == RATE_CALLS - RATE_LIMIT,
        ),
        (
            "MCP tools/call through the balancer, served by both webs",
            f"{mcp['ok']}/{mcp['of']} ok; per web {list(mcp['served_by_web'].values())}",
            mcp["ok"] == mcp["of"] and all(n > 0 for n in mcp["served_by_web"].values()),
        ),
        (
            "web killed under load: acknowledged writes stored",
            f"{kill['acked']} acked, {kill['lost']} lost; answers {kill['answers']}",
            kill["lost"] == 0 and not kill["unexpected_answers"] and kill["gave_up"] == 0,
        ),
        (
            "workers archived the load's records",
            f"{vec['archived']}/{vec['of']} within {vec['seconds']} s",
            vec["archived"] == vec["of"],
        ),
        *replica_verdicts(result),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_dir(parser, common.ROOT / "var" / "scaleout")
    parser.add_argument("--load-seconds", type=float, default=12.0)
    parser.add_argument("--archive-wait", type=float, default=180.0)
    parser.add_argument("--balancer", choices=("haproxy", "python"), default="haproxy")
    parser.add_argument("--search-seconds", type=float, default=15.0, help="each read-replica phase's length")
    parser.add_argument("--replicas-only", action="store_true", help="run only the read-replica phase")
    parser.add_argument("--proxy", type=int, help=argparse.SUPPRESS)
    parser.add_argument("backends", type=int, nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.proxy:
        proxy_main(args.proxy, args.backends)
        return
    started = time.time()
    if args.replicas_only:
        result = run_replicas_only(args.data_dir.resolve(), args.search_seconds)
        checks = replica_verdicts(result)
        result["passed"] = all(ok for _, _, ok in checks)
        (common.OUT_DIR / "scaleout-replicas.json").write_text(json.dumps(result, indent=1, default=str))
        print(f"bench/scaleout.py --replicas-only: {round(time.time() - started)} s")
        print(
            common.markdown_table(
                ["check", "figure", "result"], [(n, f, "passed" if ok else "**FAILED**") for n, f, ok in checks]
            )
        )
        sys.exit(0 if result["passed"] else 1)
    result = run(args.data_dir.resolve(), args.load_seconds, args.archive_wait, args.balancer, args.search_seconds)
    result["duration_seconds"] = round(time.time() - started)
    checks = verdicts(result)
    result["passed"] = all(ok for _, _, ok in checks)
    (common.OUT_DIR / "scaleout.json").write_text(json.dumps(result, indent=1, default=str))
    print(
        f"bench/scaleout.py: 2 web + 2 workers + beat behind {args.balancer}, "
        f"{result['duration_seconds']} s, load average {result['loadavg_before_kill']}–{result['loadavg_after_kill']}"
    )
    print(
        common.markdown_table(
            ["check", "figure", "result"], [(n, f, "passed" if ok else "**FAILED**") for n, f, ok in checks]
        )
    )
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
