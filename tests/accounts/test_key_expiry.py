"""Key expiry (issue #20): chosen at creation, enforced by the one resolver, cached or not, on
REST and MCP alike; each key's calls this month counted beside the project's."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from accounts import key_cache, keys, services
from accounts.models import ApiKey, AuditEvent
from billing import counters, gate
from dashboard.selectors import key_calls_this_month
from memories.admission import admit_read
from mmw.errors import InvalidInput
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db


def issue(tenancy: Tenancy, days: int | None) -> services.IssuedKey:
    return services.api_key_create(
        user=tenancy.alice.user, project=tenancy.alice.project, name="ci", expires_in_days=days
    )


def test_a_key_gets_the_chosen_lifetime_and_the_audit_row_says_so(tenancy: Tenancy) -> None:
    issued = issue(tenancy, 30)
    assert issued.api_key.expires_at is not None
    left = issued.api_key.expires_at - timezone.now()
    assert dt.timedelta(days=29, hours=23) < left <= dt.timedelta(days=30)
    row = AuditEvent.objects.get(action="api_key.created", target_id=str(issued.api_key.pk))
    assert row.data["expires_at"] == issued.api_key.expires_at.isoformat()
    assert issue(tenancy, None).api_key.expires_at is None


@pytest.mark.parametrize("days", [0, 1, 31, 3650, -7])
def test_a_lifetime_outside_the_offered_ones_is_refused(tenancy: Tenancy, days: int) -> None:
    with pytest.raises(InvalidInput, match="expires_in_days must be one of 7, 30, 90, 365"):
        issue(tenancy, days)


def test_an_expired_key_resolves_to_nothing(tenancy: Tenancy) -> None:
    issued = issue(tenancy, 7)
    assert keys.resolve_key(issued.raw) is not None
    key_cache.CACHE.clear()
    ApiKey.objects.filter(pk=issued.api_key.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert keys.resolve_bearer(f"Bearer {issued.raw}") is None


def test_a_cached_key_stops_when_its_expiry_passes(tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keeps a principal for its lifetime; an expiry within it still ends the key."""
    monkeypatch.setattr(key_cache, "CACHE", key_cache.PrincipalCache(ttl=3600))
    issued = issue(tenancy, 7)
    assert keys.resolve_key(issued.raw) is not None
    assert key_cache.CACHE.get(keys.digest(issued.raw)) is not None
    later = timezone.now() + dt.timedelta(days=7, seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert keys.resolve_key(issued.raw) is None


def test_rest_refuses_an_expired_key(tenancy: Tenancy) -> None:
    from django.test import Client

    issued = issue(tenancy, 7)
    api = Client()
    auth = {"Authorization": f"Bearer {issued.raw}"}
    ok = api.post("/api/v1/memories/search", {"query": "x"}, content_type="application/json", headers=auth)
    assert ok.status_code == 200
    ApiKey.objects.filter(pk=issued.api_key.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    key_cache.CACHE.clear()
    refused = api.post("/api/v1/memories/search", {"query": "x"}, content_type="application/json", headers=auth)
    assert refused.status_code == 401


def test_each_key_counts_its_calls_this_month(tenancy: Tenancy) -> None:
    first, second = issue(tenancy, None), issue(tenancy, 90)
    for raw, times in ((first.raw, 3), (second.raw, 1)):
        principal = keys.resolve_key(raw)
        assert principal is not None
        for _ in range(times):
            admit_read(principal, "memory:read")
    calls = key_calls_this_month([first.api_key.pk, second.api_key.pk])
    assert calls == {first.api_key.pk: 3, second.api_key.pk: 1}
    month = timezone.now().strftime("%Y%m")
    assert counters.peek(gate.monthly_calls_bucket(str(tenancy.alice.project.pk), month)) >= 4


def test_the_keys_page_creates_with_an_expiry_and_shows_when_each_key_stops(tenancy: Tenancy) -> None:
    from django.urls import reverse

    from tests.dashboard.conftest import client_for

    url = reverse("dashboard:keys", args=[tenancy.alice.project.pk])
    alice = client_for(tenancy.alice.user)
    created = alice.post(url, {"name": "weekly", "scopes": ["memory:read"], "expires": "7"})
    assert "expires <time" in created.content.decode()
    alice.post(url, {"name": "quarterly", "scopes": ["memory:read"], "expires": "90"})
    alice.post(url, {"name": "forever", "scopes": ["memory:read"], "expires": ""})
    keys = {k.name: k for k in ApiKey.objects.filter(project=tenancy.alice.project)}
    assert keys["forever"].expires_at is None
    assert keys["quarterly"].expires_at is not None
    page = alice.get(url).content.decode()
    rows = {name: page[page.index(f">{name}<") :].split("</tr>")[0] for name in ("weekly", "quarterly", "forever")}
    assert ">in 7 days<" in rows["weekly"]  # rounded: a seven-day key read at once (timesince said "in 6 days")
    assert keys["quarterly"].expires_at.strftime(">%-d %b %Y") in rows["quarterly"]
    assert 'data-testid="key-expiry">never<' in rows["forever"]
    assert "0 calls this month" in rows["weekly"]
    refused = alice.post(url, {"name": "odd", "scopes": ["memory:read"], "expires": "3"})
    assert refused.status_code == 400
