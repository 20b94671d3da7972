"""Shared pieces of the benchmarks: the bench database, a served MMW, REST and MCP clients, metrics.

Everything runs against a private data directory (default ``var/bench``: its own embedded
PostgreSQL, embedded broker and secret), never the development database. The benchmark process
itself uses Django only to create the bench tenant and, where a benchmark says so, to load
records in bulk; every measured call goes through a real ``manage.py serve --no-worker``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from memories.models import Memory
    from memories.search import Candidate

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = ROOT / "var" / "bench"
OUT_DIR = ROOT / "bench" / "out"
LOCOMO_PATH = Path("/work/shared/data/locomo_dev.json")
MULTILINGUAL_PATH = ROOT / "bench" / "data" / "multilingual.json"
BENCH_EMAIL = "bench@mmw.invalid"
BENCH_PLAN = "bench-unlimited"
STARTUP_TIMEOUT = 90.0

_DJANGO_READY = False


def data_dir(default: Path | str = DEFAULT_DATA_DIR) -> Path:
    """Where a bench keeps its database: ``MMW_DATA_DIR`` when set (the command in each bench's
    docstring sets it), else ``default``."""
    return Path(os.environ.get("MMW_DATA_DIR") or default)


def add_data_dir(parser: argparse.ArgumentParser, default: Path | str = DEFAULT_DATA_DIR) -> None:
    """``--data-dir``, defaulting to :func:`data_dir`. Before, most benches ignored
    ``MMW_DATA_DIR`` and silently used their own default, so the two could disagree."""
    parser.add_argument("--data-dir", type=Path, default=data_dir(default), help=f"default: MMW_DATA_DIR or {default}")


def log(message: str) -> None:
    """Progress on stderr (figures go to stdout and the result files)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the bench database and tenant ---------------------------------------------------------


BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def bench_environment(data_dir: Path, backend: str = "use", blas_threads: int | None = None) -> dict[str, str]:
    """The environment of a served MMW (and of Django in this process).

    ``blas_threads`` None leaves numpy's BLAS thread pool as shipped (one thread per core);
    a number sets ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` for the server."""
    data_dir.mkdir(parents=True, exist_ok=True)
    secret = data_dir / "secret_key"
    if not secret.exists():
        secret.write_text(secrets.token_urlsafe(50) + "\n")
        secret.chmod(0o600)
    env = dict(os.environ)
    env.update(
        MMW_DATA_DIR=str(data_dir),
        MMW_EMBEDDING_BACKEND=backend,
        MMW_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="mmw.settings.base",
        PYTHONPATH=str(ROOT),
    )
    for name in BLAS_VARIABLES:
        env.pop(name, None)
    if blas_threads is not None:
        env.update({name: str(blas_threads) for name in BLAS_VARIABLES})
    env.pop("MMW_SECRET_KEY", None)
    env.pop("DATABASE_URL", None)  # the bench always uses its own embedded PostgreSQL
    return env


def setup_django(data_dir: Path) -> None:
    """Configure Django in this process against the bench database and apply migrations."""
    global _DJANGO_READY
    if _DJANGO_READY:
        return
    env = bench_environment(data_dir)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("MMW_", "DJANGO_"))})
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    _DJANGO_READY = True


def dense_hits(candidates: QuerySet[Memory], query: str, limit: int) -> list[Candidate]:
    """The vector ranker alone, in process: ``query`` embedded as ``search`` embeds it, then the
    nearest ``limit`` records of ``candidates`` (``search.nearest``, the production ranker)."""
    from memories import search, vectors

    embedded = vectors.embed_query(query)
    if embedded is None:
        return []
    vector, backend = embedded
    return search.nearest(candidates, vector, backend.model_id, limit)


@dataclass(frozen=True)
class Tenant:
    api_key: str
    project_id: str
    tenant_id: str


def bench_tenant(project_name: str) -> Tenant:
    """A project of the bench account with a fresh key. The account is on an unlimited plan
    created here (bench only): the Free plan's 60 calls per minute and 1,000 records would stop
    a benchmark, and a plan limit is not what is being measured."""
    from accounts import services
    from billing.models import Plan, Subscription

    user, _ = services.user_get_or_create(email=BENCH_EMAIL)
    account = services.personal_account(user=user)
    plan, _ = Plan.objects.get_or_create(
        code=BENCH_PLAN,
        defaults={"name": "Bench (unlimited)", "is_active": False, "organization_features": True},
    )
    Subscription.objects.update_or_create(account=account, defaults={"plan": plan, "state": "active"})
    project, _ = services.project_get_or_create(account=account, name=project_name, actor=user)
    issued = services.api_key_create(user=user, project=project, name="bench", device_label="bench")
    return Tenant(api_key=issued.raw, project_id=str(project.id), tenant_id=account.tenant_id)


def load_target(tenant: Tenant, workspace: str) -> tuple[Any, Any, Any]:
    """What a bulk loader writes into: ``tenant``'s project, its ``workspace`` (created when
    missing) and its newest key (the records' author and key)."""
    from accounts.models import ApiKey, Project, Workspace

    project = Project.objects.select_related("account").get(id=tenant.project_id)
    key = ApiKey.objects.select_related("user").filter(project=project).order_by("-id").first()
    assert key is not None
    ws, _ = Workspace.objects.get_or_create(project=project, name=workspace)
    return project, ws, key


def insert_archived(
    target: tuple[Any, Any, Any],
    rows: Sequence[tuple[str, Sequence[float]]],
    *,
    model_id: str,
    source: str,
    first: int,
    batch_size: int,
    created: Sequence[datetime] | None = None,
) -> None:
    """Bench-only: insert ``rows`` (content, vector) into ``target`` (``load_target``) with the
    fields ``remember`` writes, already archived; every 50 records share a source id
    (``source/<n>``, counting from the ``first`` record). ``created`` gives each row's
    ``created_at`` (a project that grew over months: the write time otherwise, as
    ``auto_now_add`` sets it)."""
    from django.utils import timezone

    from memories.models import Memory

    project, ws, key = target
    now = timezone.now()
    records = [
        Memory(
            account=project.account,
            project=project,
            workspace=ws,
            content=content,
            source="agent",
            source_id=f"{source}/{(first + i) // 50}",
            author=key.user,
            api_key=key,
            device_label=key.device_label,
            embedding=vector,
            embedding_model=model_id,
            archived_at=now,
            occurred_at=now if created is None else created[i],
        )
        for i, (content, vector) in enumerate(rows)
    ]
    if created is None:
        Memory.objects.bulk_create(records, batch_size=batch_size)
        return
    field = Memory._meta.get_field("created_at")
    for record, at in zip(records, created, strict=True):
        record.created_at = at
    field.auto_now_add = False  # bench-only: keep the given times
    try:
        Memory.objects.bulk_create(records, batch_size=batch_size)
    finally:
        field.auto_now_add = True


def reset_memories() -> None:
    """Empty the memory tables of the bench database (every run starts from zero records, so the
    global HNSW index holds only what the run loads). This also empties the projects other
    benches keep (``bench/goals.py``'s 100k project: reload it with ``make bench-goals``, ~10 min),
    so it says how many records it drops."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        row = cursor.fetchone()
        if row and row[0]:
            log(f"emptying the bench database's memory tables: {row[0]:,} records (goals-* projects included)")
        cursor.execute(
            "TRUNCATE memories_memoryrelation, memories_idempotencyrecord, memories_memory, "
            "billing_ratecounter RESTART IDENTITY CASCADE"
        )
    vacuum_analyze()


def vacuum_analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")


def clear_broker(data_dir: Path) -> None:
    """Drop the archivist messages queued by earlier runs (no worker consumes them here): the
    embedded broker's append-only files, so the broker a ``Server`` starts begins empty."""
    from mmw import embedded_redis

    shutil.rmtree(embedded_redis.redis_dir(data_dir) / "appendonlydir", ignore_errors=True)


def start_broker(data_dir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """The embedded broker (``mmw.embedded_redis``), which ``serve --no-worker`` does not start:
    ``remember`` publishes its archivist message as under ``make run``, and ``/healthz`` (which
    the ``Server`` waits for) checks the broker."""
    from mmw import embedded_redis

    with log_path.open("wb") as logfile:
        proc = subprocess.Popen(embedded_redis.command(data_dir), stdout=logfile, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while not embedded_redis.ping(data_dir, timeout=0.5):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise RuntimeError(f"the embedded broker did not start; see {log_path}")
        time.sleep(0.05)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 30 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# --- a served MMW --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``manage.py serve --no-worker`` and the embedded broker (which ``--no-worker`` does not start)
    on a free 127.0.0.1 port, for the life of a ``with``; ``worker=True`` serves with the Celery
    worker, beat and the embedded broker (``make run``'s processes), for benchmarks that wait for
    background work."""

    def __init__(
        self,
        data_dir: Path,
        backend: str,
        log_name: str,
        blas_threads: int | None = None,
        *,
        worker: bool = False,
        root: Path = ROOT,
        broker: bool = True,
    ) -> None:
        self.port = free_port()
        self.root = root  # the checkout whose code serves (bench/goals_ab.py serves two or more)
        self.with_broker = broker  # one embedded broker per data directory
        self.worker = worker
        self.url = f"http://127.0.0.1:{self.port}"
        self.backend = backend
        self.blas_threads = blas_threads
        self._env = {**bench_environment(data_dir, backend, blas_threads), "PYTHONPATH": str(root)}
        self._data_dir = data_dir
        self._log_path = OUT_DIR / f"server-{log_name}.log"
        self._broker_log_path = OUT_DIR / f"broker-{log_name}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._broker: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        if not self.worker and self.with_broker:
            self._broker = start_broker(self._data_dir, self._broker_log_path)
        cmd = [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        if not self.worker:
            cmd.append("--no-worker")
        with self._log_path.open("wb") as logfile:
            self._proc = subprocess.Popen(cmd, cwd=self.root, env=self._env, stdout=logfile, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"MMW exited at start-up; see {self._log_path}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"MMW did not answer /healthz within {STARTUP_TIMEOUT:.0f}s")
            time.sleep(0.2)
        blas = "as shipped" if self.blas_threads is None else str(self.blas_threads)
        worker = ", with worker" if self.worker else ""
        log(f"MMW ({self.backend}, BLAS threads {blas}{worker}) serving on {self.url}, pid {self._proc.pid}")
        return self

    def uvicorn_pid(self) -> int:
        """The pid of ``serve``'s uvicorn child (the process that answers calls)."""
        assert self._proc is not None, "not serving"
        serve_pid = self._proc.pid
        for _ in range(50):
            for child in Path(f"/proc/{serve_pid}/task/{serve_pid}/children").read_text().split():
                if b"uvicorn" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return int(child)
            time.sleep(0.1)
        raise RuntimeError("no uvicorn child found")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            stop(self._proc)  # ``serve`` stops its uvicorn child on SIGTERM
        if self._broker is not None:
            stop(self._broker)


# --- CPU accounting -------------------------------------------------------------------------------


def cpu_by_pid(pids: Sequence[int]) -> dict[int, float]:
    """User + system CPU seconds of each of ``pids`` so far (``/proc/<pid>/stat``; gone ones left out)."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / tick
    return found


def postgres_pids(data_dir: Path) -> list[int]:
    """Every process of the data directory's PostgreSQL cluster (the postmaster and its children,
    backends included) -- not another cluster's, nor the machine's own PostgreSQL."""
    master = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [master, *(int(c) for c in children)]


class CpuMeter:
    """CPU seconds spent over a ``with`` by the server process, by the data directory's PostgreSQL
    cluster and by this process (the load generator): on two shared cores, what a call costs in
    all. A PostgreSQL process that ends inside the window loses what it spent there (pooled
    backends live on), one that starts inside counts whole."""

    def __init__(self, server_pid: int, data_dir: Path) -> None:
        self.server_pid, self.data_dir = server_pid, data_dir
        self.used: dict[str, float] = {}

    def _now(self) -> tuple[dict[int, float], dict[int, float], float]:
        return cpu_by_pid([self.server_pid]), cpu_by_pid(postgres_pids(self.data_dir)), time.process_time()

    def __enter__(self) -> CpuMeter:
        self._start = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        (server0, pg0, own0), (server1, pg1, own1) = self._start, self._now()

        def spent(before: dict[int, float], after: dict[int, float]) -> float:
            return sum(max(0.0, cpu - before.get(pid, 0.0)) for pid, cpu in after.items())

        self.used = {"server": spent(server0, server1), "postgres": spent(pg0, pg1), "generator": own1 - own0}

    def per_call_ms(self, calls: int) -> dict[str, float]:
        return {k: round(v * 1000 / max(calls, 1), 2) for k, v in self.used.items()}


class ServerError(RuntimeError):
    """A 5xx answer."""


class Rest:
    """REST calls with one pooled connection (one instance per thread)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self._http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=120.0)

    def close(self) -> None:
        self._http.close()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._http.post(path, json=body)
        if response.status_code >= 500:
            raise ServerError(f"POST {path} -> {response.status_code}: {response.text[:300]}")
        if response.status_code >= 400:
            raise RuntimeError(f"POST {path} -> {response.status_code}: {response.text[:300]}")
        result: dict[str, Any] = response.json()
        return result

    def remember(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.post("/api/v1/memories", body)

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.post("/api/v1/memories/search", body)


async def mcp_session(
    base_url: str, api_key: str, work: Callable[[Any], Any]
) -> Any:  # pragma: no cover - thin wrapper over the SDK
    """Run ``await work(client)`` with the official MCP client connected to ``/mcp``."""
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {api_key}"})
    async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client:
        return await work(client)


def mcp_payload(result: Any) -> dict[str, Any]:
    """The JSON object of a successful tool result (raises on an ``isError`` result)."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        raise RuntimeError(text[:300])
    if result.structured_content is not None:
        return dict(result.structured_content)
    payload: dict[str, Any] = json.loads(text)
    return payload


# --- metrics -------------------------------------------------------------------------------


def percentile(samples_ms: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples_ms, dtype=float), q)) if samples_ms else math.nan


def summary_ms(samples_ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples_ms),
        "p50": round(percentile(samples_ms, 50), 2),
        "p95": round(percentile(samples_ms, 95), 2),
        "mean": round(float(np.mean(samples_ms)), 2) if samples_ms else math.nan,
    }


def rank_of(ranked: Sequence[str], relevant: set[str]) -> int | None:
    """1-based rank of the first relevant item, None when none is in ``ranked``."""
    for position, key in enumerate(ranked, start=1):
        if key in relevant:
            return position
    return None


def recall_scores(ranks: Sequence[int | None]) -> dict[str, float]:
    """R@1/R@5/R@10 and MRR (over the returned top 10) of a list of ranks."""
    n = len(ranks) or 1

    def at(k: int) -> float:
        return round(sum(1 for r in ranks if r is not None and r <= k) / n, 3)

    mrr = sum(1.0 / r for r in ranks if r is not None and r <= 10) / n
    return {"n": len(ranks), "R@1": at(1), "R@5": at(5), "R@10": at(10), "MRR": round(mrr, 3)}


_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    """Plain Okapi BM25 (k1=1.2, b=0.75, Lucene's non-negative idf) over lower-cased ``\\w+``
    tokens, no stemming, no stop words: the reference keyword ranker of the benchmarks."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.doc_tokens = [Counter(tokens(d)) for d in docs]
        self.lengths = np.array([sum(c.values()) for c in self.doc_tokens], dtype=float)
        self.avg = float(self.lengths.mean()) if len(docs) else 1.0
        df: Counter[str] = Counter()
        for counts in self.doc_tokens:
            df.update(counts.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, counts in enumerate(self.doc_tokens):
            for t, tf in counts.items():
                self.postings.setdefault(t, []).append((i, tf))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.doc_tokens))
        for term in set(tokens(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, tf in self.postings[term]:
                norm = tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                out[i] += idf * tf * (self.k1 + 1) / norm
        return out


def top_k(scores: np.ndarray, k: int, only_positive: bool = False) -> list[int]:
    """Indices of the ``k`` best scores, best first (stable on ties)."""
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if not only_positive or scores[i] > 0]


# --- run notes -----------------------------------------------------------------------------


def machine_notes() -> dict[str, Any]:
    """What the figures depend on: the host, its load, the code and the database versions."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "git": git.stdout.strip() + (" (uncommitted changes in the tree)" if dirty.stdout.strip() else ""),
    }


def database_versions() -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return {"postgresql": str(server), "pgvector": str(row[0]) if row else "?"}


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if value < 10 else f"{value:.1f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


@contextlib.contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    """``with stopwatch() as elapsed: ...; elapsed()`` in seconds."""
    start = time.perf_counter()
    end: list[float] = []
    yield lambda: (end[0] if end else time.perf_counter()) - start
    end.append(time.perf_counter())
