"""Helpers for OAuth tests that need a client, a parked authorization request or a live grant
without a server: everything goes through ``oauth.services``, as the endpoints do."""

from __future__ import annotations

from oauth import services
from oauth.models import Client, Grant, PendingAuthorization
from tests.conftest import Tenancy

REDIRECT = "http://127.0.0.1:9/callback"
RESOURCE = "http://testserver/mcp"


def client(client_id: str = "test-client", name: str = "Helpful Assistant") -> Client:
    return services.client_register(
        info=services.ClientInput(
            client_id=client_id,
            client_name=name,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
            scope="",
            client_uri="",
            client_secret=None,
        )
    )


def pending(of: Client, scopes: list[str] | None = None) -> PendingAuthorization:
    return services.authorization_begin(
        client=of,
        redirect_uri=REDIRECT,
        redirect_uri_explicit=True,
        code_challenge="c" * 43,
        state="st-1",
        scopes=scopes or ["memory:read"],
        resource=RESOURCE,
    )


def connected(tenancy: Tenancy, scopes: list[str] | None = None) -> tuple[Grant, services.IssuedTokens]:
    """Alice connects a new client to her project: the grant and the first token pair."""
    parked = pending(client(), scopes)
    approved = services.authorization_approve(
        pending=parked, user=tenancy.alice.user, project=tenancy.alice.project, scopes=parked.scopes
    )
    code = services.code_find(client_id=parked.client.client_id, raw_code=approved.code)
    assert code is not None
    return approved.grant, services.code_exchange(code=code)
