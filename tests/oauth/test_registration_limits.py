"""Open registration is bounded (issue #18): per client address per clock hour (429), a cap on
registered clients in all (503), both with Retry-After; and the hourly sweep deletes
self-registered clients nobody ever granted anything."""

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
