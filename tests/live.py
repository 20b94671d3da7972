"""A live MMW server for contract tests, and clients for both surfaces over real HTTP.

``live_server`` serves the real ASGI application (``mmw.asgi:application``, Django + ``/mcp``)
with uvicorn on a free 127.0.0.1 port, in a thread of the pytest process so it shares the test
database (``transactional_db``: the test's writes are committed and visible to the server).

``mcp_call`` / ``mcp_list_tools`` speak MCP through the official SDK client (streamable HTTP);
``rest`` sends one REST request with httpx. All are synchronous, for plain test functions.

In a test module: ``from tests import live`` and ``live_server = live.live_server`` (or import
the fixture in ``tests/conftest.py``), then ``live.mcp_call(live_server, key, ...)``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from django.db import DEFAULT_DB_ALIAS, connections
from django.test.utils import modify_settings
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, TextContent, Tool

STARTUP_TIMEOUT = 20.0
SHUTDOWN_TIMEOUT = 10.0


class LiveServer(str):
    """The server's base URL (``http://127.0.0.1:<port>``, no trailing slash).

    pytest-django's autouse ``_live_server_helper`` acts on any fixture named ``live_server``:
    it requests ``transactional_db`` and calls ``_live_server_modified_settings.enable()`` /
    ``.disable()`` on it, so this carries that attribute, as pytest-django's own server does.
    """

    _live_server_modified_settings = modify_settings(ALLOWED_HOSTS={"append": "127.0.0.1"})

    @property
    def url(self) -> str:
        return str(self)


class ThreadedServer:
    """MMW's ASGI application (``/mcp`` mounted) served by uvicorn in a thread on 127.0.0.1. The
    port is chosen at the first ``start`` and kept, so a test can stop the server and start it
    again at the same address (a server that went away and came back)."""

    def __init__(self, name: str = "live-server") -> None:
        self.name = name
        self.port = 0
        self._running: tuple[uvicorn.Server, threading.Thread, socket.socket] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            "mmw.asgi:application",
            host="127.0.0.1",
            port=self.port,
            lifespan="on",
            proxy_headers=False,  # as every command line ships it: mmw.client_address decides
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=5,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=self.name, daemon=True)
        thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                sock.close()
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.01)
        self._running = (server, thread, sock)

    def stop(self) -> None:
        if self._running is None:
            return
        server, thread, sock = self._running
        self._running = None
        server.should_exit = True
        thread.join(SHUTDOWN_TIMEOUT)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"the {self.name} did not stop")


@pytest.fixture
def live_server(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    # Connections the server's worker threads open are closed after each call (max age 0), so
    # none outlives the test: pytest-django must be able to flush and finally drop the database.
    monkeypatch.setitem(connections.settings[DEFAULT_DB_ALIAS], "CONN_MAX_AGE", 0)
    served = ThreadedServer()
    served.start()
    try:
        yield LiveServer(served.url)
    finally:
        served.stop()


def _auth_headers(key: str | None, headers: dict[str, str] | None) -> dict[str, str]:
    base = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return {**base, **(headers or {})}


async def _with_client(base_url: str, key: str | None, headers: dict[str, str] | None, mode: str, action: Any) -> Any:
    http = create_mcp_http_client(headers=_auth_headers(key, headers))
    async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client:
        return await action(client)


def mcp_call(
    base_url: str,
    key: str | None,
    tool: str,
    args: dict[str, Any] | None,
    headers: dict[str, str] | None = None,
    *,
    mode: str = "auto",
) -> tuple[bool, dict[str, Any] | str]:
    """Call one tool with the official client; return ``(is_error, payload)``.

    ``payload`` is the result's JSON object on success, or the error text
    (``Error executing tool <name>: <message>``) when ``is_error``. ``mode`` is the client's
    protocol negotiation: "auto" (the current protocol) or "legacy" (the initialize handshake).
    """

    async def action(client: Client) -> CallToolResult:
        return await client.call_tool(tool, args)

    result: CallToolResult = anyio.run(_with_client, base_url, key, headers, mode, action)
    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    if result.is_error:
        return True, text
    if result.structured_content is not None:
        return False, dict(result.structured_content)
    return False, json.loads(text)


def mcp_list_tools(base_url: str, key: str | None, *, mode: str = "auto") -> list[Tool]:
    """The server's tool listing, as the SDK's ``Tool`` models."""

    async def action(client: Client) -> list[Tool]:
        return list((await client.list_tools()).tools)

    tools: list[Tool] = anyio.run(_with_client, base_url, key, None, mode, action)
    return tools


def rest(
    base_url: str,
    key: str | None,
    method: str,
    path: str,
    json: Any = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """One REST request, e.g. ``rest(url, key, "POST", "/api/v1/memories", json={...})``."""
    return httpx.request(method, f"{base_url}{path}", json=json, headers=_auth_headers(key, headers), timeout=30.0)
