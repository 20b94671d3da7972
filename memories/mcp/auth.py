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

from collections.abc import MutableMapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from pydantic import Field, InstanceOf
from starlette.requests import HTTPConnection

from accounts.keys import Principal, bearer_token, resolve_key
from memories.mcp.threads import run_sync


class PrincipalToken(AccessToken):
    """The SDK's access token, carrying the verified principal (never serialised or shown)."""

    principal: InstanceOf[Principal] = Field(exclude=True, repr=False)


class ApiKeyVerifier:
    """``mcp.server.auth.provider.TokenVerifier`` over MMW API keys."""

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = await run_sync(resolve_key, token)
        if principal is None:
            return None
        key = principal.api_key
        return PrincipalToken(
            token=token,
            # Identifies the credential (not the secret) for the SDK's per-principal bookkeeping.
            client_id=f"mmw_{key.prefix}" if key is not None else f"user:{principal.user.pk}",
            subject=str(principal.user.pk),
            scopes=sorted(principal.scopes),
            principal=principal,
        )


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
