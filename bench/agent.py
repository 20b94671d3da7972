"""The local agent (``mmw-agent``, issue #16) against a served MMW: sync throughput and proxy latency.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/run.py --only agent [--agent-turns 10000] [--agent-calls 200]
    .venv/bin/python -m bench.agent [--turns 10000] [--calls 200]          # the same, on its own

One served MMW with its worker, beat and embedded broker (``manage.py serve``, as ``make run``),
on the bench database (``var/bench``), a fresh project of the bench account.

1. Sync. A generated history of Claude Code JSONL files and Codex rollout files (``--turns``
   turns or a few more, in the formats of ``agent/mmw_agent/parsers.py``) is written to a temporary
   folder that ``MMW_AGENT_CLAUDE_DIR`` / ``MMW_AGENT_CODEX_DIR`` point at; consent is written to
   the agent's state directly (as tests/agent/test_sync_live.py does: the real consent needs a
   typed ``yes`` in a terminal). Then ``mmw-agent sync`` (the real command, a process of its own):
   - upload: wall time of the command, i.e. until the server acknowledged the last batch;
   - vectors: time from the start of the upload until every uploaded turn has its vector (the
     transcripts app's background embedding, done by the worker; polled in the database);
   - re-run: a second ``mmw-agent sync``, which must upload nothing (its wall time).
   Local parsing alone (the agent's parser over every file, in this process) is timed too.

2. Proxy latency. ``search`` and ``remember`` sent (a) through ``mmw-agent`` by the official MCP
   client over stdio and (b) straight to the server's ``/mcp`` by the official streamable-HTTP
   client, one session each held open for the whole phase, calls interleaved (a, b, b, a, …) so
   both see the same noise. The agent's added latency is (a) − (b), per percentile.

A benchmark, not a test: it prints figures and fails only if the agent's answers are wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.common import log

AGENT_CMD = [sys.executable, "-m", "mmw_agent"]
AGENT_DIR = common.ROOT / "agent"
EXCHANGES_PER_SESSION = 30
VECTORS_TIMEOUT = 1800.0
WARM_UP_CALLS = 5

_WORDS_TEXT = (
    "deploy migration index query cache worker queue retry timeout webhook payment checkout token session "
    "postgres vector embedding search ranking latency throughput budget schema fixture test flaky build "
    "docker image terraform bastion ami module variable output state lock backend bucket policy role "
    "kubernetes pod service ingress certificate renewal cron job backup restore snapshot replica lag "
    "react component hook state props render router form validation error boundary bundle chunk "
    "python django model view serializer middleware signal transaction commit rollback savepoint "
    "rust borrow lifetime trait async future tokio channel mutex arc clone iterator closure macro "
    "logging metrics tracing span alert dashboard pager incident postmortem runbook oncall rotation"
)
_WORDS = _WORDS_TEXT.split(" ")
_TOOLS = (
    ("Bash", "command", "pytest tests/{w}_test.py -x -q"),
    ("Read", "file_path", "/home/dev/{w}/main.py"),
    ("Edit", "file_path", "/home/dev/{w}/settings.py"),
    ("Grep", "pattern", "def {w}"),
)


# --- the fixture history -------------------------------------------------------------------------


def _sentence(rng: random.Random, words: int) -> str:
    picked = [rng.choice(_WORDS) for _ in range(words)]
    return " ".join(picked).capitalize() + "."


def _text(rng: random.Random, low: int, high: int) -> str:
    out, total = [], rng.randint(low, high)
    while total > 0:
        n = min(total, rng.randint(6, 18))
        out.append(_sentence(rng, n))
        total -= n
    return " ".join(out)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def claude_session(rng: random.Random, folder: Path, start: float) -> Path:
    """A Claude Code session: per exchange a user message; an assistant line with thinking, text
    and a tool call; the tool's result (a ``user`` line, not uploaded); the assistant's answer."""
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    cwd = f"/home/dev/{rng.choice(_WORDS)}"
    project = folder / cwd.replace("/", "-")
    project.mkdir(parents=True, exist_ok=True)
    common_fields = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.0.1"}
    lines: list[dict[str, Any]] = [
        {"type": "summary", "summary": _sentence(rng, 6), "leafUuid": "x"},
        {"type": "file-history-snapshot", "messageId": "m-0", "snapshot": {}, "isSnapshotUpdate": False},
    ]
    parent: str | None = None
    t = start

    def add(kind: str, content: Any, **extra: Any) -> None:
        nonlocal parent, t
        t += rng.uniform(2, 40)
        node = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        message = {"role": kind, "content": content} | ({"model": "claude"} if kind == "assistant" else {})
        lines.append(
            {"parentUuid": parent, **common_fields, "gitBranch": "main", "type": kind, "message": message}
            | {"uuid": node, "timestamp": _stamp(t)}
            | extra
        )
        parent = node

    for i in range(EXCHANGES_PER_SESSION):
        add("user", _text(rng, 10, 60))
        name, field, template = rng.choice(_TOOLS)
        tool_id = f"toolu_{i}"
        blocks = [
            {"type": "thinking", "thinking": _text(rng, 10, 40), "signature": "s"},
            {"type": "text", "text": _text(rng, 15, 80)},
            {"type": "tool_use", "id": tool_id, "name": name, "input": {field: template.format(w=rng.choice(_WORDS))}},
        ]
        add("assistant", blocks)
        result = [{"type": "tool_result", "tool_use_id": tool_id, "content": _text(rng, 20, 120)}]
        add("user", result, toolUseResult={"stdout": "..."})
        add("assistant", [{"type": "text", "text": _text(rng, 20, 150)}])
    path = project / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def codex_session(rng: random.Random, folder: Path, start: float) -> Path:
    """A Codex rollout: session_meta and the injected context first, then per exchange a user
    message (with its event_msg twin), reasoning, a function call and its output, the answer."""
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    day = time.gmtime(start)
    target = folder / f"{day.tm_year:04d}" / f"{day.tm_mon:02d}" / f"{day.tm_mday:02d}"
    target.mkdir(parents=True, exist_ok=True)
    cwd = f"/home/dev/{rng.choice(_WORDS)}"
    t = start
    lines: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        nonlocal t
        t += rng.uniform(0.1, 30)
        lines.append({"timestamp": _stamp(t), "type": kind, "payload": payload})

    meta = {"id": sid, "timestamp": _stamp(t), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.65.0"}
    add("session_meta", meta | {"instructions": None, "source": "cli"})
    context = f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"
    add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]})
    add("turn_context", {"cwd": cwd, "model": "gpt-5-codex", "approval_policy": "on-request"})
    for i in range(EXCHANGES_PER_SESSION):
        ask = _text(rng, 10, 60)
        add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]})
        add("event_msg", {"type": "user_message", "message": ask})
        summary = [{"type": "summary_text", "text": _text(rng, 10, 30)}]
        add("response_item", {"type": "reasoning", "summary": summary, "encrypted_content": "gAAAA"})
        command = json.dumps({"command": ["bash", "-lc", f"grep -rn {rng.choice(_WORDS)} src/"]})
        add("response_item", {"type": "function_call", "name": "shell", "arguments": command, "call_id": f"c{i}"})
        output = json.dumps({"output": _text(rng, 20, 120), "metadata": {"exit_code": 0}})
        add("response_item", {"type": "function_call_output", "call_id": f"c{i}", "output": output})
        answer = [{"type": "output_text", "text": _text(rng, 20, 150)}]
        add("response_item", {"type": "message", "role": "assistant", "content": answer})
    path = target / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', day)}-{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def count_turns(paths: list[tuple[str, Path]]) -> int:
    """Turns the agent's parser finds (default options: tool outputs and reasoning left out)."""
    from mmw_agent import parsers

    return sum(len(parsers.parse(client, path.read_bytes()).turns) for client, path in paths)


def generate(home: Path, turns: int, seed: int = 16) -> dict[str, Any]:
    """Sessions alternately of Claude Code and Codex until the parser counts ``turns`` turns."""
    from mmw_agent import sources

    rng = random.Random(seed)
    claude, codex = home / "claude", home / "codex"
    made: list[tuple[str, Path]] = []
    start = time.mktime((2026, 1, 5, 9, 0, 0, 0, 0, 0))
    found = 0
    while found < turns:
        client = sources.CLAUDE if len(made) % 2 == 0 else sources.CODEX
        path = (claude_session if client == sources.CLAUDE else codex_session)(
            rng, claude if client == sources.CLAUDE else codex, start
        )
        made.append((client, path))
        found += count_turns([(client, path)])
        start += 3 * 3600
    return {
        "sessions": len(made),
        "claude_code_sessions": sum(1 for c, _ in made if c == sources.CLAUDE),
        "codex_sessions": sum(1 for c, _ in made if c == sources.CODEX),
        "turns": found,
        "bytes": sum(p.stat().st_size for _, p in made),
        "files": made,
    }


# --- the agent's environment ---------------------------------------------------------------------


def agent_environment(home: Path, url: str, key: str) -> dict[str, str]:
    """An isolated ``mmw-agent``: its own config and state dirs and session folders."""
    for sub in ("claude", "codex", "config", "state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(AGENT_DIR),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "MMW_AGENT_CLAUDE_DIR": str(home / "claude"),
        "MMW_AGENT_CODEX_DIR": str(home / "codex"),
        "MMW_URL": url,
        "MMW_API_KEY": key,
        "MMW_AGENT_SYNC_INTERVAL": "3600",
    }
    return env


def give_consent(env: dict[str, str]) -> None:
    """Consent written to the agent's state directly (bench only; users answer ``yes`` in a terminal)."""
    script = (
        "from mmw_agent import state, consent; "
        "state.put(consent.KEY, {'given': True, 'at': 0, 'sources': ['claude-code', 'codex'], 'server': 'bench'})"
    )
    subprocess.run([AGENT_CMD[0], "-c", script], env=env, check=True, timeout=120)


def agent_sync(env: dict[str, str], log_path: Path) -> tuple[float, dict[str, Any]]:
    """``mmw-agent sync``: (wall seconds, its JSON report)."""
    started = time.perf_counter()
    with log_path.open("a") as errlog:
        done = subprocess.run(
            [*AGENT_CMD, "sync", "--json"], env=env, stdout=subprocess.PIPE, stderr=errlog, timeout=3600
        )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"mmw-agent sync exited {done.returncode}; see {log_path}")
    report: dict[str, Any] = json.loads(done.stdout)
    return seconds, report


def turns_without_vector(project_id: str) -> tuple[int, int]:
    """(live non-stub turns of the project, those still without a vector), read in the database."""
    from transcripts.models import Turn

    live = Turn.objects.filter(project_id=project_id, is_stub=False, session__forgotten_at__isnull=True)
    return live.count(), live.filter(embedding__isnull=True).count()


def drop_sessions(project_id: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM transcripts_turn WHERE project_id = %s", [project_id])
        cursor.execute("DELETE FROM transcripts_session WHERE project_id = %s", [project_id])


# --- phase 1: sync -------------------------------------------------------------------------------


def sync_phase(server: common.Server, tenant: common.Tenant, work: Path, turns: int) -> dict[str, Any]:
    home = work / "sync"
    env = agent_environment(home, server.url, tenant.api_key)
    with common.stopwatch() as took:
        history = generate(home, turns)
    files = history.pop("files")
    log(
        f"generated {history['sessions']} sessions ({history['claude_code_sessions']} Claude Code, "
        f"{history['codex_sessions']} Codex), {history['turns']:,} turns, {history['bytes'] / 1e6:.1f} MB "
        f"in {took():.1f}s"
    )
    with common.stopwatch() as parse_took:
        parsed = count_turns(files)
    assert parsed == history["turns"]
    give_consent(env)
    log_path = common.OUT_DIR / "agent-sync.log"
    log_path.unlink(missing_ok=True)

    started = time.perf_counter()
    upload_seconds, report = agent_sync(env, log_path)
    log(f"first sync: {upload_seconds:.1f}s, {report}")
    if report["turns_created"] != history["turns"] or report["turns_failed"] or report["errors"]:
        raise RuntimeError(f"the first sync did not upload every turn once: {report}")
    live, pending = turns_without_vector(tenant.project_id)
    at_ack = {"turns_on_server": live, "without_vector": pending}
    deadline = started + VECTORS_TIMEOUT
    last_log = 0.0
    while pending:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{pending} turns still without a vector after {VECTORS_TIMEOUT:.0f}s")
        time.sleep(0.5)
        live, pending = turns_without_vector(tenant.project_id)
        if time.perf_counter() - last_log > 15:
            last_log = time.perf_counter()
            log(f"  {live - pending:,} of {live:,} turns have their vector")
    vectors_seconds = time.perf_counter() - started
    log(f"every turn has its vector {vectors_seconds:.1f}s after the upload started")

    rerun_seconds, rerun = agent_sync(env, log_path)
    log(f"second sync: {rerun_seconds:.2f}s, {rerun}")
    if rerun["turns_created"] or rerun["turns_unchanged"] or rerun["files"]:
        raise RuntimeError(f"the second sync uploaded something: {rerun}")
    return {
        "history": history,
        "turns_on_server": live,
        "at_acknowledgement": at_ack,
        "parse_seconds": round(parse_took(), 2),
        "upload_seconds": round(upload_seconds, 2),
        "upload_turns_per_s": round(history["turns"] / upload_seconds, 1),
        "vectors_seconds": round(vectors_seconds, 2),
        "vectors_turns_per_s": round(history["turns"] / vectors_seconds, 1),
        "rerun_seconds": round(rerun_seconds, 2),
        "first_report": report,
        "rerun_report": rerun,
    }


# --- phase 2: proxy latency ----------------------------------------------------------------------


class _RemoteCaller:
    """The agent's own server client (``mmw_agent.remote.Remote``) called in this process: the
    proxy's path minus the stdio hop and the agent's local state writes. ``remember`` carries an
    idempotency key, as the proxy sends it."""

    def __init__(self, remote: Any) -> None:
        self.remote = remote

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        key = f"bench-{uuid.uuid4()}" if name == "remember" else None
        return await self.remote.call_tool(name, arguments, idempotency_key=key)


async def _latency(server: common.Server, tenant: common.Tenant, work: Path, calls: int) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mmw_agent.config import Config
    from mmw_agent.remote import Remote

    env = agent_environment(work / "proxy", server.url, tenant.api_key)  # no consent: no background upload
    params = StdioServerParameters(command=AGENT_CMD[0], args=AGENT_CMD[1:], env=env)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {tenant.api_key}"})
    samples: dict[str, list[float]] = {}
    with (common.OUT_DIR / "agent-proxy.log").open("w") as errlog:
        async with (
            http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as direct,
            Client(stdio_client(params, errlog=errlog), mode="legacy") as proxied,
        ):
            listed = {t.name for t in (await proxied.list_tools()).tools}
            assert {"search", "remember", "mmw_sync_status"} <= listed, listed
            remote = Remote(Config(url=server.url, key=tenant.api_key))
            paths: dict[str, Any] = {
                "through mmw-agent": proxied,
                "direct /mcp": direct,
                "agent's Remote in-process": _RemoteCaller(remote),
            }
            rng = random.Random(7)
            for i in range(calls + WARM_UP_CALLS):
                order = list(paths) if i % 2 == 0 else list(reversed(paths))
                for tool in ("search", "remember"):
                    for name in order:
                        if tool == "search":
                            args: dict[str, Any] = {"query": " ".join(rng.choice(_WORDS) for _ in range(4))}
                        else:
                            args = {"content": f"Bench note {i} ({name}): {_text(rng, 8, 20)}"}
                        started = time.perf_counter()
                        result = await paths[name].call_tool(tool, args)
                        elapsed = (time.perf_counter() - started) * 1000
                        text = "".join(getattr(b, "text", "") for b in result.content)
                        if result.is_error or '"queued": true' in text:
                            raise RuntimeError(f"{tool} via {name} failed: {text[:300]}")
                        if i >= WARM_UP_CALLS:
                            samples.setdefault(f"{tool} {name}", []).append(elapsed)
    stats = {key: common.summary_ms(values) for key, values in samples.items()}
    added: dict[str, dict[str, float]] = {}
    for tool in ("search", "remember"):
        base = stats[f"{tool} direct /mcp"]
        for path in ("through mmw-agent", "agent's Remote in-process"):
            a = stats[f"{tool} {path}"]
            added[f"{tool} {path}"] = {q: round(a[q] - base[q], 2) for q in ("p50", "p95", "mean")}
    return {"calls_per_path": calls, "warm_up_calls": WARM_UP_CALLS, "latency_ms": stats, "added_ms": added}


def latency_phase(server: common.Server, tenant: common.Tenant, work: Path, calls: int) -> dict[str, Any]:
    result = asyncio.run(_latency(server, tenant, work, calls))
    log(f"proxy latency: {result['added_ms']}")
    return result


# --- the run -------------------------------------------------------------------------------------


def run(data_dir: Path, turns: int, calls: int) -> dict[str, Any]:
    common.setup_django(data_dir)
    tenant = common.bench_tenant("agent")
    drop_sessions(tenant.project_id)
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mmw-bench-agent-"))
    try:
        with common.Server(data_dir, "use", "agent", worker=True) as server:
            out: dict[str, Any] = {"sync": sync_phase(server, tenant, work, turns)}
            out["proxy"] = latency_phase(server, tenant, work, calls)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def render(agent: dict[str, Any]) -> list[str]:
    s, p = agent["sync"], agent["proxy"]
    h = s["history"]
    lines = [
        f"## Local agent: sync of {h['turns']:,} turns ({h['sessions']} sessions: {h['claude_code_sessions']} "
        f"Claude Code, {h['codex_sessions']} Codex; {h['bytes'] / 1e6:.1f} MB of JSONL)",
        "",
        common.markdown_table(
            ["step", "seconds", "turns/s"],
            [
                ["parse only (agent's parser, in-process)", s["parse_seconds"], round(h["turns"] / s["parse_seconds"])],
                ["`mmw-agent sync` until acknowledged", s["upload_seconds"], s["upload_turns_per_s"]],
                ["... until every turn has its vector", s["vectors_seconds"], s["vectors_turns_per_s"]],
                ["re-run (uploads nothing)", s["rerun_seconds"], "-"],
            ],
        ),
        "",
        f"When the upload was acknowledged {s['at_acknowledgement']['without_vector']:,} of "
        f"{s['at_acknowledgement']['turns_on_server']:,} turns still lacked their vector.",
        "",
        f"## Local agent: proxy latency ({p['calls_per_path']} calls per tool and path, interleaved, "
        f"after {p['warm_up_calls']} warm-up calls; ms)",
        "",
    ]
    rows = []
    lat, added = p["latency_ms"], p["added_ms"]
    for tool in ("search", "remember"):
        for path in ("direct /mcp", "through mmw-agent", "agent's Remote in-process"):
            x = lat[f"{tool} {path}"]
            d = added.get(f"{tool} {path}")
            extra = f"{d['p50']:+.1f} / {d['p95']:+.1f}" if d else "(baseline)"
            rows.append([tool, path, f"{x['p50']:.1f} / {x['p95']:.1f}", extra])
    lines.append(common.markdown_table(["tool", "path", "p50 / p95", "added vs direct p50 / p95"], rows))
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    parser.add_argument("--turns", type=int, default=10_000, help="turns in the generated history (at least)")
    parser.add_argument("--calls", type=int, default=200, help="measured calls per tool and path")
    args = parser.parse_args()
    started = time.time()
    result: dict[str, Any] = {
        "command": ".venv/bin/python -m bench.agent " + " ".join(sys.argv[1:]),
        "machine": common.machine_notes(),
        "agent": run(args.data_dir.resolve(), args.turns, args.calls),
    }
    result["duration_seconds"] = round(time.time() - started)
    result["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    (common.OUT_DIR / "results-agent.json").write_text(json.dumps(result, indent=1))
    print("\n".join(render(result["agent"])))


if __name__ == "__main__":
    main()
