"""The token endpoint's audience and the registration answer (issue #35): ``/oauth/token``
refuses a ``resource`` other than ``<public>/mcp`` with ``invalid_target`` (RFC 8707 §2), and
``POST /oauth/register`` answers only the metadata MMW stored (RFC 7591 §3.2.1) — unsupported
grant and response types are dropped and not echoed, unstored fields are not echoed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mmw.errors import InvalidInput
from oauth import services
from oauth.models import Client
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer
from tests.oauth.test_flows import REDIRECT, consent, pkce, register

live_server = live.live_server

EVIL = "https://evil.example/mcp"


@pytest.fixture
def public_url(settings: Any, live_server: LiveServer) -> str:
    settings.PUBLIC_URL = live_server.url
    return live_server.url


def code_request(url: str, client_id: str, code: str, verifier: str, resource: str) -> httpx.Response:
    form = {
        "grant_type": "authorization_code", "client_id": client_id, "code": code, "code_verifier": verifier,
        "redirect_uri": REDIRECT, "resource": resource,
    }  # fmt: skip
    return httpx.post(f"{url}/oauth/token", data=form)


def test_the_token_endpoint_refuses_another_resource_with_invalid_target(public_url: str, tenancy: Tenancy) -> None:
    client = register(public_url)
    verifier, challenge = pkce()
    code = consent(public_url, tenancy, client["client_id"], challenge, ["memory:read"])
    refused = code_request(public_url, client["client_id"], code, verifier, EVIL)
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "invalid_target",
        "error_description": f"this server issues tokens only for {public_url}/mcp",
    }
    granted = code_request(public_url, client["client_id"], code, verifier, f"{public_url}/mcp")
    assert granted.status_code == 200, granted.text  # the refusal did not spend the code
    form = {"grant_type": "refresh_token", "client_id": client["client_id"], "resource": EVIL}
    refresh = httpx.post(f"{public_url}/oauth/token", data={**form, "refresh_token": granted.json()["refresh_token"]})
    assert refresh.status_code == 400
    assert refresh.json()["error"] == "invalid_target"


def test_registration_answers_only_the_grant_and_response_types_it_stored(public_url: str) -> None:
    answer = register(
        public_url,
        grant_types=["authorization_code", "refresh_token", "implicit", "password"],
        response_types=["code", "token"],
    )
    stored = Client.objects.get(client_id=answer["client_id"])
    assert stored.grant_types == ["authorization_code", "refresh_token"]
    assert answer["grant_types"] == ["authorization_code", "refresh_token"]
    assert answer["response_types"] == ["code"]


def test_registration_answers_the_stored_values_and_no_field_it_did_not_store(public_url: str) -> None:
    answer = register(
        public_url,
        client_name="  Spaced Assistant  ",
        scope="memory:read",
        client_uri="https://app.example/",
        logo_uri="https://app.example/logo.png",
        contacts=["ops@app.example"],
        software_id="app",
        token_endpoint_auth_method="client_secret_basic",
    )
    stored = Client.objects.get(client_id=answer["client_id"])
    assert answer == {
        "client_id": stored.client_id,
        "client_id_issued_at": int(stored.created_at.timestamp()),
        "client_secret": answer["client_secret"],
        "client_secret_expires_at": 0,
        "client_name": "Spaced Assistant",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
        "scope": "memory:read",
        "client_uri": "https://app.example/",
    }
    assert stored.secret_digest == services.digest(answer["client_secret"])  # the secret answered is the one stored


def test_a_public_client_is_answered_without_a_secret(public_url: str) -> None:
    answer = register(public_url)
    assert "client_secret" not in answer
    assert "client_secret_expires_at" not in answer
    assert "client_uri" not in answer
    assert answer["token_endpoint_auth_method"] == "none"
    assert answer["scope"] == "memory:read memory:write"


@pytest.mark.django_db
def test_a_client_without_the_code_grant_is_refused_not_stored_empty() -> None:
    """Registration's handler refuses it already; a client metadata document goes through the
    same service, which would otherwise store no grant type at all."""
    info = services.ClientInput(
        client_id="https://app.example/client.json", client_name="Doc", redirect_uris=[REDIRECT],
        grant_types=["client_credentials"], token_endpoint_auth_method="none", scope="", client_uri="",
        client_secret=None,
    )  # fmt: skip
    with pytest.raises(InvalidInput, match=r"^grant_types must include authorization_code$"):
        services.client_register(info=info)
    assert not Client.objects.exists()
