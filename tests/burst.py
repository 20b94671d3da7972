"""A burst of concurrent mixed calls against a served MMW: half REST, half MCP, all at once (the
client of ``tests/mmw/test_overload.py`` and of ``bench/burst.py``, which serves its own MMW).

Each call is one of remember / search / get, over REST (``/api/v1/...``) or MCP (a plain
JSON-RPC ``tools/call`` POST to ``/mcp``, stateless JSON mode, as the official client sends it).
``Burst.summary()``: counts by outcome (``rest 201``, ``mcp 200``, ``mcp 200 isError``,
``rest 503 retry-after`` ...), latency p50 / p95 / max in ms, and the first body of each
failing outcome. Bounded: ``calls`` ≤ 2,000, every call times out after ``timeout`` s, and
only loopback URLs are accepted.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_CALLS = 2_000
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass
class Outcome:
    label: str
    ms: float
    body: str


@dataclass
class Burst:
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        times = sorted(o.ms for o in self.outcomes)
        counts = Counter(o.label for o in self.outcomes)
        samples: dict[str, str] = {}
        for o in self.outcomes:
            if not o.label.endswith((" 200", " 201")):
                samples.setdefault(o.label, o.body[:300])
        worst: dict[str, float] = {}
        for o in self.outcomes:
            worst[o.label] = max(worst.get(o.label, 0.0), o.ms)
        return {
            "calls": len(self.outcomes),
            "counts": dict(sorted(counts.items())),
            "p50_ms": round(_percentile(times, 50)),
            "p95_ms": round(_percentile(times, 95)),
            "max_ms": round(times[-1]) if times else 0,
            "max_ms_by_outcome": {label: round(ms) for label, ms in sorted(worst.items())},
            "samples": samples,
        }


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, math.ceil(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def http(url: str, method: str, path: str, headers: dict[str, str], body: Any, timeout: float) -> Answer:
    """One HTTP/1.1 request on its own connection (``Connection: close``), read to the end.

    A deliberately bare client: httpx's pool alone needs ~6 s of client CPU for 500 concurrent
    requests on this machine (measured against a hello-world ASGI app), which would be counted
    as server latency.
    """
    parts = urlsplit(url)
    payload = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}", "", ""]

    async def exchange() -> bytes:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            writer.write("\r\n".join(lines).encode() + payload)
            await writer.drain()
            return await reader.read()
        finally:
            writer.close()

    raw = await asyncio.wait_for(exchange(), timeout)
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    answer_headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines if ":" in h)}
    if answer_headers.get("transfer-encoding") == "chunked":
        rest = _dechunk(rest)
    return Answer(int(status_line.split()[1]), answer_headers, rest)


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)


def _label(surface: str, answer: Answer) -> str:
    label = f"{surface} {answer.status}"
    if answer.status in (429, 503) and "retry-after" in answer.headers:
        label += " retry-after"
    if surface == "mcp" and answer.status == 200:
        try:
            if answer.json().get("result", {}).get("isError"):
                label += " isError"
        except ValueError:
            label += " not-json"
    return label


def _rest_request(i: int, memory_id: str) -> tuple[str, str, dict[str, Any] | None]:
    kind = i % 3
    if kind == 0:
        return "POST", "/api/v1/memories", {"content": f"burst fact number {i}", "tags": ["burst"]}
    if kind == 1:
        return "POST", "/api/v1/memories/search", {"query": f"burst fact {i % 17}", "limit": 5}
    return "GET", f"/api/v1/memories/{memory_id}", None


def _mcp_body(i: int, memory_id: str) -> dict[str, Any]:
    kind = i % 3
    args: dict[str, Any]
    if kind == 0:
        name, args = "remember", {"content": f"burst fact over mcp {i}", "tags": ["burst"]}
    elif kind == 1:
        name, args = "search", {"query": f"burst fact {i % 17}", "limit": 5}
    else:
        name, args = "get_memory", {"memory_id": memory_id}
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}


async def _one(url: str, key: str, i: int, memory_id: str, start: asyncio.Event, timeout: float) -> Outcome:
    await start.wait()
    began = time.perf_counter()
    surface = "rest" if i % 2 == 0 else "mcp"
    auth = {"Authorization": f"Bearer {key}"}
    try:
        if surface == "rest":
            method, path, body = _rest_request(i // 2, memory_id)
            answer = await http(url, method, path, auth, body, timeout)
        else:
            headers = {**auth, "Accept": "application/json, text/event-stream"}
            answer = await http(url, "POST", "/mcp", headers, _mcp_body(i // 2, memory_id), timeout)
        label, text = _label(surface, answer), answer.body.decode(errors="replace")
    except (OSError, TimeoutError, ValueError, IndexError) as exc:
        label, text = f"{surface} {type(exc).__name__}", repr(exc)
    return Outcome(label, (time.perf_counter() - began) * 1000, text)


async def run_burst(url: str, key: str, calls: int, timeout: float, memory_id: str | None = None) -> Burst:
    """Fire ``calls`` requests at once (half REST, half MCP); ``get`` reads ``memory_id`` (else a
    record written first)."""
    host = urlsplit(url).hostname or ""
    if host not in LOOPBACK:
        raise SystemExit(f"refusing a non-loopback target: {url}")
    if not 1 <= calls <= MAX_CALLS:
        raise SystemExit(f"--calls must be between 1 and {MAX_CALLS}")
    if memory_id is None:
        auth = {"Authorization": f"Bearer {key}"}
        seed = await http(url, "POST", "/api/v1/memories", auth, {"content": "burst seed record"}, timeout)
        if seed.status != 201:
            raise SystemExit(f"seed write failed: {seed.status} {seed.body[:300]!r}")
        memory_id = str(seed.json()["id"])
    start = asyncio.Event()
    seeded = memory_id
    tasks = [asyncio.create_task(_one(url, key, i, seeded, start, timeout)) for i in range(calls)]
    await asyncio.sleep(0.1)
    start.set()
    return Burst(list(await asyncio.gather(*tasks)))
