"""The ``/mcp`` ASGI endpoint: the SDK's streamable-HTTP app, stateless, JSON responses.

Stateless means every POST stands alone (no ``Mcp-Session-Id``, no server-side session), so any
number of web processes can serve it behind a load balancer; JSON means each POST is answered
with one ``application/json`` body instead of an SSE stream. Nothing else is served here: a
GET (the optional server-to-client SSE stream, pointless without sessions) or DELETE (session
end) answers 405 before authentication.

Two eras of the protocol share the endpoint (``SERVED_REVISIONS``): revision 2026-07-28, where
each request carries its version, client capabilities and credentials (``params._meta``, the
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` headers, ``Authorization``), and the
earlier revisions, opened by the ``initialize`` handshake. The SDK routes a request by its
``MCP-Protocol-Version`` header; what the tools and resources do is the same under both.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    DiscoverResult,
    ListResourcesResult,
    ListToolsResult,
    PaginatedRequestParams,
    RequestId,
    RequestParams,
    ResourceTemplate,
    ServerCapabilities,
)
from mcp_types import Tool as MCPTool
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from interfaces.mcp import Listing, Resources, registered_resources
from interfaces.mcp_server import docs
from interfaces.mcp_server.auth import (
    ApiKeyVerifier,
    AudienceBoundBackend,
    BearerGate,
    principal_of,
    read_body,
    with_canonical_authorization,
)
from interfaces.mcp_server.instructions import INSTRUCTIONS
from interfaces.mcp_server.tools import build_tools, scope_of_tool, tools_for
from interfaces.threads import run_sync
from memories.presenters import API_VERSION
from mmw.errors import MMWError, NotFound

MCP_PATH = "/mcp"
T = TypeVar("T")

# The protocol revisions /mcp serves, newest first: the version check admits exactly these, its
# refusal lists them, and server/discover names them. 2026-07-28 is served request by request
# (stateless); the others through the initialize handshake. Named here rather than taken from the
# SDK, so a new SDK release serves a new revision only once it is added here (and the SDK still
# serving each of them is tested).
STATELESS_REVISIONS = ("2026-07-28",)
HANDSHAKE_REVISIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVED_REVISIONS = (*STATELESS_REVISIONS, *HANDSHAKE_REVISIONS)

# Caching hints on the 2026-07-28 results that carry them (the earlier revisions' results have no
# such fields). Discovery and the resource templates are the same for every caller and change
# only with a release: anyone may share them for five minutes. The tool listing depends on the
# caller's scopes (fixed for a key or a token): private, five minutes. Records change at any
# moment: a listing or a read is stale at once.
CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    "server/discover": CacheHint(ttl_ms=300_000, scope="public"),
    "resources/templates/list": CacheHint(ttl_ms=300_000, scope="public"),
    "tools/list": CacheHint(ttl_ms=300_000, scope="private"),
    "resources/list": CacheHint(ttl_ms=0, scope="private"),
    "resources/read": CacheHint(ttl_ms=0, scope="private"),
}

# Methods the SDK's MCPServer always registers, although MMW serves no prompts: a registered
# handler makes the server advertise the capability, so these are taken out (lifecycle spec:
# advertise only what is served; a client asking anyway gets -32601 "method not found").
UNSERVED_METHODS = ("prompts/list", "prompts/get")


class MmwServer(MCPServer):
    """The SDK's server with the tools spec's error rule: an unknown tool name is a JSON-RPC
    error (-32602 invalid params), not a tool result with ``isError`` (which is for a tool that
    ran and failed); tools listed per caller (only those its scopes let it call:
    ``tools.tools_for``; every tool stays callable, so one left out answers its documented 403);
    the apps' resources (``interfaces.mcp.registered_resources``: memories' records), listed and
    read as the caller (the SDK's own resources are static, registered once); and the reference
    pages the tools name (``docs``).

    ``capabilities`` is what the server offers, set once by ``build_server``: ``initialize``
    and ``server/discover`` both report it."""

    capabilities: ServerCapabilities

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        if self._tool_manager.get_tool(name) is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")
        return await super().call_tool(name, arguments, context)

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=await self.list_tools_for(principal_of(ctx.request).scopes))

    async def list_tools_for(self, scopes: Collection[str]) -> list[MCPTool]:
        """The listing a caller holding ``scopes`` gets (always in the same order)."""
        allowed = tools_for(scopes)
        return [tool for tool in await self.list_tools() if tool.name in allowed]

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        cursor = params.cursor if params is not None else None
        listing = await _as_mcp_error(_list_page, principal_of(ctx.request), cursor)
        return ListResourcesResult(resources=listing.resources, next_cursor=listing.next_cursor)

    async def _handle_discover(self, ctx: ServerRequestContext[Any, Any], params: RequestParams) -> DiscoverResult:
        """``server/discover`` (2026-07-28): the served revisions (every one: a client picks those
        of its era) and the server's capabilities and instructions, as ``initialize`` gives them."""
        return DiscoverResult(
            supported_versions=list(SERVED_REVISIONS),
            capabilities=self.capabilities,
            instructions=self.instructions,
        )

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return [*(r.template for r in registered_resources()), docs.DOCS_TEMPLATE]

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> list[ReadResourceContents]:
        if docs.is_doc(str(uri)):
            try:
                page = docs.read_doc(str(uri))
            except NotFound as exc:
                raise ResourceNotFoundError(exc.message) from None
            return [ReadResourceContents(content=page, mime_type=docs.DOCS_MIME_TYPE)]
        request = context.request_context.request if context is not None else None
        owner = _owner_of(str(uri))
        text = await _as_mcp_error(owner.read, principal_of(request), str(uri))
        return [ReadResourceContents(content=text, mime_type=owner.mime_type)]


def _owner_of(uri: str) -> Resources:
    """The app whose resources ``uri`` names; any other URI goes to the first (memories' records,
    which answer it "memory not found", as before there were several)."""
    owners = registered_resources()
    return next((r for r in owners if uri.startswith(r.prefix)), owners[0])


def _list_page(principal: Any, cursor: str | None) -> Listing:
    """One page of the caller's resources: the first registered app's (memories' records, a
    workspace at a time; no other app lists resources today)."""
    owners = registered_resources()
    return owners[0].list_page(principal, cursor) if owners else Listing([], None)


async def _as_mcp_error(fn: Callable[..., T], *args: Any) -> T:
    """``fn`` run off the event loop; a domain error becomes a JSON-RPC error with its exact text
    (a record the caller cannot read: -32602, like an unknown resource; others: -32600)."""
    try:
        return await run_sync(fn, *args)
    except NotFound as exc:
        raise ResourceNotFoundError(exc.message) from None
    except MMWError as exc:
        raise MCPError(INVALID_REQUEST, exc.message) from None


def build_server() -> MmwServer:
    """The SDK server with MMW's tools and no auth of its own: ``McpEndpoint`` puts the bearer
    check (keys and OAuth tokens, audience-bound) in front of it (``interfaces.mcp_server.auth``)."""
    server = MmwServer(
        "mmw",
        title="MMW memory",
        instructions=INSTRUCTIONS,
        version=API_VERSION,
        tools=build_tools(),
        cache_hints=CACHE_HINTS,
        # Nothing is ever pushed to a client (no list-changed notice, no resource update), so
        # subscriptions/listen, the 2026-07-28 stream that would carry them, is not served.
        subscriptions=False,
    )
    lowlevel = server._lowlevel_server
    for method in UNSERVED_METHODS:
        lowlevel._request_handlers.pop(method, None)  # no public way to unregister one
    # The SDK derives capabilities from the registered handlers in two ways: for initialize with
    # every list-changed notice off, for 2026-07-28 from whether subscriptions/listen is served.
    # MMW computes them once, the initialize way, and answers server/discover with them, so the
    # two revisions cannot tell different stories.
    server.capabilities = lowlevel.get_capabilities()
    lowlevel.add_request_handler("server/discover", RequestParams, server._handle_discover)
    return server


def with_authentication(app: ASGIApp) -> ASGIApp:
    """``app`` behind Starlette's authentication (the SDK's bearer backend over MMW's one
    resolver, audience-checked), the SDK's auth context, and ``BearerGate`` (401/403 challenges)."""
    gated = BearerGate(app, scope_of_tool())
    return AuthenticationMiddleware(AuthContextMiddleware(gated), backend=AudienceBoundBackend(ApiKeyVerifier()))


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
            self._app = with_authentication(app)
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
        headers = Headers(scope=scope)
        if not _host_allowed(headers):
            await PlainTextResponse("Bad Request", status_code=400)(scope, receive, send)
            return
        if not _origin_allowed(headers.get("origin")):
            # Transport spec: a present, invalid Origin MUST be answered 403 (DNS rebinding).
            await _refusal(403, f"Origin not allowed: {headers['origin']!r}")(scope, receive, send)
            return
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in SERVED_REVISIONS:
            request_id = _request_id(await read_body(receive))
            await _unsupported_version(version, request_id)(scope, receive, send)
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


def _origin_allowed(origin: str | None) -> bool:
    """An absent Origin is allowed (server-side clients send none); a present one must be an
    http(s) origin whose host passes the same ALLOWED_HOSTS rule as Host, or be listed in
    ``MMW_MCP_ALLOWED_ORIGINS`` (a browser-based client served from elsewhere)."""
    if origin is None:
        return True
    if origin in settings.MMW_MCP_ALLOWED_ORIGINS:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        return False
    domain, _ = split_domain_port(parts.netloc)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def _refusal(
    status: int,
    message: str,
    code: int = -32600,
    data: dict[str, Any] | None = None,
    request_id: RequestId | None = None,
) -> JSONResponse:
    """A JSON-RPC error answered before the SDK sees the request (``id`` null when not known)."""
    error: dict[str, Any] = {"code": code, "message": message, **({"data": data} if data else {})}
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status)


def _request_id(body: bytes) -> RequestId | None:
    """The id of the one JSON-RPC request in ``body`` (a string or an integer), else None (a
    notification, a batch, or not JSON). The body is already bounded in size and depth."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _unsupported_version(version: str, request_id: RequestId | None) -> JSONResponse:
    """400 UnsupportedProtocolVersionError naming the header (the SDK would otherwise blame the
    body's ``params._meta`` for a request of the handshake era) and every revision served."""
    supported = list(SERVED_REVISIONS)
    message = f"Unsupported MCP-Protocol-Version header: {version!r} (supported: {', '.join(supported)})"
    data = {"supported": supported, "requested": version}
    return _refusal(400, message, UNSUPPORTED_PROTOCOL_VERSION, data, request_id)
