"""Talking to the MMW server: MCP through the official SDK client (streamable HTTP at
``<url>/mcp``), REST through httpx2 (the HTTP client the SDK itself is built on).

Every failure to get an answer from the server — no connection, a timeout, a gateway's
502/503/504 — is ``Unreachable``, whose text names the server. A key the server refuses is
``KeyRefused``. Anything the server *answers* (an ``isError`` tool result included) is returned
as it came.

Each MCP call opens its own connection (the server is stateless, so nothing is lost); the first
negotiates the protocol (``server/discover``), later ones reuse that answer and skip the probe.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mmw_agent.config import Config

IDEMPOTENCY_HEADER = "X-Idempotency-Key"
CALL_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0
_GATEWAY_STATUSES = frozenset({502, 503, 504})

T = TypeVar("T")


class Unreachable(Exception):
    """The server gave no answer (connection refused, timeout, gateway error)."""


class KeyRefused(Exception):
    """The server answered 401: the key is missing, wrong, revoked or expired (the server says
    which, and the message carries its words)."""


def refused_text(url: str, why: str | None) -> str:
    return f"MMW server at {url} refused the API key{f': {why}' if why else ''} (401)"


def unreachable_text(url: str, reason: str) -> str:
    return f"MMW server at {url} is unreachable ({reason})"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _transport_reason(exc: BaseException) -> str | None:
    """Why no answer came, if ``exc`` (or a leaf of its group, or a cause) is a transport failure."""
    for leaf in _leaves(exc):
        seen: BaseException | None = leaf
        while seen is not None:
            if isinstance(seen, httpx2.TimeoutException | TimeoutError):
                return "timed out"
            if isinstance(seen, httpx2.TransportError | OSError):
                return str(seen) or type(seen).__name__
            seen = seen.__cause__
    return None


class _StatusWatch:
    """Remembers the HTTP status of the last response (the SDK reports a 401 or 503 only vaguely)."""

    def __init__(self) -> None:
        self.status = 0
        self.refusal: str | None = None

    async def __call__(self, response: httpx2.Response) -> None:
        self.status = response.status_code
        if response.status_code == 401:  # /mcp says why in the body (REST's words)
            await response.aread()
            self.refusal = _why_refused(response)


class Remote:
    def __init__(self, cfg: Config, *, timeout: float = CALL_TIMEOUT) -> None:
        self.cfg = cfg
        self.timeout = timeout
        self._discover: types.DiscoverResult | None = None
        self._version: str | None = None

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.cfg.key}", **(extra or {})}

    async def _with_client(self, action: Callable[[Client], Awaitable[T]], headers: dict[str, str] | None = None) -> T:
        watch = _StatusWatch()
        http = httpx2.AsyncClient(
            headers=self._headers(headers),
            timeout=httpx2.Timeout(self.timeout, connect=CONNECT_TIMEOUT),
            event_hooks={"response": [watch]},
        )
        mode = self._version if self._discover is not None and self._version else "auto"
        try:
            with anyio.fail_after(self.timeout + CONNECT_TIMEOUT):
                async with (
                    http,
                    Client(
                        streamable_http_client(self.cfg.mcp_url, http_client=http),
                        mode=mode,
                        prior_discover=self._discover,
                        cache=None,
                    ) as client,
                ):
                    if self._discover is None:
                        self._discover = client.session.discover_result
                        self._version = client.session.protocol_version
                    return await action(client)
        except (MCPError, Exception) as exc:
            if watch.status == 401:
                raise KeyRefused(refused_text(self.cfg.url, watch.refusal)) from None
            if watch.status in _GATEWAY_STATUSES:
                raise Unreachable(unreachable_text(self.cfg.url, f"HTTP {watch.status}")) from None
            reason = _transport_reason(exc)
            if reason is not None:
                raise Unreachable(unreachable_text(self.cfg.url, reason)) from None
            raise

    async def list_tools(self) -> list[types.Tool]:
        async def action(client: Client) -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return tools

        return await self._with_client(action)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, *, idempotency_key: str | None = None
    ) -> types.CallToolResult:
        headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else None

        async def action(client: Client) -> types.CallToolResult:
            return await client.call_tool(name, arguments)

        return await self._with_client(action, headers)

    # --- REST (synchronous: the CLI and the background sync run it in a thread) ------------

    def rest(self, method: str, path: str, json: Any = None) -> httpx2.Response:
        """One REST request under ``<url>/api/v1``; a 401 raises ``KeyRefused``."""
        try:
            response = httpx2.request(
                method,
                f"{self.cfg.api_url}{path}",
                json=json,
                headers=self._headers(),
                timeout=httpx2.Timeout(self.timeout, connect=CONNECT_TIMEOUT),
            )
        except httpx2.TransportError as exc:
            raise Unreachable(unreachable_text(self.cfg.url, _transport_reason(exc) or str(exc))) from None
        if response.status_code in _GATEWAY_STATUSES:
            raise Unreachable(unreachable_text(self.cfg.url, f"HTTP {response.status_code}"))
        if response.status_code == 401:
            raise KeyRefused(refused_text(self.cfg.url, _why_refused(response)))
        return response


def _why_refused(response: httpx2.Response) -> str | None:
    """The server's reason for a 401: REST's ``error.message``, /mcp's ``error_description``."""
    try:
        data = response.json()
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    why = error.get("message") if isinstance(error, dict) else data.get("error_description")
    return why if isinstance(why, str) and why != "Authentication required" else None


def error_message(response: httpx2.Response) -> str:
    """The ``{"error": {"message"}}`` text of a REST error answer (or its status)."""
    try:
        data = response.json()
        message = data["error"]["message"]
        if isinstance(message, str):
            return message
    except (ValueError, KeyError, TypeError):
        pass
    return f"HTTP {response.status_code}"
