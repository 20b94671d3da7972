"""The whole OAuth connection as a hosted assistant makes it: the MCP Python SDK's own OAuth client
(``OAuthClientProvider``) against a live server, the person answering the consent page in headless
Chromium, and Dashboard → Connected apps revoking it.

The SDK client runs in a worker thread (its own event loop); it hands the authorization URL to the
test's thread through ``Handoff`` and waits for the redirect the browser was sent to. The client's
redirect URI is a loopback port nothing listens on: the browser's request to it is intercepted and
its URL handed back, as a client's local callback server would receive it.
"""

from __future__ import annotations

import queue
import re
import ssl
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
import httpx
import pytest
from allauth.account.models import EmailAddress
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp_types import LATEST_PROTOCOL_VERSION, CallToolResult
from playwright.sync_api import Browser, Page, Route, expect

from accounts import services as accounts_services
from memories.models import Memory
from oauth.models import Client as OAuthClient
from oauth.models import Grant, Token
from oauth.services import digest
from tests import live
from tests.conftest import Tenancy
from tests.e2e.conftest import shot
from tests.oauth.test_client_metadata import DocServer, _certificates

pytestmark = pytest.mark.slow

# A loopback redirect (RFC 8252 §7.3) on a port nothing serves; Chromium's request is intercepted.
REDIRECT = "http://127.0.0.1:8976/callback"
PASSWORD = "alice-pass-phrase-7"
WAIT = 60.0


@pytest.fixture(autouse=True)
def _public_url(settings: Any, live_server: live.LiveServer) -> None:
    settings.PUBLIC_URL = live_server.url


@dataclass
class Storage(TokenStorage):
    """The client's token store, kept in memory so the test can read what the client holds."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Handoff:
    """Between the SDK client's thread and the browser's: authorization URLs one way, the URL the
    browser was redirected to the other."""

    urls: queue.Queue[str] = field(default_factory=queue.Queue)
    answers: queue.Queue[str] = field(default_factory=queue.Queue)

    async def redirect_handler(self, url: str) -> None:
        self.urls.put(url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        answer = await anyio.to_thread.run_sync(lambda: self.answers.get(timeout=WAIT))
        params = {k: v[0] for k, v in parse_qs(urlsplit(answer).query).items()}
        if "error" in params:
            raise OAuthFlowError(f"authorization refused: {params['error']}")
        # iss (RFC 9207): the SDK client checks it against the issuer it sent the person to
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


Session = Callable[[Client, OAuthClientProvider], Any]


def run_client(base: str, storage: Storage, handoff: Handoff, session: Session, metadata_url: str | None = None) -> Any:
    """Connect to ``/mcp`` with the SDK's OAuth client and run ``session`` in one MCP session;
    with ``metadata_url`` the client identifies itself by that client ID metadata document."""

    async def main() -> Any:
        provider = OAuthClientProvider(
            server_url=f"{base}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="E2E Assistant",
                redirect_uris=[REDIRECT],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="none",
                scope="memory:read memory:write",
            ),
            storage=storage,
            redirect_handler=handoff.redirect_handler,
            callback_handler=handoff.callback_handler,
            client_metadata_url=metadata_url,
        )
        http = create_mcp_http_client(auth=provider)
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            return await session(client, provider)

    return anyio.run(main)


def next_from(items: queue.Queue[Any], client: Future[Any], waiting_for: str) -> Any:
    """The next item the client's thread hands over; fails at once, saying what was awaited, when
    the client finished (or failed) without handing it."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            return items.get(timeout=0.5)
        except queue.Empty:
            if client.done():
                pytest.fail(f"the client stopped before {waiting_for}: {client.result()!r}")
    pytest.fail(f"timed out waiting for {waiting_for}")


def answer_redirects(page: Page) -> None:
    """Answer the browser's request to the client's redirect URI with a small page, as the
    client's local callback server would (the tests read the URL with ``redirected``)."""

    def answer(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html", body="<p>You can close this window.</p>")

    page.route(f"{REDIRECT}**", answer)


def redirected(page: Page, action: Callable[[], None]) -> str:
    """The URL the browser is sent to at the client's redirect URI after ``action``."""
    with page.expect_request(lambda request: request.url.startswith(REDIRECT), timeout=WAIT * 1000) as request:
        action()
    return request.value.url


def log_in(page: Page, email: str) -> None:
    expect(page).to_have_url(re.compile("/accounts/login/"))
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


@pytest.fixture
def alice(tenancy: Tenancy) -> Tenancy:
    """Alice can log in with a password (verified e-mail) and has two projects to choose from."""
    user = tenancy.alice.user
    user.set_password(PASSWORD)
    user.save()
    EmailAddress.objects.update_or_create(user=user, email=user.email, defaults={"verified": True, "primary": True})
    accounts_services.project_get_or_create(account=tenancy.alice.account, name="beta", actor=user)
    return tenancy


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def test_sdk_client_connects_through_the_consent_page_refreshes_and_is_revoked_in_connected_apps(
    browser: Browser, live_server: live.LiveServer, alice: Tenancy
) -> None:
    base = live_server.url
    storage, handoff = Storage(), Handoff()
    seen_tokens: list[str] = []

    async def session(client: Client, provider: OAuthClientProvider) -> dict[str, Any]:
        # the newest revision, by server/discover, not the initialize fallback (mode="auto")
        assert client.protocol_version == LATEST_PROTOCOL_VERSION
        saved = structured(await client.call_tool("remember", {"content": "connected through oauth"}))
        assert storage.tokens is not None
        seen_tokens.append(storage.tokens.refresh_token or "")
        # The access token has run out (as the client sees it): the next call refreshes first.
        provider.context.token_expiry_time = time.time() - 1
        found = structured(await client.call_tool("get_memory", {"memory_id": saved["id"]}))
        return {"saved": saved, "found": found}

    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    answer_redirects(page)
    with ThreadPoolExecutor(1) as pool:
        outcome: Future[Any] = pool.submit(run_client, base, storage, handoff, session)
        authorization_url = handoff.urls.get(timeout=WAIT)
        query = parse_qs(urlsplit(authorization_url).query)
        assert query["code_challenge_method"] == ["S256"]
        assert query["resource"] == [f"{base}/mcp"]

        page.goto(authorization_url)  # /oauth/authorize → consent page → log in first
        log_in(page, "alice@example.com")
        expect(page.get_by_test_id("client-name")).to_have_text("E2E Assistant")
        expect(page.get_by_test_id("redirect-host")).to_have_text("127.0.0.1:8976")
        expect(page.get_by_test_id("self-registered")).to_be_visible()
        shot(page, "oauth-consent")
        page.select_option("#project", label="Alice & Co / beta")
        page.check("input[name=scopes][value='memory:read']")
        page.check("input[name=scopes][value='memory:write']")
        answer = redirected(page, page.get_by_test_id("approve").click)
        handoff.answers.put(answer)
        result = outcome.result(timeout=WAIT)

    assert parse_qs(urlsplit(answer).query)["state"] == query["state"]
    memory = Memory.objects.get(pk=result["saved"]["id"])
    assert memory.project.name == "beta"  # the project the person picked
    assert result["found"]["memory"]["author"]["device_label"] == "E2E Assistant"
    assert storage.tokens is not None
    assert storage.tokens.refresh_token
    assert storage.tokens.refresh_token != seen_tokens[0]  # refreshed, and rotated
    access, refresh = storage.tokens.access_token, storage.tokens.refresh_token
    client_id = storage.client_info.client_id if storage.client_info else ""

    page.goto("/connected-apps/")
    row = page.get_by_test_id("grants").locator("tr", has_text="E2E Assistant")
    expect(row).to_contain_text("Alice & Co / beta")
    expect(row).to_contain_text("memory:write")
    expect(row).not_to_contain_text("never")  # last use is shown
    shot(page, "connected-apps")
    row.get_by_role("button", name="Revoke").click()
    expect(page.get_by_text("E2E Assistant can no longer reach beta.")).to_be_visible()
    expect(page.get_by_text("No connected apps.")).to_be_visible()
    context.close()

    # Revoked at once: the access token and the refresh token are both refused.
    listed = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**{"Accept": "application/json, text/event-stream"}, "Authorization": f"Bearer {access}"},
    )
    assert listed.status_code == 401
    refreshed = httpx.post(
        f"{base}/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id, "refresh_token": refresh}
    )
    assert refreshed.status_code == 400
    assert refreshed.json()["error"] == "invalid_grant"
    assert Grant.objects.get(user=alice.alice.user).revoked_at is not None


def test_a_refused_consent_sends_access_denied_to_the_clients_redirect(
    browser: Browser, live_server: live.LiveServer, alice: Tenancy
) -> None:
    base = live_server.url
    handoff = Handoff()

    async def session(client: Client, provider: OAuthClientProvider) -> None:
        raise AssertionError("the client must not get a session")

    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    answer_redirects(page)
    with ThreadPoolExecutor(1) as pool:
        outcome = pool.submit(run_client, base, Storage(), handoff, session)
        authorization_url = handoff.urls.get(timeout=WAIT)
        page.goto(authorization_url)
        log_in(page, "alice@example.com")
        answer = redirected(page, page.get_by_test_id("refuse").click)
        handoff.answers.put(answer)
        with pytest.raises(ExceptionGroup) as refused:
            outcome.result(timeout=WAIT)
    context.close()

    params = parse_qs(urlsplit(answer).query)
    assert answer.startswith(REDIRECT)
    assert params["error"] == ["access_denied"]
    assert params["state"] == parse_qs(urlsplit(authorization_url).query)["state"]
    assert "code" not in params
    assert refused.group_contains(OAuthFlowError, match="access_denied", depth=None)
    assert not Grant.objects.filter(user=alice.alice.user).exists()


def test_sdk_client_connects_with_a_client_id_metadata_document(
    browser: Browser, live_server: live.LiveServer, alice: Tenancy, tmp_path: Path, settings: Any
) -> None:
    """The same connection without registration: the SDK client sees
    ``client_id_metadata_document_supported`` and uses the https URL of its metadata document
    (served on 127.0.0.1 with a throw-away CA, reached through the test allowances) as client_id."""
    ca, cert, key = _certificates(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    docs = DocServer("127.0.0.1", tls)
    settings.MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MMW_OAUTH_CLIENT_METADATA_CA_FILE = str(ca)
    url = docs.base + "/e2e/client.json"
    docs.document(
        "/e2e/client.json",
        {
            "client_id": url,
            "client_name": "E2E Doc Assistant",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            "scope": "memory:read memory:write",
        },
    )
    base = live_server.url
    storage, handoff = Storage(), Handoff()
    first_stage: queue.Queue[dict[str, Any]] = queue.Queue()
    revoked: queue.Queue[None] = queue.Queue()

    async def session(client: Client, provider: OAuthClientProvider) -> Any:
        saved = structured(await client.call_tool("remember", {"content": "connected by metadata document"}))
        assert storage.tokens is not None
        before = storage.tokens.refresh_token
        provider.context.token_expiry_time = time.time() - 1  # the next call refreshes first
        found = structured(await client.call_tool("get_memory", {"memory_id": saved["id"]}))
        first_stage.put({"found": found, "refresh_before": before, "tokens": storage.tokens})
        await anyio.to_thread.run_sync(lambda: revoked.get(timeout=WAIT))  # the person revokes it
        return await client.call_tool("get_memory", {"memory_id": saved["id"]})

    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    answer_redirects(page)
    try:
        with ThreadPoolExecutor(1) as pool:
            outcome: Future[Any] = pool.submit(run_client, base, storage, handoff, session, url)
            authorization_url = handoff.urls.get(timeout=WAIT)
            assert parse_qs(urlsplit(authorization_url).query)["client_id"] == [url]
            page.goto(authorization_url)
            log_in(page, "alice@example.com")
            expect(page.get_by_test_id("client-name")).to_have_text("E2E Doc Assistant")
            expect(page.get_by_test_id("metadata-document")).to_contain_text(url)
            page.select_option("#project", label="Alice & Co / beta")
            answer = redirected(page, page.get_by_test_id("approve").click)
            assert parse_qs(urlsplit(answer).query)["iss"] == [base]
            handoff.answers.put(answer)
            stage = next_from(first_stage, outcome, "its first calls")

            # refreshed, and rotated: the client now holds a new refresh token, the old one is spent
            assert stage["refresh_before"]
            assert stage["tokens"].refresh_token
            assert stage["tokens"].refresh_token != stage["refresh_before"]
            assert Token.objects.get(digest=digest(stage["refresh_before"])).used_at is not None

            page.goto("/connected-apps/")
            row = page.get_by_test_id("grants").locator("tr", has_text="E2E Doc Assistant")
            row.get_by_role("button", name="Revoke").click()
            expect(page.get_by_text("E2E Doc Assistant can no longer reach beta.")).to_be_visible()
            revoked.put(None)

            # The client's next call is refused (401): it can only go back to the person for consent.
            again = next_from(handoff.urls, outcome, "its call after the revocation was refused")
            assert again.startswith(f"{base}/oauth/authorize?")
            assert parse_qs(urlsplit(again).query)["client_id"] == [url]
            handoff.answers.put(f"{REDIRECT}?error=access_denied")
            with pytest.raises(ExceptionGroup) as refused:
                outcome.result(timeout=WAIT)
    finally:
        context.close()
        docs.close()

    assert refused.group_contains(OAuthFlowError, match="access_denied", depth=None)
    found = stage["found"]
    assert Grant.objects.get(client__client_id=url).revoked_at is not None
    listed = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {stage['tokens'].access_token}",
        },
    )
    assert listed.status_code == 401
    assert found["memory"]["author"]["device_label"] == "E2E Doc Assistant"
    client = OAuthClient.objects.get()  # no registration happened: the only client is the document's
    assert (client.client_id, client.metadata_document) == (url, True)
    assert docs.hits["/e2e/client.json"] == 1  # authorize, token and refresh within the cache time
