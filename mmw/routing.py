"""The outer ASGI router: ``/mcp`` goes to the MCP SDK's app, the OAuth endpoints and metadata
(``oauth.endpoints.PATHS``) to the SDK's OAuth handlers, everything else to Django.

Both surfaces sit inside ``mmw.boundary.Boundary`` (``/api/`` and ``/mcp``): bounded bodies and
JSON error answers only. It also answers the ASGI lifespan (Django does not speak it): startup enters the MCP session
manager, shutdown leaves it. Serve with the lifespan on (``uvicorn --lifespan on``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

from django.conf import settings

from interfaces.mcp_server.endpoint import MCP_PATH, McpEndpoint
from mmw.boundary import Boundary, bounded_pages
from mmw.client_address import ClientAddress
from oauth import endpoints as oauth_endpoints

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
LifespanContext = Callable[[], AbstractAsyncContextManager[None]]

MCP_PATHS = frozenset({MCP_PATH, f"{MCP_PATH}/"})

logger = logging.getLogger(__name__)


def build_application(django_app: Any) -> ASGIApp:
    """Return the ASGI app: the MCP endpoint at ``/mcp`` (and ``/mcp/``), Django for the rest,
    inside ``ClientAddress`` (every surface sees the same client address)."""
    mcp = McpEndpoint()
    oauth = oauth_endpoints.build_router()
    pages = bounded_pages(django_app)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send, [mcp.running])
            return
        if scope["type"] == "http" and scope["path"] in MCP_PATHS:
            await mcp(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] in oauth_endpoints.PATHS:
            # The SDK's OAuth handlers (form bodies, OAuth's own JSON errors): outside the API
            # boundary's JSON-only contract, bounded by their own body limits.
            await oauth(scope, receive, send)
            return
        if surface_of(scope.get("path", "")) == "api":
            await django_app(scope, receive, send)  # bounded by the Boundary below
            return
        await pages(scope, receive, send)

    bounded = Boundary(
        route,
        surface_of,
        max_in_flight=settings.MAX_REQUESTS_IN_FLIGHT,
        admission_wait=settings.ADMISSION_TIMEOUT,
        deadline=settings.REQUEST_DEADLINE,
        bulk_paths=BULK_PATHS,
    )
    return ClientAddress(bounded)


# POST /api/v1/memories/batch and /api/v1/import (with or without the trailing slash the routes accept).
BULK_PATHS = frozenset({"/api/v1/memories/batch", "/api/v1/memories/batch/", "/api/v1/import", "/api/v1/import/"})


def surface_of(path: str) -> str | None:
    """Which API surface a path belongs to ("mcp", "api"), or None for pages and /healthz."""
    if path in MCP_PATHS:
        return "mcp"
    if path.startswith("/api/"):
        return "api"
    return None


async def _lifespan(receive: Receive, send: Send, contexts: Sequence[LifespanContext]) -> None:
    """Enter ``contexts`` on startup and leave them on shutdown, in this one task (the SDK's
    session manager holds an anyio task group, which must be exited where it was entered)."""
    message = await receive()
    assert message["type"] == "lifespan.startup", message
    stack = AsyncExitStack()
    try:
        for context in contexts:
            await stack.enter_async_context(context())
    except Exception as exc:
        logger.exception("ASGI startup failed")
        await stack.aclose()
        await send({"type": "lifespan.startup.failed", "message": repr(exc)})
        return
    await send({"type": "lifespan.startup.complete"})
    message = await receive()
    assert message["type"] == "lifespan.shutdown", message
    try:
        await stack.aclose()
    except Exception as exc:
        logger.exception("ASGI shutdown failed")
        await send({"type": "lifespan.shutdown.failed", "message": repr(exc)})
        return
    await send({"type": "lifespan.shutdown.complete"})
