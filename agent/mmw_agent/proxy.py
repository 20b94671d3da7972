"""``mmw-agent`` with no arguments: a stdio MCP server in front of the MMW server.

- ``tools/list``: the server's tools (names, descriptions, schemas, annotations as it lists
  them) plus ``mmw_sync_status``. Each listing is kept in the state dir; when the server cannot
  be reached the last listing is served from there (``mmw_sync_status`` says so), so a client
  started offline still sees ``remember`` and ``forget`` and can queue writes. The server lists
  each key the tools its scopes allow, so a kept listing is served only to the server and key it
  was fetched with. With no listing fetched for them, only ``mmw_sync_status`` is listed —
  inventing schemas would be a lie.
- ``tools/call``: forwarded as sent; the server's result (content, ``structuredContent``,
  ``isError`` with its exact text) comes back unchanged. Every ``remember`` carries an
  ``X-Idempotency-Key`` of the agent's making, so a call whose answer was lost can be sent again
  without a second record.
- Server unreachable: a read answers ``isError`` with ``Error executing tool <name>: MMW server
  at <url> is unreachable (<reason>)``; ``remember`` / ``forget`` are committed to the SQLite
  queue before the answer, which says they were queued and gives the local id. A background task
  replays the queue in order once the server answers (a write made while older ones wait joins
  the queue, so order holds), and a second one uploads sessions when consent was given.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from mmw_agent import config, consent, state, status, sync
from mmw_agent.config import Config
from mmw_agent.remote import KeyRefused, Remote, Unreachable

logger = logging.getLogger("mmw_agent")

SYNC_STATUS = "mmw_sync_status"
WRITES = frozenset({"remember", "forget"})
REPLAY_INTERVAL = float(os.environ.get("MMW_AGENT_REPLAY_INTERVAL", "2"))
SYNC_INTERVAL = float(os.environ.get("MMW_AGENT_SYNC_INTERVAL", "300"))

SYNC_STATUS_TOOL = types.Tool(
    name=SYNC_STATUS,
    title="mmw-agent sync status",
    description=(
        "The local mmw-agent's state: whether the MMW server is reachable and when it last answered, "
        "consent to upload sessions (given when, for which sources, or revoked), session files found, "
        "sessions and turns uploaded / pending / failed, writes queued while offline, the last error."
    ),
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
)


def tools_cache_path() -> str:
    return str(config.state_dir() / "tools.json")


def _as_proxied(tools: list[types.Tool]) -> list[types.Tool]:
    """The server's tools as this proxy offers them: a write (``WRITES``) may be answered here
    with a "queued" result instead of the server's answer, so its ``outputSchema`` is dropped —
    MCP clients validate structured results against it and would reject the queued one."""
    return [t.model_copy(update={"output_schema": None}) if t.name in WRITES else t for t in tools]


def _text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


@contextlib.contextmanager
def _replay_lock() -> Iterator[bool]:
    """One replayer at a time across processes (several clients may each run an mmw-agent)."""
    path = config.state_dir() / "replay.lock"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Proxy:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.remote = Remote(cfg)
        self._lock = anyio.Lock()  # serialises replays and new writes in this process

    # --- tools/list ------------------------------------------------------------------------

    async def list_tools(self) -> list[types.Tool]:
        try:
            tools = await self.remote.list_tools()
        except (Unreachable, KeyRefused) as exc:
            state.note_contact(ok=False, error=str(exc))
            return [*self._cached_tools(), SYNC_STATUS_TOOL]
        state.note_contact(ok=True)
        self._cache_tools(tools)
        return [*_as_proxied(tools), SYNC_STATUS_TOOL]

    def _listed_for(self) -> str:
        """Which server and key a kept listing belongs to (a digest: the key never reaches the file)."""
        return hashlib.sha256(f"{self.cfg.url} {self.cfg.key}".encode()).hexdigest()

    def _cache_tools(self, tools: list[types.Tool]) -> None:
        data = {
            "listed_for": self._listed_for(),
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
        }
        path = tools_cache_path()
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
        state.put("tool_list", {"source": "server", "at": time.time()})

    def _cached_tools(self) -> list[types.Tool]:
        try:
            with open(tools_cache_path(), encoding="utf-8") as handle:
                data = json.load(handle)
            if not isinstance(data, dict) or data.get("listed_for") != self._listed_for():
                raise ValueError("kept for another server or key")
            tools = [types.Tool.model_validate(item) for item in data["tools"]]
        except (OSError, ValueError):
            state.put("tool_list", {"source": "none (never listed for this server and key)", "at": None})
            return []
        previous = state.get("tool_list") or {}
        state.put("tool_list", {"source": "cache", "at": previous.get("at")})
        return _as_proxied([t for t in tools if t.name != SYNC_STATUS])

    # --- tools/call ------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        if name == SYNC_STATUS:
            return await self._sync_status()
        if name in WRITES:
            return await self._write(name, arguments)
        try:
            result = await self.remote.call_tool(name, arguments)
        except (Unreachable, KeyRefused) as exc:
            state.note_contact(ok=False, error=str(exc))
            return _text_result(f"Error executing tool {name}: {exc}", is_error=True)
        state.note_contact(ok=True)
        return result

    async def _write(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        args = dict(arguments or {})
        key = state.new_idempotency_key()
        async with self._lock:
            if state.pending_writes():
                await self._replay_locked()
            if not state.pending_writes():
                try:
                    result = await self.remote.call_tool(name, args, idempotency_key=key)
                except KeyRefused as exc:
                    return _text_result(f"Error executing tool {name}: {exc}", is_error=True)
                except Unreachable as exc:
                    state.note_contact(ok=False, error=str(exc))
                    reason = str(exc)
                else:
                    state.note_contact(ok=True)
                    return result
            else:
                reason = "earlier writes are still queued"
            local_id = state.enqueue(name, args, key)  # committed before we answer
        answer = {
            "queued": True,
            "local_id": local_id,
            "tool": name,
            "idempotency_key": key,
            "message": (
                f"Not written yet: {reason}. The {name} was queued on this computer as local write "
                f"#{local_id} and will be sent, in order, when the server answers again "
                f"(see {SYNC_STATUS})."
            ),
        }
        result = _text_result(json.dumps(answer, ensure_ascii=False))
        result.structured_content = answer
        return result

    async def _sync_status(self) -> types.CallToolResult:
        await anyio.to_thread.run_sync(status.check_server, self.remote)
        report = await anyio.to_thread.run_sync(status.collect, self.cfg)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(report, ensure_ascii=False))],
            structured_content=report,
        )

    # --- background ------------------------------------------------------------------------

    async def replay(self) -> None:
        async with self._lock:
            await self._replay_locked()

    async def _replay_locked(self) -> None:
        with _replay_lock() as mine:
            if not mine:
                return
            for write in state.pending_writes():
                try:
                    result = await self.remote.call_tool(
                        write.tool,
                        write.arguments,
                        idempotency_key=write.idempotency_key if write.tool == "remember" else None,
                    )
                except (Unreachable, KeyRefused) as exc:
                    state.note_contact(ok=False, error=str(exc))
                    state.retry_later(write.id, str(exc))
                    return
                state.note_contact(ok=True)
                text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
                if result.is_error:
                    # The server answered and refused it (a bound, a notice): retrying cannot help.
                    state.finish_write(write.id, state="failed", result=text)
                    state.note_error(f"queued {write.tool} #{write.id} refused by the server: {text}")
                else:
                    state.finish_write(write.id, state="done", result=text)

    async def replay_loop(self) -> None:
        while True:
            if state.pending_writes():
                try:
                    await self.replay()
                except Exception:
                    logger.exception("replaying queued writes failed")
            await anyio.sleep(REPLAY_INTERVAL)

    async def sync_loop(self) -> None:
        while True:
            try:
                await anyio.to_thread.run_sync(self._sync_once)
            except Exception:
                logger.exception("background session sync failed")
            await anyio.sleep(SYNC_INTERVAL)

    def _sync_once(self) -> None:
        consent.flush_pending(self.remote)
        if not consent.uploads_allowed():
            return
        try:
            sync.run(self.cfg, self.remote)
        except sync.NoConsent:
            return
        except (Unreachable, KeyRefused) as exc:
            state.note_contact(ok=False, error=str(exc))
        else:
            state.note_contact(ok=True)


def build_server(proxy: Proxy) -> Server[Any]:
    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await proxy.list_tools())

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        return await proxy.call_tool(params.name, params.arguments)

    return Server(
        "mmw-agent",
        version="0.1.0",
        title="MMW (through the local mmw-agent)",
        instructions=(
            "MMW memory through the local mmw-agent. Writes made while the server is unreachable are "
            f"queued on this computer and sent later; {SYNC_STATUS} shows the queue and the upload state."
        ),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


@contextlib.asynccontextmanager
async def _background(proxy: Proxy) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(proxy.replay_loop)
        tg.start_soon(proxy.sync_loop)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def serve(cfg: Config) -> None:
    proxy = Proxy(cfg)
    server = build_server(proxy)
    async with _background(proxy), stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
