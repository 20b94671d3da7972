"""Every OAuth parameter is bounded before the database or an outbound fetch sees it (issue #35):
lengths, NUL and control characters, RFC 7636's alphabet for PKCE values, a parameter sent
twice. Each out-of-bounds value gets a 4xx naming the rule — at /oauth/authorize a 400 before
the redirect URI is trusted, an ``invalid_request`` redirect after — never ``server_error``."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from mmw.errors import InvalidInput
from oauth import inputs, provider, services
from oauth.models import Client, PendingAuthorization
from tests import live
from tests.live import LiveServer
from tests.oauth import grants
from tests.oauth.test_flows import REDIRECT, authorize, pkce, register

live_server = live.live_server

UNRESERVED_43 = "aZ09-._~" * 5 + "abc"


def _query(location: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(location).query)


# --- the declarations ----------------------------------------------------------------------------


@pytest.mark.parametrize("param", inputs.ALL, ids=lambda p: p.name)
def test_every_declared_parameter_refuses_nul_and_one_character_too_many(param: inputs.Param) -> None:
    fits = "a" * param.max_length
    assert inputs.problem(param, fits) is None
    assert inputs.problem(param, fits + "a") == param.rule
    assert inputs.problem(param, "a" * max(param.min_length, 1) + "\x00") == param.rule
    assert inputs.problem(param, "a" * max(param.min_length, 1) + "\n") == param.rule


@pytest.mark.parametrize("param", [inputs.CODE_CHALLENGE, inputs.CODE_VERIFIER], ids=lambda p: p.name)
def test_pkce_values_are_43_to_128_unreserved_characters(param: inputs.Param) -> None:
    assert inputs.problem(param, UNRESERVED_43) is None
    assert inputs.problem(param, UNRESERVED_43[:-1]) == param.rule
    for outside in ("+", "/", "=", " ", "é"):
        assert inputs.problem(param, UNRESERVED_43[:-1] + outside) == param.rule, outside
    assert param.rule == f"{param.name} must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)"


def test_state_is_any_visible_ascii_up_to_500_characters() -> None:
    assert inputs.problem(inputs.STATE, "".join(chr(c) for c in range(0x20, 0x7F))) is None
    assert inputs.problem(inputs.STATE, "é") == "state must be at most 500 visible ASCII characters"


# --- the services: the last line before the database ---------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("state", "s" * 501, "state must be at most 500 visible ASCII characters"),
        ("state", "st\x00", "state must be at most 500 visible ASCII characters"),
        ("code_challenge", "c" * 501, inputs.CODE_CHALLENGE.rule),
        ("code_challenge", "c" * 42 + "\x00", inputs.CODE_CHALLENGE.rule),
    ],
)
def test_a_parked_request_refuses_an_out_of_bounds_state_or_challenge(field: str, value: str, message: str) -> None:
    params: dict[str, Any] = {"state": "st-1", "code_challenge": "c" * 43, field: value}
    with pytest.raises(InvalidInput) as refused:
        services.authorization_begin(
            client=grants.client(), redirect_uri=REDIRECT, redirect_uri_explicit=True, scopes=None,
            resource=grants.RESOURCE, **params,
        )  # fmt: skip
    assert (refused.value.message, refused.value.code) == (message, "invalid_request")
    assert not PendingAuthorization.objects.exists()


@pytest.mark.parametrize(
    ("uri", "refusal"),
    [
        ("https://[::1/cb", "redirect URI is not a valid URI: https://[::1/cb"),
        ("https://app.example/c\x00b", "redirect URI must not contain control or bidi characters"),
        ("https://app.example/c\nb", "redirect URI must not contain control or bidi characters"),
    ],
)
def test_a_redirect_uri_that_cannot_be_parsed_or_stored_is_refused_not_raised(uri: str, refusal: str) -> None:
    assert services.redirect_uri_refusal(uri) == refusal


@pytest.mark.django_db
@pytest.mark.parametrize("client_uri", ["https://app.example/\x00", "javascript:alert(1)", "https://"])
def test_a_client_uri_must_be_a_printable_http_url(client_uri: str) -> None:
    """A client metadata document's ``client_uri`` is not parsed by the registration handler:
    the service refuses what it could not store or show as a link."""
    info = services.ClientInput(
        client_id="https://app.example/client.json", client_name="Doc", redirect_uris=[REDIRECT],
        grant_types=["authorization_code"], token_endpoint_auth_method="none", scope="",
        client_uri=client_uri, client_secret=None,
    )  # fmt: skip
    with pytest.raises(InvalidInput, match="client_uri must be an http or https URL of at most 2000 printable"):
        services.client_register(info=info)
    assert not Client.objects.exists()


# --- the routes ----------------------------------------------------------------------------------


@pytest.fixture
def public_url(settings: Any, live_server: LiveServer) -> str:
    settings.PUBLIC_URL = live_server.url
    return live_server.url


@pytest.mark.parametrize("state", ["s" * 501, "st\x00", "st\u202e"], ids=["501-characters", "nul", "bidi"])
def test_an_out_of_bounds_state_is_answered_400_and_not_redirected(public_url: str, state: str) -> None:
    client = register(public_url)
    _, challenge = pkce()
    response = authorize(public_url, client["client_id"], challenge, state=state)
    assert response.status_code == 400, response.headers.get("location")
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "state must be at most 500 visible ASCII characters",
    }
    assert not PendingAuthorization.objects.exists()


@pytest.mark.parametrize(
    "challenge", ["c" * 501, "c" * 43 + "\x00", "c" * 42, "c" * 42 + "+"], ids=["501", "nul", "42", "plus"]
)
def test_an_out_of_bounds_code_challenge_goes_back_to_the_client_as_invalid_request(
    public_url: str, challenge: str
) -> None:
    client = register(public_url)
    response = authorize(public_url, client["client_id"], challenge)
    assert response.status_code == 302
    assert response.headers["location"].startswith(REDIRECT + "?")
    assert _query(response.headers["location"]) == {
        "error": ["invalid_request"],
        "error_description": [inputs.CODE_CHALLENGE.rule],
        "state": ["st-1"],
        "iss": [public_url],
    }
    assert not PendingAuthorization.objects.exists()


@pytest.mark.parametrize("client_id", ["client\x00id", "c" * 501], ids=["nul", "501-characters"])
def test_an_out_of_bounds_client_id_is_answered_400_at_authorize(public_url: str, client_id: str) -> None:
    _, challenge = pkce()
    response = authorize(public_url, client_id, challenge)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "client_id must be at most 500 visible ASCII characters",
    }


def test_a_parameter_sent_twice_is_refused_at_authorize(public_url: str) -> None:
    client = register(public_url)
    _, challenge = pkce()
    query = httpx.QueryParams(
        [("response_type", "code"), ("client_id", client["client_id"]), ("redirect_uri", REDIRECT),
         ("code_challenge", challenge), ("state", "one"), ("state", "two")]
    )  # fmt: skip
    response = httpx.get(f"{public_url}/oauth/authorize", params=query)
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": "state must be sent once"}


def token_request(url: str, **form: str) -> httpx.Response:
    return httpx.post(f"{url}/oauth/token", data=form)


@pytest.mark.parametrize(
    ("form", "description"),
    [
        ({"grant_type": "authorization_code", "code": "mmwac_\x00", "code_verifier": UNRESERVED_43},
         "code must be at most 200 visible ASCII characters"),
        ({"grant_type": "authorization_code", "code": "c" * 201, "code_verifier": UNRESERVED_43},
         "code must be at most 200 visible ASCII characters"),
        ({"grant_type": "authorization_code", "code": "mmwac_x", "code_verifier": "v" * 42},
         inputs.CODE_VERIFIER.rule),
        ({"grant_type": "authorization_code", "code": "mmwac_x", "code_verifier": UNRESERVED_43,
          "redirect_uri": REDIRECT + "\x00"},
         "redirect_uri must be at most 2000 printable characters"),
        ({"grant_type": "refresh_token", "refresh_token": "r" * 201},
         "refresh_token must be at most 200 visible ASCII characters"),
        ({"grant_type": "refresh_token", "refresh_token": "mmwrt_x", "scope": "memory:read\x00"},
         "scope must be at most 500 characters: scope names separated by spaces"),
    ],
    ids=["code-nul", "code-201", "verifier-42", "redirect-nul", "refresh-201", "scope-nul"],
)  # fmt: skip
def test_the_token_endpoint_refuses_out_of_bounds_parameters(
    public_url: str, form: dict[str, str], description: str
) -> None:
    client = register(public_url)
    response = token_request(public_url, client_id=client["client_id"], **form)
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": description}


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
def test_an_out_of_bounds_client_id_is_invalid_client_at_token_and_revoke(public_url: str, path: str) -> None:
    form = {"grant_type": "refresh_token", "refresh_token": "mmwrt_x", "token": "mmwrt_x", "client_id": "a\x00b"}
    response = httpx.post(f"{public_url}{path}", data=form)
    assert response.status_code == 401
    assert response.json() == {
        "error": "invalid_client",
        "error_description": "client_id must be at most 500 visible ASCII characters",
    }


@pytest.mark.parametrize("token", ["t" * 201, "mmwrt_\x00"], ids=["201-characters", "nul"])
def test_revoking_a_token_no_server_could_have_issued_answers_200(public_url: str, token: str) -> None:
    """RFC 7009 §2.2: an invalid token is not an error for the revocation endpoint."""
    client = register(public_url)
    response = httpx.post(f"{public_url}/oauth/revoke", data={"client_id": client["client_id"], "token": token})
    assert response.status_code == 200


def test_an_out_of_bounds_bearer_token_on_mcp_is_401(public_url: str) -> None:
    response = httpx.post(
        f"{public_url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream", "Authorization": "Bearer mmwat_" + "x" * 300},
    )
    assert response.status_code == 401


# --- client ID URLs (their parsing is the outbound guard's; these are the routes' answers) --------


@pytest.mark.parametrize(
    "client_id",
    [f"https://{'a' * 64}.example.com/x", "https://a..example.com/x"],
    ids=["64-character-label", "empty-label"],
)
def test_a_malformed_client_id_url_is_answered_400_at_authorize(public_url: str, client_id: str) -> None:
    _, challenge = pkce()
    response = authorize(public_url, client_id, challenge)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
def test_an_unparseable_client_id_url_is_invalid_client_at_token_and_revoke(public_url: str, path: str) -> None:
    form = {
        "grant_type": "refresh_token",
        "refresh_token": "mmwrt_x",
        "token": "mmwrt_x",
        "client_id": "https://[::1/x",
    }
    response = httpx.post(f"{public_url}{path}", data=form)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("path", "form", "name"),
    [
        ("/oauth/token", [("grant_type", "refresh_token"), ("refresh_token", "a"), ("refresh_token", "b")],
         "refresh_token"),
        ("/oauth/token", [("grant_type", "refresh_token"), ("refresh_token", "a"), ("resource", "x"), ("resource", "y")],
         "resource"),
        ("/oauth/revoke", [("token", "a"), ("token", "b")], "token"),
    ],
    ids=["token-refresh-token", "token-resource", "revoke-token"],
)  # fmt: skip
def test_a_parameter_sent_twice_is_refused_at_token_and_revoke(
    public_url: str, path: str, form: list[tuple[str, str]], name: str
) -> None:
    client = register(public_url)
    content = httpx.QueryParams([("client_id", client["client_id"]), *form])
    response = httpx.post(
        f"{public_url}{path}", content=str(content), headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": f"{name} must be sent once"}


def test_every_bound_is_on_the_reference_pages() -> None:
    errors = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "errors.md").read_text()
    for param in inputs.ALL:
        if param is not inputs.TOKEN and param is not inputs.ACCESS_TOKEN:  # never answered: 200 / 401
            assert f"`{param.rule}`" in errors, param.rule
    assert "`<name> must be sent once`" in errors


# --- a sweep: no value of any parameter is a 500 or a server_error ------------------------------

NASTY = ["x" * 5000, "a\x00b", "é\u202e", "", "\r\n", "%00"]


def _authorize_failures(url: str, client_id: str) -> list[str]:
    _, challenge = pkce()
    base = {
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
        "code_challenge_method": "S256", "state": "st", "resource": f"{url}/mcp", "scope": "memory:read",
    }  # fmt: skip
    failures = []
    for name in base:
        for value in NASTY:
            for answer in (
                httpx.get(f"{url}/oauth/authorize", params={**base, name: value}),
                httpx.post(f"{url}/oauth/authorize", data={**base, name: value}),
            ):
                if answer.status_code >= 500 or "server_error" in answer.headers.get("location", ""):
                    failures.append(f"authorize {answer.request.method} {name}={value[:12]!r}: {answer.status_code}")
    return failures


def _token_and_revoke_failures(url: str, client_id: str) -> list[str]:
    base = {
        "client_id": client_id, "code": "mmwac_x", "code_verifier": UNRESERVED_43, "redirect_uri": REDIRECT,
        "resource": f"{url}/mcp", "refresh_token": "mmwrt_x", "scope": "memory:read", "client_secret": "s",
        "token": "mmwrt_x",
    }  # fmt: skip
    failures = []
    for grant_type in ("authorization_code", "refresh_token"):
        for name in base:
            for value in NASTY:
                form = {**base, "grant_type": grant_type, name: value}
                for path in ("/oauth/token", "/oauth/revoke"):
                    answer = httpx.post(f"{url}{path}", data=form)
                    if answer.status_code >= 500:
                        failures.append(f"{path} {grant_type} {name}={value[:12]!r}: {answer.status_code}")
    return failures


def test_no_parameter_value_is_answered_500_or_server_error(public_url: str) -> None:
    client = register(public_url)
    failures = _authorize_failures(public_url, client["client_id"])
    failures += _token_and_revoke_failures(public_url, client["client_id"])
    assert failures == []


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
def test_a_public_client_sending_a_client_secret_is_invalid_client(public_url: str, path: str) -> None:
    client = register(public_url)  # token_endpoint_auth_method none: it has no secret to check
    form = {"grant_type": "refresh_token", "refresh_token": "mmwrt_x", "token": "mmwrt_x"}
    response = httpx.post(f"{public_url}{path}", data={**form, "client_id": client["client_id"], "client_secret": "s"})
    assert response.status_code == 401
    assert response.json() == {"error": "invalid_client", "error_description": provider.PUBLIC_CLIENT_SECRET}
    without = httpx.post(f"{public_url}{path}", data={**form, "client_id": client["client_id"], "client_secret": ""})
    assert without.status_code != 401  # an empty field is no secret (some libraries always send it)


@pytest.mark.parametrize(
    ("path", "body", "description"),
    [
        ("/oauth/register", b'{"client_name": "' + b"x" * 17_000 + b'"}', "request body exceeds 16 KB"),
        ("/oauth/token", b"grant_type=refresh_token&refresh_token=" + b"x" * 66_000, "request body exceeds 64 KB"),
        ("/oauth/revoke", b"token=" + b"x" * 66_000, "request body exceeds 64 KB"),
    ],
    ids=["register", "token", "revoke"],
)
def test_a_body_over_the_bound_is_an_oauth_json_413(public_url: str, path: str, body: bytes, description: str) -> None:
    kind = "application/json" if path.endswith("register") else "application/x-www-form-urlencoded"
    response = httpx.post(f"{public_url}{path}", content=body, headers={"Content-Type": kind})
    assert response.status_code == 413
    assert response.json() == {"error": "invalid_request", "error_description": description}
