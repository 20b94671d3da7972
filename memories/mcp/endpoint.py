"""The ``/mcp`` ASGI endpoint: the SDK's streamable-HTTP app, stateless, JSON responses.

Stateless means every POST stands alone (no ``Mcp-Session-Id``, no server-side session), so any
number of web processes can serve it behind a load balancer; JSON means each POST is answered
with one ``application/json`` body instead of an SSE stream. Nothing else is served here: a
GET (the optional server-to-client SSE stream, pointless without sessions) or DELETE (session
end) answers 405 before authentication.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memories.mcp import descriptions
from memories.mcp.auth import ApiKeyVerifier, with_canonical_authorization
from memories.mcp.tools import build_tools
from memories.presenters import API_VERSION

MCP_PATH = "/mcp"


def build_server() -> MCPServer:
    return MCPServer(
        "mmw",
        title="MMW memory",
        instructions=descriptions.INSTRUCTIONS,
        version=API_VERSION,
        token_verifier=ApiKeyVerifier(),
        # The SDK requires an issuer for bearer auth; with no resource_server_url it publishes no
        # OAuth metadata and the 401's WWW-Authenticate names no authorization server.
        auth=AuthSettings(issuer_url=AnyHttpUrl(settings.PUBLIC_URL), resource_server_url=None),
        tools=build_tools(),
    )


class McpEndpoint:
    """ASGI app for ``/mcp``; ``running()`` must wrap its use (the ASGI lifespan does that).

    The SDK's session manager can run only once, so each ``running()`` builds a fresh
    Starlette app and session manager around the same tools; the same ASGI application can then
    be served again after a shutdown (tests start a server per test).
    """

    def __init__(self) -> None:
        self._server = build_server()
        self._app: ASGIApp | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        app = self._server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            json_response=True,
            stateless_http=True,
            # Host checking is done in __call__ against Django's ALLOWED_HOSTS (the SDK's own
            # check would otherwise default to localhost-only and refuse the public host name).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with self._server.session_manager.run():
            self._app = app
            try:
                yield
            finally:
                self._app = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await PlainTextResponse("Method Not Allowed", status_code=405, headers={"Allow": "POST"})(
                scope, receive, send
            )
            return
        if not _host_allowed(Headers(scope=scope)):
            await PlainTextResponse("Bad Request", status_code=400)(scope, receive, send)
            return
        if self._app is None:
            raise RuntimeError("the MCP endpoint is not running: serve the app with the ASGI lifespan on")
        # "/mcp" and "/mcp/" are the same endpoint: no redirect for clients to follow.
        scope = with_canonical_authorization(scope)
        await self._app({**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}, receive, send)


def _host_allowed(headers: Headers) -> bool:
    """Django's ALLOWED_HOSTS rule, which Django itself cannot apply here (it never sees /mcp)."""
    host = headers.get("x-forwarded-host") if settings.USE_X_FORWARDED_HOST else None
    domain, _ = split_domain_port(host or headers.get("host", ""))
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)
