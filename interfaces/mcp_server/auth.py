"""Bearer-key authentication for ``/mcp``, through the SDK's ``TokenVerifier`` protocol.

The SDK's middleware calls ``ApiKeyVerifier.verify_token`` for every request; a key that
``accounts.keys.resolve_key`` does not accept never reaches a tool (HTTP 401 with a
``WWW-Authenticate: Bearer`` header, answered by the SDK). The SDK parses the ``Authorization``
header itself, more strictly than REST did; ``with_canonical_authorization`` rewrites the header
through MMW's one parser (``accounts.keys.bearer_token``) first, so both surfaces read a header
alike. The verified ``Principal`` travels
inside the SDK's own ``AccessToken`` (``PrincipalToken``), which the SDK stores on the request's
ASGI scope; tools read it back from there with ``principal_of`` — nothing the client sends
besides the key is trusted, and the key is resolved exactly once per HTTP request.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import MutableMapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from pydantic import AnyHttpUrl, Field, InstanceOf
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from accounts.keys import Principal, Refusal, bearer_token, cached_principal, refusal_text, resolve_key_or_refusal
from accounts.models import MEMORY_SCOPES, SCOPE_READ
from interfaces.mcp_server.docs import DOCS_PREFIX
from interfaces.threads import run_sync
from oauth import config


class PrincipalToken(AccessToken):
    """The SDK's access token, carrying the verified principal (never serialised or shown)."""

    principal: InstanceOf[Principal] = Field(exclude=True, repr=False)


class ApiKeyVerifier:
    """``mcp.server.auth.provider.TokenVerifier`` over MMW API keys."""

    async def verify_token(self, token: str) -> AccessToken | None:
        # A key resolved within MMW_KEY_CACHE_SECONDS is answered here, on the event loop; only a
        # key that needs SQL goes to a worker thread (one thread hop less per call: docs/latency.md).
        resolved: Principal | Refusal | None = cached_principal(token)
        if resolved is None:
            resolved = await run_sync(resolve_key_or_refusal, token)
        if not isinstance(resolved, Principal):
            _refusal.set(refusal_text(resolved or Refusal.UNKNOWN))  # the 401 says why, in REST's words (BearerGate)
            return None
        principal = resolved
        key = principal.api_key
        if principal.oauth is not None:
            client_id, resource = f"grant:{principal.oauth.grant_id}", principal.oauth.resource
        else:
            # A key is good for /mcp by definition: its audience is this resource.
            client_id = f"mmw_{key.prefix}" if key is not None else f"user:{principal.user.pk}"
            resource = config.mcp_resource()
        return PrincipalToken(
            token=token,
            # Identifies the credential (not the secret) for the SDK's per-principal bookkeeping.
            client_id=client_id,
            subject=str(principal.user.pk),
            scopes=sorted(principal.scopes),
            resource=resource,
            principal=principal,
        )


# Why the verifier refused this request's key (accounts.refusals' text), set within the request's
# task and carried to BearerGate on the ASGI scope.
_refusal: contextvars.ContextVar[str | None] = contextvars.ContextVar("mmw_key_refusal", default=None)
REFUSAL_SCOPE_KEY = "mmw.key_refusal"


class AudienceBoundBackend(BearerAuthBackend):
    """The SDK's bearer backend, refusing a token whose audience (RFC 8707 resource) is not this
    endpoint as configured now (``oauth.config.mcp_resource``, read per request)."""

    def __init__(self, verifier: ApiKeyVerifier) -> None:
        self.token_verifier = verifier

    async def authenticate(self, conn: HTTPConnection) -> Any:
        reset = _refusal.set(None)
        try:
            result = await super().authenticate(conn)
            if result is None and _refusal.get() is not None:
                conn.scope[REFUSAL_SCOPE_KEY] = _refusal.get()
            return result
        finally:
            _refusal.reset(reset)

    @property
    def resource_server_url(self) -> AnyHttpUrl:  # type: ignore[override]
        return AnyHttpUrl(config.mcp_resource())


# Methods that read records (resources): an OAuth token needs memory:read for them (not to read a
# reference page, ``mmw://docs/<page>``).
READ_METHODS = ("resources/list", "resources/read")


class BearerGate:
    """What the SDK's ``RequireAuthMiddleware`` did, with the MCP authorization spec's headers:

    - no valid bearer → 401 ``WWW-Authenticate: Bearer resource_metadata="…", scope="…"`` (the
      RFC 9728 document a client discovers the authorization server from);
    - an OAuth token calling a tool its scopes do not cover → 403 ``insufficient_scope`` naming
      the scope (RFC 6750 §3.1), before the tool runs. API keys keep their documented tool error
      ("this key may not write") so existing clients see no change.
    """

    def __init__(self, app: ASGIApp, scope_of_tool: dict[str, str]) -> None:
        self.app = app
        self.scope_of_tool = scope_of_tool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        token = user.access_token if isinstance(user, AuthenticatedUser) else None
        if not isinstance(token, PrincipalToken):
            why = scope.get(REFUSAL_SCOPE_KEY) or "Authentication required"  # a refused key: REST's text
            await _challenge(401, "invalid_token", why, " ".join(MEMORY_SCOPES))(scope, receive, send)
            return
        if token.principal.oauth is not None:
            body = await read_body(receive)
            missing = [s for s in self._needed(body) if s not in token.principal.scopes]
            if missing:
                await _challenge(403, "insufficient_scope", f"Required scope: {missing[0]}", missing[0])(
                    scope, receive, send
                )
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _needed(self, body: bytes) -> list[str]:
        try:
            parsed = json.loads(body)
        except ValueError:
            return []  # the SDK answers the parse error
        messages = parsed if isinstance(parsed, list) else [parsed]
        needed: list[str] = []
        for message in messages:
            method = message.get("method") if isinstance(message, dict) else None
            if method == "tools/call":
                params = message.get("params")
                name = params.get("name") if isinstance(params, dict) else None
                if isinstance(name, str) and name in self.scope_of_tool:
                    needed.append(self.scope_of_tool[name])
            elif method in READ_METHODS and not _reads_a_reference_page(message):
                needed.append(SCOPE_READ)
        return needed


def _reads_a_reference_page(message: dict[str, Any]) -> bool:
    """``resources/read`` of ``mmw://docs/<page>``: public text (as ``/docs/`` is), for any token."""
    params = message.get("params")
    uri = params.get("uri") if isinstance(params, dict) else None
    return message.get("method") == "resources/read" and isinstance(uri, str) and uri.startswith(DOCS_PREFIX)


def _challenge(status: int, error: str, description: str, scope: str) -> JSONResponse:
    header = (
        f'Bearer error="{error}", error_description="{description}", '
        f'resource_metadata="{config.resource_metadata_url()}", scope="{scope}"'
    )
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers={"WWW-Authenticate": header})


async def read_body(receive: Receive) -> bytes:
    """The whole request body (already bounded by ``mmw.boundary`` in front of ``/mcp``)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, original: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then waits on the real one (for a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive


def principal_of(request: Any) -> Principal:
    """The principal the verifier attached to this HTTP request (a Starlette ``Request``)."""
    user = request.scope.get("user") if isinstance(request, HTTPConnection) else None
    token = user.access_token if isinstance(user, AuthenticatedUser) else None
    if not isinstance(token, PrincipalToken):
        # The SDK's RequireAuthMiddleware guards the route, so this is a wiring bug, not a client error.
        raise RuntimeError("an MCP tool was called without a verified API key")
    return token.principal


def with_canonical_authorization(scope: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A copy of the ASGI ``scope`` whose ``Authorization`` header is exactly ``Bearer <key>``
    when MMW's parser finds a key in it, and absent otherwise (the SDK then answers 401)."""
    headers: list[tuple[bytes, bytes]] = []
    token: str | None = None
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            token = bearer_token(value.decode("latin-1"))
        else:
            headers.append((name, value))
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode("latin-1")))
    return {**scope, "headers": headers}
