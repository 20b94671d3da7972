"""Speed on real content (issue #37): LongMemEval-S dev loaded through the API as sessions and as
records, the wait until every vector is in, then every question searched on both paths, beside
``/healthz`` and a synthetic-record search at the same record count, measured in the same run.

    MMW_DATA_DIR=$PWD/var/bench-lme-speed .venv/bin/python bench/lme_speed.py [--questions 20] [--passes 3]

One ``manage.py serve`` *with* its Celery worker (the vectors are computed there, as in production)
on a bench database of its own (``--data-dir``); each run loads into new projects, so runs do not
pay for each other's backlog. Through the API, with ``--clients`` concurrent clients:

1. **sessions**: every haystack session of the first ``--questions`` questions (client
   ``lme-<question id>``, its date as every turn's ``occurred_at``): ``PUT`` the session, ``POST``
   its turns (≤ 500 a call) — turns acknowledged per second;
2. **records**: every user turn with the assistant's answer after it as one record (workspace =
   the question id, ``source_id`` = the session, ``position`` its place), ``POST /memories/batch``
   of ``--batch`` records — records acknowledged per second;
3. **synthetic baseline**: as many synthetic records (two corpus sentences each, ~a dozen words:
   what issue #19's goals were measured on) in as many workspaces of another project;
4. **time to searchable**: from the first upload until the database holds no unembedded row of
   the three projects — items embedded per second over the whole load, and the seconds of waiting
   after the last acknowledgement; also when ``list_workspaces`` (``pending_vectors`` and
   ``pending_turns``, the API's own signal) first said nothing was pending;
5. **latency**: ``--passes`` passes over every question, interleaved so noise hits each alike:
   ``GET /healthz`` (the floor), ``POST /memories/search`` in the question's workspace (limit 50,
   the question's date as ``now``), ``POST /sessions/search`` filtered to the question's client
   (default limit and context, as an agent asks), and a synthetic-record search of one synthetic
   workspace at the same limit 50 (the comparison is of content alone); then the same two
   searches over MCP (the official SDK client, one session). ``/healthz`` is also sampled
   while the worker embeds (step 4), the number issue #37 reported as 11 ms;
   ``pending_vectors`` in the search answers is checked to be 0 once everything is embedded;
6. **recall**: R_any@5 / R_all@5 over the questions with evidence (abstention questions, id ending
   ``_abs``, left out) from the first pass's answers, sessions ranked by their best hit, beside
   BM25 over sessions and over records computed here (``bench.lme_retrieval``).

The pending count's own cost: ``--pending-probe`` times the count statement a search adds
(``memories.sql.pending_vectors``) on the record path's largest workspace with nothing pending and
with everything pending (before the worker catches up), in process.

Results: printed as BENCHMARKS.md tables, and ``bench/out/lme_speed.json``. A benchmark, not a
test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import json
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, lme_retrieval
from bench.common import log, markdown_table
from bench.lme_retrieval import Question

TURNS_PER_CALL = 500
VECTOR_TIMEOUT = 3600.0
POLL = 1.0
GOAL_SYNTHETIC_RATIO = 2.0
GOAL_HEALTHZ_RATIO = 6.0
GOAL_ITEMS_PER_S = 300.0


# --- loading through the API --------------------------------------------------------------------


async def _gather(jobs: Sequence[Any], clients: int, url: str, key: str, send: Any) -> float:
    """Run ``send(http, job)`` over ``jobs`` from ``clients`` concurrent clients; the seconds it took."""
    headers = {"Authorization": f"Bearer {key}"}

    async def client(share: Sequence[Any]) -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600.0) as http:
            for job in share:
                await send(http, job)

    started = time.perf_counter()
    await asyncio.gather(*(client(jobs[i::clients]) for i in range(clients)))
    return time.perf_counter() - started


def _ok(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 300:
        raise RuntimeError(
            f"{response.request.method} {response.request.url} -> {response.status_code}: {response.text[:300]}"
        )
    answer: dict[str, Any] = response.json()
    return answer


def upload_sessions(url: str, key: str, qs: Sequence[Question], clients: int) -> dict[str, Any]:
    """Every haystack session as a session of client ``lme-<qid>``; turns acknowledged per second."""
    jobs = [(q, sid, when, turns) for q in qs for sid, when, turns in q.sessions]
    counted = {"turns": 0, "queued": 0}

    async def send(http: httpx.AsyncClient, job: Any) -> None:
        q, sid, when, turns = job
        path = f"/api/v1/sessions/lme-{q.qid}/{sid}"
        _ok(await http.put(path, json={"title": sid, "started_at": when.isoformat()}))
        items = [{"position": i, "role": t["role"], "content": t["content"][:100_000] or ".",
                  "occurred_at": when.isoformat()} for i, t in enumerate(turns)]  # fmt: skip
        for start in range(0, len(items), TURNS_PER_CALL):
            answer = _ok(await http.post(f"{path}/turns", json={"turns": items[start : start + TURNS_PER_CALL]}))
            counted["turns"] += answer["created"]
            counted["queued"] = max(counted["queued"], answer["queued_for_vectors"])

    seconds = asyncio.run(_gather(jobs, clients, url, key, send))
    return {"turns": counted["turns"], "sessions": len(jobs), "seconds": round(seconds, 1),
            "turns_per_s": round(counted["turns"] / seconds, 1)}  # fmt: skip


def upload_records(url: str, key: str, bodies: list[dict[str, Any]], clients: int, batch: int) -> dict[str, Any]:
    """``bodies`` through ``POST /memories/batch``; records acknowledged per second and how many
    the answers said were queued for vectors."""
    jobs = [bodies[i : i + batch] for i in range(0, len(bodies), batch)]
    counted = {"records": 0, "queued": 0}

    async def send(http: httpx.AsyncClient, job: Any) -> None:
        answer = _ok(await http.post("/api/v1/memories/batch", json={"records": job}))
        counted["records"] += sum(1 for r in answer["results"] if "id" in r)
        counted["queued"] += answer["queued_for_vectors"]

    seconds = asyncio.run(_gather(jobs, clients, url, key, send))
    return {**counted, "seconds": round(seconds, 1), "records_per_s": round(counted["records"] / seconds, 1)}


def record_bodies(qs: Sequence[Question]) -> list[dict[str, Any]]:
    return [
        {
            "content": text[:100_000],
            "workspace": q.qid,
            "source_id": sid,
            "position": i,
            "occurred_at": when.isoformat(),
        }
        for q in qs
        for sid, when, turns in q.sessions
        for i, text in enumerate(lme_retrieval.pairs(turns))
    ]


def synthetic_bodies(real: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As many synthetic records as ``real``, in as many workspaces of the same sizes."""
    from bench.latency import Texts

    texts = Texts(seed=37)
    return [{"content": texts.record(), "workspace": f"syn-{body['workspace']}"} for body in real]


# --- waiting for vectors --------------------------------------------------------------------------


def unembedded(project_ids: Sequence[str]) -> int:
    from memories.models import Memory
    from transcripts.models import Turn

    records = Memory.objects.filter(project_id__in=project_ids, forgotten_at__isnull=True, embedding_model__isnull=True)
    turns = Turn.objects.filter(project_id__in=project_ids, is_stub=False, embedding_model__isnull=True)
    return records.count() + turns.count()


def api_says_ready(url: str, key: str) -> bool:
    """``list_workspaces``' own signal: no workspace with pending records and no pending turn."""
    answer = _ok(httpx.get(f"{url}/api/v1/workspaces", headers={"Authorization": f"Bearer {key}"}, timeout=60))
    return answer["pending_turns"] == 0 and all(w["pending_vectors"] == 0 for w in answer["workspaces"])


class HealthSampler:
    """``GET /healthz`` every ``every`` seconds in a thread, for the life of a ``with``."""

    def __init__(self, url: str, every: float = 0.25) -> None:
        self.url, self.every = url, every
        self.samples: list[float] = []
        self._stop = threading.Event()

    def _run(self) -> None:
        with httpx.Client(timeout=30) as http:
            while not self._stop.is_set():
                started = time.perf_counter()
                http.get(f"{self.url}/healthz")
                self.samples.append((time.perf_counter() - started) * 1000)
                self._stop.wait(self.every)

    def __enter__(self) -> HealthSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def wait_for_vectors(url: str, keys: dict[str, str], project_ids: Sequence[str], started: float) -> dict[str, Any]:
    """Seconds from ``started`` until no row of the projects lacks its vector, and until the API
    said so (``list_workspaces`` of each key)."""
    api_ready: float | None = None
    last_log = 0.0
    while True:
        left = unembedded(project_ids)
        now = time.perf_counter()
        if api_ready is None and all(api_says_ready(url, key) for key in keys.values()):
            api_ready = now - started
        if left == 0:
            return {"seconds": round(now - started, 1), "api_said_ready_after": api_ready and round(api_ready, 1)}
        if now - started > VECTOR_TIMEOUT:
            return {"seconds": None, "left": left, "api_said_ready_after": api_ready}
        if now - last_log > 30:
            log(f"vectors: {left} rows still to embed after {now - started:.0f}s")
            last_log = now
        time.sleep(POLL)


# --- the pending count's cost -----------------------------------------------------------------------


def pending_probe(project_id: str, workspace: str, calls: int = 200) -> dict[str, float]:
    """The statement ``pending_vectors`` adds to a search, on one workspace, in process (ms)."""
    from memories import selectors, sql
    from memories.models import Memory

    scope = sql.Scope.of(Memory.objects.filter(project_id=project_id, workspace__name=workspace).live())
    assert scope is not None
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        selectors.pending_vectors(scope)
        samples.append((time.perf_counter() - started) * 1000)
    return {**common.summary_ms(samples), "pending": selectors.pending_vectors(scope)}


# --- latency and recall ---------------------------------------------------------------------------


def ranked(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def latency_passes(url: str, keys: dict[str, str], qs: Sequence[Question], passes: int) -> dict[str, Any]:
    """Interleaved REST passes; the first pass's rankings for recall; any pending count seen."""
    from bench.latency import Texts

    texts = Texts(seed=371)
    samples: dict[str, list[float]] = {"healthz": [], "record search": [], "session search": [], "synthetic search": []}
    rankings: dict[str, dict[str, list[str]]] = {"records": {}, "sessions": {}}
    pending_seen = 0
    clients = {name: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
               for name, key in keys.items()}  # fmt: skip
    try:
        for n in range(passes):
            for q in qs:
                asked_at = q.asked_at.isoformat()
                calls = [
                    ("healthz", "lme", "GET", "/healthz", None),
                    ("record search", "lme", "POST", "/api/v1/memories/search",
                     {"query": q.text, "workspace": q.qid, "limit": 50, "now": asked_at}),
                    ("session search", "lme", "POST", "/api/v1/sessions/search",
                     {"query": q.text, "client": f"lme-{q.qid}", "now": asked_at}),
                    # The same limit as the record search: the comparison is of content alone (at the
                    # default 10 a page fills and never looks in the other workspaces, which a limit-50
                    # search left short by the floor does; bench/lme_search_parts.py).
                    ("synthetic search", "synthetic", "POST", "/api/v1/memories/search",
                     {"query": texts.query(), "workspace": f"syn-{q.qid}", "limit": 50}),
                ]  # fmt: skip
                for label, who, method, path, body in calls:
                    started = time.perf_counter()
                    answer = _ok(clients[who].request(method, path, json=body))
                    samples[label].append((time.perf_counter() - started) * 1000)
                    pending_seen = max(pending_seen, int(answer.get("pending_vectors") or 0))
                    if n == 0 and label == "record search":
                        rankings["records"][q.qid] = ranked([str(r["source_id"]) for r in answer["results"]])
                    if n == 0 and label == "session search":
                        rankings["sessions"][q.qid] = ranked([r["session"]["session_id"] for r in answer["results"]])
    finally:
        for http in clients.values():
            http.close()
    return {"samples": samples, "rankings": rankings, "pending_seen": pending_seen}


def mcp_passes(url: str, key: str, qs: Sequence[Question], passes: int) -> dict[str, list[float]]:
    """The two searches over MCP, one SDK session, ``passes`` passes."""
    samples: dict[str, list[float]] = {"MCP record search": [], "MCP session search": []}

    async def work(client: Any) -> None:
        await client.call_tool("list_workspaces", {})  # connected and warm
        for _ in range(passes):
            for q in qs:
                for label, tool, args in (
                    ("MCP record search", "search", {"query": q.text, "workspace": q.qid, "limit": 50,
                                                     "now": q.asked_at.isoformat()}),
                    ("MCP session search", "search_sessions", {"query": q.text, "client": f"lme-{q.qid}",
                                                               "now": q.asked_at.isoformat()}),
                ):  # fmt: skip
                    started = time.perf_counter()
                    common.mcp_payload(await client.call_tool(tool, args))
                    samples[label].append((time.perf_counter() - started) * 1000)

    asyncio.run(common.mcp_session(url, key, work))
    return samples


def recall(qs: Sequence[Question], rankings: dict[str, dict[str, list[str]]]) -> dict[str, dict[str, float]]:
    asked = [q for q in qs if q.evidence and not q.qid.endswith("_abs")]
    out = {f"MMW {path}": lme_retrieval.score(asked, rankings[path])["all"] for path in ("sessions", "records")}
    for unit in ("sessions", "records"):
        ask = lme_retrieval.bm25(unit)
        out[f"BM25 {unit}"] = lme_retrieval.score(asked, {q.qid: ask(None, q) for q in asked})["all"]
    return out


# --- the run ----------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    data_dir = Path(args.data_dir)
    common.setup_django(data_dir)
    qs = lme_retrieval.questions(args.questions)
    stamp = int(time.time())
    tenants = {"lme": common.bench_tenant(f"lme-speed-{stamp}"), "synthetic": common.bench_tenant(f"lme-syn-{stamp}")}
    keys = {name: t.api_key for name, t in tenants.items()}
    project_ids = [t.project_id for t in tenants.values()]
    real = record_bodies(qs)
    synthetic = synthetic_bodies(real)
    result: dict[str, Any] = {"questions": len(qs), "backend": args.backend, "clients": args.clients,
                              "batch": args.batch, "machine": common.machine_notes()}  # fmt: skip
    with common.Server(data_dir, args.backend, "lme-speed", worker=True) as server:
        url = server.url
        idle = []
        with httpx.Client(timeout=30) as http:
            for _ in range(40):
                started = time.perf_counter()
                http.get(f"{url}/healthz")
                idle.append((time.perf_counter() - started) * 1000)
                time.sleep(0.05)
        result["healthz_idle"] = common.summary_ms(idle)
        started = time.perf_counter()
        with HealthSampler(url) as during:
            result["sessions_upload"] = upload_sessions(url, keys["lme"], qs, args.clients)
            log(f"sessions: {result['sessions_upload']}")
            result["records_upload"] = upload_records(url, keys["lme"], real, args.clients, args.batch)
            log(f"records: {result['records_upload']}")
            result["synthetic_upload"] = upload_records(url, keys["synthetic"], synthetic, args.clients, args.batch)
            log(f"synthetic: {result['synthetic_upload']}")
            acknowledged = time.perf_counter() - started
            biggest = max({b["workspace"] for b in real}, key=lambda w: sum(1 for b in real if b["workspace"] == w))
            if args.pending_probe:
                result["pending_probe_backlog"] = pending_probe(tenants["lme"].project_id, biggest)
            result["vectors"] = wait_for_vectors(url, keys, project_ids, started)
        items = result["sessions_upload"]["turns"] + result["records_upload"]["records"]
        items += result["synthetic_upload"]["records"]
        seconds = result["vectors"]["seconds"]
        result["vectors"].update(
            items=items,
            acknowledged_after=round(acknowledged, 1),
            waited_after_last_ack=None if seconds is None else round(seconds - acknowledged, 1),
            items_per_s=None if seconds is None else round(items / seconds, 1),
        )
        result["healthz_while_embedding"] = common.summary_ms(during.samples)
        log(f"vectors: {result['vectors']}; /healthz while embedding {result['healthz_while_embedding']}")
        if args.pending_probe:
            result["pending_probe_embedded"] = pending_probe(tenants["lme"].project_id, biggest)
        common.vacuum_analyze()
        measured = latency_passes(url, keys, qs, args.passes)
        samples = measured["samples"]
        samples.update(mcp_passes(url, keys["lme"], qs, args.passes))
        result["latency_ms"] = {label: common.summary_ms(s) for label, s in samples.items()}
        result["pending_seen_after_embedding"] = measured["pending_seen"]
        result["recall"] = recall(qs, measured["rankings"])
    return result


def report(result: dict[str, Any]) -> str:
    lat = result["latency_ms"]
    floor = lat["healthz"]["p50"]
    synthetic = lat["synthetic search"]["p95"]
    rows = [[label, s["n"], s["p50"], s["p95"], f"{s['p95'] / floor:.1f}×",
             f"{s['p95'] / synthetic:.2f}×" if "search" in label else "—"]
            for label, s in lat.items()]  # fmt: skip
    out = [markdown_table(["call", "n", "p50 ms", "p95 ms", "p95 / healthz p50", "p95 / synthetic p95"], rows)]
    v, s, r = result["vectors"], result["sessions_upload"], result["records_upload"]
    out.append(markdown_table(
        ["load", "items", "seconds", "per s"],
        [["sessions (turns acknowledged)", s["turns"], s["seconds"], s["turns_per_s"]],
         ["records (acknowledged, batches)", r["records"], r["seconds"], r["records_per_s"]],
         ["synthetic records (acknowledged)", result["synthetic_upload"]["records"],
          result["synthetic_upload"]["seconds"], result["synthetic_upload"]["records_per_s"]],
         ["every vector in (from the first upload)", v["items"], v["seconds"], v["items_per_s"]]],
    ))  # fmt: skip
    out.append(
        f"Waited {v['waited_after_last_ack']} s after the last acknowledgement; list_workspaces said nothing was "
        f"pending after {v['api_said_ready_after']} s. /healthz idle p50 {result['healthz_idle']['p50']} ms, "
        f"while the worker embedded p50 {result['healthz_while_embedding']['p50']} ms / p95 "
        f"{result['healthz_while_embedding']['p95']} ms. Batch answers counted {r['queued']} records queued for "
        f"vectors; pending_vectors seen in searches after embedding: {result['pending_seen_after_embedding']}."
    )
    out.append(markdown_table(
        ["path", "R_any@5", "R_all@5", "n"],
        [[label, f"{x['any']:.3f}", f"{x['all']:.3f}", x["n"]] for label, x in result["recall"].items()],
    ))  # fmt: skip
    record, session = lat["record search"]["p95"], lat["session search"]["p95"]
    goals = [
        ("record search p95 ≤ 2× synthetic p95", record / synthetic, GOAL_SYNTHETIC_RATIO),
        ("session search p95 ≤ record search p95", session / record, 1.0),
        ("record search p95 ≤ 6× /healthz p50", record / floor, GOAL_HEALTHZ_RATIO),
        ("session search p95 ≤ 6× /healthz p50", session / floor, GOAL_HEALTHZ_RATIO),
    ]
    lines = [f"- {name}: {value:.2f} ({'met' if value <= bound else 'missed'})" for name, value, bound in goals]
    rate = v["items_per_s"]
    met = "met" if rate and rate >= GOAL_ITEMS_PER_S else "missed"
    lines.append(f"- ≥ {GOAL_ITEMS_PER_S:.0f} items/s embedded: {rate} ({met})")
    for name in ("pending_probe_backlog", "pending_probe_embedded"):
        if name in result:
            p = result[name]
            lines.append(
                f"- pending count ({name.split('_')[-1]}, {p['pending']} pending): p50 {p['p50']} ms, p95 {p['p95']} ms"
            )
    return "\n\n".join([*out, "\n".join(lines)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=None, help="the first N questions only (default: all 100)")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--backend", default="use")
    parser.add_argument("--pending-probe", action=argparse.BooleanOptionalAction, default=True)
    common.add_data_dir(parser, common.ROOT / "var" / "bench-lme-speed")
    parser.add_argument("--out", default=str(common.OUT_DIR / "lme_speed.json"))
    args = parser.parse_args()
    result = run(args)
    text = report(result)
    print(text)
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
