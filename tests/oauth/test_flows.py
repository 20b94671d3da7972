"""OAuth 2.1 for /mcp over real HTTP against the live server: metadata, registration, the code
flow with PKCE, tokens on /mcp, rotation, revocation and the refusals docs/oauth.md promises.
The person's consent is given through ``oauth.services`` here; tests/e2e/test_oauth.py drives the
consent page in Chromium with the SDK's own OAuth client."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from oauth import services
from oauth.models import Grant, PendingAuthorization
from oauth.services import GRANTABLE_SCOPES
from orgs.models import Membership
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer

live_server = live.live_server

pytestmark = pytest.mark.slow

REDIRECT = "http://127.0.0.1:9/callback"
JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def _public_url(settings: Any, live_server: LiveServer) -> None:
    settings.PUBLIC_URL = live_server.url


def register(url: str, **extra: Any) -> dict[str, Any]:
    body = {"client_name": "Test Assistant", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **extra}
    response = httpx.post(f"{url}/oauth/register", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize(url: str, client_id: str, challenge: str, **extra: str) -> httpx.Response:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "resource": f"{url}/mcp",
        **extra,
    }
    return httpx.get(f"{url}/oauth/authorize", params=params)


def consent(url: str, tenancy: Tenancy, client_id: str, challenge: str, scopes: list[str]) -> str:
    """Alice approves ``scopes`` (asked for when beyond the memory scopes a client gets unasked)."""
    asked = {} if set(scopes) <= {"memory:read", "memory:write"} else {"scope": " ".join(scopes)}
    response = authorize(url, client_id, challenge, **asked)
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(f"{url}/oauth/consent/")
    pending = PendingAuthorization.objects.get(public_id=location.rsplit("/", 1)[1])
    approved = services.authorization_approve(
        pending=pending, user=tenancy.alice.user, project=tenancy.alice.project, scopes=scopes
    )
    return approved.code


def exchange(url: str, client_id: str, code: str, verifier: str, redirect: str = REDIRECT) -> httpx.Response:
    form = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": redirect,
        "resource": f"{url}/mcp",
    }
    return httpx.post(f"{url}/oauth/token", data=form)


def connect(url: str, tenancy: Tenancy, scopes: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    client = register(url, scope=" ".join(GRANTABLE_SCOPES))
    verifier, challenge = pkce()
    code = consent(url, tenancy, client["client_id"], challenge, scopes or ["memory:read", "memory:write"])
    response = exchange(url, client["client_id"], code, verifier)
    assert response.status_code == 200, response.text
    return client["client_id"], dict(response.json())


def mcp_post(url: str, token: str, method: str, params: dict[str, Any]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(f"{url}/mcp", json=body, headers={**JSON_RPC, "Authorization": f"Bearer {token}"}, timeout=30)


def refresh(url: str, client_id: str, token: str) -> httpx.Response:
    return httpx.post(
        f"{url}/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token}
    )


def test_metadata_documents_name_each_other(live_server: LiveServer) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        resource = httpx.get(f"{live_server}{path}").json()
        assert resource["resource"] == f"{live_server}/mcp"
        assert resource["authorization_servers"] == [live_server.url]
        assert resource["scopes_supported"] == ["memory:read", "memory:write", "ledger:read", "ledger:write"]
    server = httpx.get(f"{live_server}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == live_server.url
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["token_endpoint"] == f"{live_server}/oauth/token"
    assert server["registration_endpoint"] == f"{live_server}/oauth/register"
    assert server["revocation_endpoint"] == f"{live_server}/oauth/revoke"
    assert server["authorization_response_iss_parameter_supported"] is True


def test_401_names_the_resource_metadata_and_scopes(live_server: LiveServer) -> None:
    response = httpx.post(
        f"{live_server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=JSON_RPC
    )
    assert response.status_code == 401
    header = response.headers["WWW-Authenticate"]
    assert f'resource_metadata="{live_server}/.well-known/oauth-protected-resource/mcp"' in header
    assert 'scope="memory:read memory:write"' in header


def test_code_flow_token_calls_tools_as_the_person_with_the_client_as_device(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    _, tokens = connect(live_server, tenancy)
    assert tokens["access_token"].startswith("mmwat_")
    saved = mcp_post(
        live_server, tokens["access_token"], "tools/call", {"name": "remember", "arguments": {"content": "oauth works"}}
    )
    assert saved.status_code == 200, saved.text
    structured = saved.json()["result"]["structuredContent"]
    assert structured["project_id"] == str(tenancy.alice.project.pk)
    found = live.mcp_call(live_server, tenancy.bob.key, "get_memory", {"memory_id": structured["id"]})
    assert found[1]["memory"]["author"]["device_label"] == "Test Assistant"  # type: ignore[index]
    # Stored hashed: the raw token is nowhere in the database.
    assert not Grant.objects.filter(tokens__digest=tokens["access_token"]).exists()
    # REST is not the token's audience.
    assert live.rest(live_server, tokens["access_token"], "GET", "/api/v1/workspaces").status_code == 401


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    client_id, tokens = connect(live_server, tenancy)
    rotated = refresh(live_server, client_id, tokens["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert mcp_post(live_server, fresh["access_token"], "tools/list", {}).status_code == 200
    replay = refresh(live_server, client_id, tokens["refresh_token"])
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert mcp_post(live_server, fresh["access_token"], "tools/list", {}).status_code == 401
    assert refresh(live_server, client_id, fresh["refresh_token"]).status_code == 400


def test_revocation_stops_the_token_at_once(live_server: LiveServer, tenancy: Tenancy) -> None:
    client_id, tokens = connect(live_server, tenancy)
    response = httpx.post(f"{live_server}/oauth/revoke", data={"client_id": client_id, "token": tokens["access_token"]})
    assert response.status_code == 200
    assert mcp_post(live_server, tokens["access_token"], "tools/list", {}).status_code == 401
    assert refresh(live_server, client_id, tokens["refresh_token"]).status_code == 400


def test_a_revoked_grant_and_a_deactivated_member_stop_the_token(live_server: LiveServer, tenancy: Tenancy) -> None:
    _, tokens = connect(live_server, tenancy)
    grant = Grant.objects.get(user=tenancy.alice.user)
    services.grant_revoke(grant=grant, actor=tenancy.alice.user)
    assert mcp_post(live_server, tokens["access_token"], "tools/list", {}).status_code == 401
    _, tokens = connect(live_server, tenancy)
    Membership.objects.filter(user=tenancy.alice.user, account=tenancy.alice.account).update(is_active=False)
    assert mcp_post(live_server, tokens["access_token"], "tools/list", {}).status_code == 401


def test_a_read_only_grant_calling_remember_gets_403_insufficient_scope(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    _, tokens = connect(live_server, tenancy, ["memory:read"])
    response = mcp_post(
        live_server, tokens["access_token"], "tools/call", {"name": "remember", "arguments": {"content": "x"}}
    )
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    assert 'scope="memory:write"' in response.headers["WWW-Authenticate"]
    assert (
        mcp_post(
            live_server, tokens["access_token"], "tools/call", {"name": "list_workspaces", "arguments": {}}
        ).status_code
        == 200
    )


def test_a_token_is_listed_the_tools_of_its_granted_scopes_like_a_key(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    _, read_only = connect(live_server, tenancy, ["memory:read"])
    _, ledger = connect(live_server, tenancy, ["memory:read", "ledger:read", "ledger:write"])
    read_tools = [t.name for t in live.mcp_list_tools(live_server, read_only["access_token"])]
    ledger_tools = [t.name for t in live.mcp_list_tools(live_server, ledger["access_token"])]
    assert "search" in read_tools
    assert not {"remember", "forget", "forget_session"} & set(read_tools)
    assert not any(name.startswith("ledger_") for name in read_tools)
    assert {"ledger_record", "ledger_list", "search"} <= set(ledger_tools)
    assert "remember" not in ledger_tools


def test_a_token_of_any_scope_reads_the_reference_pages_the_tools_name(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    _, ledger = connect(live_server, tenancy, ["ledger:read"])
    token = ledger["access_token"]
    page = mcp_post(live_server, token, "resources/read", {"uri": "mmw://docs/ledger_list"})
    assert page.status_code == 200, page.text
    assert page.json()["result"]["contents"][0]["text"].startswith("# ledger_list")
    record = mcp_post(live_server, token, "resources/read", {"uri": "mmw://memories/0"})
    assert record.status_code == 403
    assert 'scope="memory:read"' in record.headers["WWW-Authenticate"]


def test_a_token_for_another_resource_is_refused(live_server: LiveServer, tenancy: Tenancy) -> None:
    client = register(live_server)
    _, challenge = pkce()
    refused = authorize(live_server, client["client_id"], challenge, resource="https://other.example/mcp")
    assert "error=invalid_target" in refused.headers["location"]
    _, tokens = connect(live_server, tenancy)
    Grant.objects.filter(user=tenancy.alice.user).update(resource="https://other.example/mcp")
    assert mcp_post(live_server, tokens["access_token"], "tools/list", {}).status_code == 401


def test_refusals_wrong_redirect_plain_pkce_reused_code_and_refused_consent(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    client = register(live_server)
    verifier, challenge = pkce()
    wrong = authorize(live_server, client["client_id"], challenge, redirect_uri="http://127.0.0.1:9/other")
    assert wrong.status_code == 400  # never redirected to an unregistered URI
    # PKCE refusals go back to the (registered, matched) redirect URI as RFC 6749 §4.1.2.1 errors
    plain = authorize(live_server, client["client_id"], challenge, code_challenge_method="plain")
    assert plain.status_code == 302
    assert plain.headers["location"].startswith(REDIRECT + "?")
    assert _query(plain.headers["location"]) == {
        "error": ["invalid_request"],
        "error_description": ["code_challenge_method: Input should be 'S256'"],
        "state": ["st-1"],
        "iss": [live_server.url],
    }
    missing = httpx.get(
        f"{live_server}/oauth/authorize",
        params={"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT},
    )
    assert missing.status_code == 302
    assert missing.headers["location"].startswith(REDIRECT + "?")
    assert _query(missing.headers["location"]) == {
        "error": ["invalid_request"],
        "error_description": ["code_challenge: Field required"],
        "iss": [live_server.url],
    }
    assert not PendingAuthorization.objects.exists()  # neither reached the consent page
    code = consent(live_server, tenancy, client["client_id"], challenge, ["memory:read"])
    wrong_verifier, _ = pkce()  # well-formed (RFC 7636), but not the one of the challenge
    assert exchange(live_server, client["client_id"], code, wrong_verifier).json()["error"] == "invalid_grant"
    first = exchange(live_server, client["client_id"], code, verifier)
    assert first.status_code == 200
    again = exchange(live_server, client["client_id"], code, verifier)
    assert again.json()["error"] == "invalid_grant"
    assert mcp_post(live_server, first.json()["access_token"], "tools/list", {}).status_code == 401  # replay revoked it
    # consent refused: the client gets access_denied with its state
    response = authorize(live_server, client["client_id"], challenge)
    pending = PendingAuthorization.objects.get(public_id=response.headers["location"].rsplit("/", 1)[1])
    services.authorization_refuse(pending=pending)
    with pytest.raises(Exception, match="already answered"):
        services.authorization_refuse(pending=pending)


def test_registration_refuses_unsafe_redirects_and_is_rate_limited(live_server: LiveServer, settings: Any) -> None:
    for uri in ("http://example.com/cb", "https://example.com/cb#frag", "myapp:/cb"):
        response = httpx.post(f"{live_server}/oauth/register", json={"client_name": "x", "redirect_uris": [uri]})
        assert response.status_code == 400, uri
    assert register(live_server, redirect_uris=["http://localhost:5000/cb", "https://app.example/cb"])
    settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR = 2
    statuses = [
        httpx.post(f"{live_server}/oauth/register", json={"client_name": "x", "redirect_uris": [REDIRECT]}).status_code
        for _ in range(3)
    ]
    assert statuses[-1] == 429


def test_a_token_for_alices_project_never_reaches_charlies_data(live_server: LiveServer, tenancy: Tenancy) -> None:
    charlie_saved = live.mcp_call(live_server, tenancy.charlie.key, "remember", {"content": "charlie private note"})
    memory_id = charlie_saved[1]["id"]  # type: ignore[index]
    _, tokens = connect(live_server, tenancy)
    response = mcp_post(
        live_server, tokens["access_token"], "tools/call", {"name": "get_memory", "arguments": {"memory_id": memory_id}}
    )
    assert response.json()["result"]["isError"] is True
    search = mcp_post(
        live_server,
        tokens["access_token"],
        "tools/call",
        {"name": "search", "arguments": {"query": "charlie private note"}},
    )
    assert search.json()["result"]["structuredContent"]["results"] == []


def test_a_write_only_grant_reading_resources_gets_403_insufficient_scope(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    _, tokens = connect(live_server, tenancy, ["memory:write"])
    for method, params in (("resources/list", {}), ("resources/read", {"uri": "mmw://memories/x"})):
        response = mcp_post(live_server, tokens["access_token"], method, params)
        assert response.status_code == 403, method
        assert 'scope="memory:read"' in response.headers["WWW-Authenticate"]


def _query(location: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(location).query)


def test_every_authorization_response_names_the_issuer(live_server: LiveServer, tenancy: Tenancy, client: Any) -> None:
    """RFC 9207: ``iss`` on the error redirects of /oauth/authorize and on both answers of the
    consent page (allow and refuse), never on the hop to MMW's own consent page."""
    registered = register(live_server)
    _, challenge = pkce()
    for extra in ({"code_challenge_method": "plain"}, {"resource": "https://other.example/mcp"}):
        refused = authorize(live_server, registered["client_id"], challenge, **extra)
        assert refused.status_code == 302
        query = _query(refused.headers["location"])
        assert query["iss"] == [live_server.url], extra
        assert query["state"] == ["st-1"]
    parked = authorize(live_server, registered["client_id"], challenge)
    assert "iss=" not in parked.headers["location"]
    client.force_login(tenancy.alice.user)
    consent_path = urlsplit(parked.headers["location"]).path
    allowed = client.post(
        consent_path,
        {"decision": "approve", "project": str(tenancy.alice.project.pk), "scopes": ["memory:read"]},
    )
    assert allowed.status_code == 302
    query = _query(allowed["Location"])
    assert query["iss"] == [live_server.url]
    assert query["state"] == ["st-1"]
    assert query["code"][0].startswith("mmwac_")
    parked = authorize(live_server, registered["client_id"], challenge)
    refused_by_person = client.post(urlsplit(parked.headers["location"]).path, {"decision": "refuse"})
    query = _query(refused_by_person["Location"])
    assert query["error"] == ["access_denied"]
    assert query["iss"] == [live_server.url]


LEDGER_ENTRY = {
    "kind": "transaction",
    "amount": "-12.50",
    "currency": "EUR",
    "counterparty": "Cafe",
    "occurred_at": "2026-03-03T10:00:00Z",
    "reference": "oauth-ledger-1",
}


def ledger_connect(url: str, tenancy: Tenancy, asked: str, granted: list[str]) -> str:
    """The access token of a client that asked for ``asked`` scopes and was granted ``granted``."""
    client = register(url, scope=asked)
    verifier, challenge = pkce()
    parked = authorize(url, client["client_id"], challenge, scope=asked)
    pending = PendingAuthorization.objects.get(public_id=parked.headers["location"].rsplit("/", 1)[1])
    assert sorted(pending.scopes) == sorted(asked.split())
    code = services.authorization_approve(
        pending=pending, user=tenancy.alice.user, project=tenancy.alice.project, scopes=granted
    ).code
    response = exchange(url, client["client_id"], code, verifier)
    assert response.status_code == 200, response.text
    assert sorted(response.json()["scope"].split()) == sorted(granted)
    return str(response.json()["access_token"])


def call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> httpx.Response:
    return mcp_post(url, token, "tools/call", {"name": tool, "arguments": arguments})


def test_ledger_scopes_open_the_ledger_tools_and_their_absence_closes_them(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    everything = "memory:read memory:write ledger:read ledger:write"
    ledger = ledger_connect(live_server, tenancy, everything, ["ledger:read", "ledger:write"])
    recorded = call(live_server, ledger, "ledger_record", LEDGER_ENTRY)
    assert recorded.status_code == 200, recorded.text
    assert recorded.json()["result"].get("isError") is not True, recorded.text
    assert recorded.json()["result"]["structuredContent"]["entry"]["amount"] == "-12.50"
    listed = call(live_server, ledger, "ledger_list", {})
    assert [e["reference"] for e in listed.json()["result"]["structuredContent"]["entries"]] == ["oauth-ledger-1"]
    # the same person's memory-only grant reaches no ledger tool: 403 naming the missing scope
    memory = ledger_connect(live_server, tenancy, everything, ["memory:read", "memory:write"])
    for tool, arguments, scope in (
        ("ledger_record", {**LEDGER_ENTRY, "reference": "oauth-ledger-2"}, "ledger:write"),
        ("ledger_list", {}, "ledger:read"),
        ("ledger_balance", {}, "ledger:read"),
    ):
        refused = call(live_server, memory, tool, arguments)
        assert refused.status_code == 403, tool
        assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
        assert f'scope="{scope}"' in refused.headers["WWW-Authenticate"], tool
    # read-only on the ledger: listing yes, recording no
    reader = ledger_connect(live_server, tenancy, "ledger:read", ["ledger:read"])
    assert call(live_server, reader, "ledger_list", {}).status_code == 200
    assert call(live_server, reader, "ledger_record", {**LEDGER_ENTRY, "reference": "x"}).status_code == 403
    # and a ledger-only grant cannot remember
    assert call(live_server, ledger, "remember", {"content": "not for the ledger token"}).status_code == 403
