"""Open registration is bounded (issue #18): per client address per clock hour (429), a cap on
registered clients in all (503), both with Retry-After; and the hourly sweep deletes
self-registered clients nobody ever granted anything. What one client may register is bounded
too: at most 5 redirect URIs of at most 2000 characters, none with userinfo, and a printable
client name of at most 200 characters; each refusal names its limit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone

from billing import counters
from mmw.celery import _beat_schedule
from oauth import services, tasks
from oauth.models import Client, Grant, PendingAuthorization
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer

live_server = live.live_server

REDIRECT = "http://127.0.0.1:9/callback"
HOUR = 3600


def post_register(url: str) -> httpx.Response:
    return httpx.post(f"{url}/oauth/register", json={"client_name": "Drive-by", "redirect_uris": [REDIRECT]})


def test_registrations_per_address_are_counted_per_clock_hour(
    live_server: LiveServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.PUBLIC_URL = live_server.url
    settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR = 2
    hour = 490_000 * HOUR
    monkeypatch.setattr(counters, "now", lambda: hour + 600.0)
    assert [post_register(live_server).status_code for _ in range(2)] == [201, 201]
    refused = post_register(live_server)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "3000"  # the rest of the hour
    assert refused.json() == {
        "error": "invalid_request",
        "error_description": "too many client registrations from this address, retry after the hour",
    }
    assert Client.objects.count() == 2
    monkeypatch.setattr(counters, "now", lambda: hour + HOUR + 1.0)  # the next hour starts afresh
    assert post_register(live_server).status_code == 201


def test_authorizations_by_metadata_document_are_bounded_per_address_per_minute(
    live_server: LiveServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each such authorization may make MMW fetch a URL the caller chose: one address gets
    ``MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE`` of them a minute, then 429."""
    settings.PUBLIC_URL = live_server.url
    settings.MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE = 2
    minute = 8_000_000 * 60
    monkeypatch.setattr(counters, "now", lambda: minute + 15.0)
    params = {"client_id": "https://127.0.0.1/client.json", "response_type": "code", "redirect_uri": REDIRECT}
    url = f"{live_server}/oauth/authorize"
    first = [httpx.get(url, params=params) for _ in range(2)]
    assert [a.status_code for a in first] == [400, 400]  # refused on its merits (a loopback address)
    assert "client metadata document refused" in first[0].json()["error_description"]
    limited = httpx.get(url, params=params)
    assert limited.status_code == 429
    assert limited.headers["Retry-After"] == "45"
    assert limited.json()["error_description"] == (
        "too many authorizations by client metadata document from this address, retry in a minute"
    )
    monkeypatch.setattr(counters, "now", lambda: minute + 61.0)  # the next minute starts afresh
    assert httpx.get(url, params=params).status_code == 400


def test_a_full_client_table_answers_503_with_retry_after(live_server: LiveServer, settings: Any) -> None:
    settings.PUBLIC_URL = live_server.url
    settings.MMW_OAUTH_MAX_CLIENTS = 2
    assert [post_register(live_server).status_code for _ in range(2)] == [201, 201]
    full = post_register(live_server)
    assert full.status_code == 503
    assert full.headers["Retry-After"] == "3600"
    assert full.json()["error"] == "temporarily_unavailable"
    assert Client.objects.count() == 2
    Client.objects.first().delete()  # type: ignore[union-attr]
    assert post_register(live_server).status_code == 201


def _client(name: str, *, age_days: float, self_registered: bool = True) -> Client:
    client = Client.objects.create(
        client_id=f"id-{name}", client_name=name, redirect_uris=[REDIRECT], self_registered=self_registered
    )
    Client.objects.filter(pk=client.pk).update(created_at=timezone.now() - timedelta(days=age_days))
    return client


def test_the_sweep_deletes_only_old_self_registered_clients_never_granted(tenancy: Tenancy, settings: Any) -> None:
    settings.MMW_OAUTH_ABANDONED_CLIENT_DAYS = 7
    abandoned = _client("abandoned", age_days=8)
    PendingAuthorization.objects.create(
        public_id="p1",
        client=abandoned,
        redirect_uri=REDIRECT,
        code_challenge="c",
        resource="r",
        expires_at=timezone.now() - timedelta(days=7),
    )
    recent = _client("recent", age_days=6)
    operator = _client("operator", age_days=30, self_registered=False)
    used = _client("used", age_days=30)
    grant = Grant.objects.create(
        client=used, user=tenancy.alice.user, project=tenancy.alice.project, scopes=["memory:read"], resource="r"
    )
    services.grant_revoke(grant=grant, actor=tenancy.alice.user)  # a revoked grant still counts as use
    assert tasks.sweep_abandoned_clients() == 1
    assert set(Client.objects.values_list("client_name", flat=True)) == {recent.client_name, "operator", "used"}
    assert not PendingAuthorization.objects.exists()
    assert operator.self_registered is False
    assert tasks.sweep_abandoned_clients() == 0
    settings.MMW_OAUTH_ABANDONED_CLIENT_DAYS = 5
    assert tasks.sweep_abandoned_clients() == 1  # "recent" is 6 days old


def test_the_sweep_runs_hourly_from_beat() -> None:
    entry = _beat_schedule()["oauth-sweep-abandoned-clients"]
    assert entry["task"] == "oauth.tasks.sweep_abandoned_clients"
    assert entry["schedule"] == HOUR


LONG_URI = "https://app.example/" + "a" * (services.MAX_REDIRECT_URI_LENGTH - len("https://app.example/") + 1)


@pytest.mark.parametrize(
    ("metadata", "error", "description"),
    [
        pytest.param(
            {"redirect_uris": [f"https://app.example/cb{i}" for i in range(services.MAX_REDIRECT_URIS + 1)]},
            "invalid_redirect_uri",
            "redirect_uris must list 1 to 5 URIs",
            id="six-redirect-uris",
        ),
        pytest.param(
            {"redirect_uris": [LONG_URI]},
            "invalid_redirect_uri",
            "redirect URI longer than 2000 characters",
            id="redirect-uri-2001-characters",
        ),
        pytest.param(
            {"redirect_uris": ["https://user:secret@app.example/cb"]},
            "invalid_redirect_uri",
            "redirect URI must name a host and no user: https://user:secret@app.example/cb",
            id="userinfo-in-redirect-uri",
        ),
        pytest.param(
            {"client_name": "A" * (services.MAX_CLIENT_NAME + 1)},
            "invalid_client_metadata",
            "client_name must be at most 200 printable characters",
            id="client-name-201-characters",
        ),
        pytest.param(
            {"client_name": "Evil\nApproved by MMW"},
            "invalid_client_metadata",
            "client_name must be at most 200 printable characters",
            id="client-name-not-printable",
        ),
        pytest.param(
            {"client_name": "   "},
            "invalid_client_metadata",
            "client_name is required: the consent page shows it to the person",
            id="client-name-blank",
        ),
    ],
)
def test_registration_refuses_what_exceeds_the_limits_naming_the_limit(
    live_server: LiveServer, settings: Any, metadata: dict[str, Any], error: str, description: str
) -> None:
    settings.PUBLIC_URL = live_server.url
    body = {"client_name": "Limits", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}
    response = httpx.post(f"{live_server}/oauth/register", json=body)
    assert response.status_code == 400
    assert response.json() == {"error": error, "error_description": description}
    assert not Client.objects.exists()


def test_the_limits_themselves_are_accepted(live_server: LiveServer, settings: Any) -> None:
    settings.PUBLIC_URL = live_server.url
    body = {
        "client_name": "A" * services.MAX_CLIENT_NAME,
        "redirect_uris": [f"https://app.example/cb{i}" for i in range(services.MAX_REDIRECT_URIS - 1)]
        + [LONG_URI[:-1]],
        "token_endpoint_auth_method": "none",
    }
    response = httpx.post(f"{live_server}/oauth/register", json=body)
    assert response.status_code == 201, response.text
    assert Client.objects.get().redirect_uris[-1] == LONG_URI[:-1]
