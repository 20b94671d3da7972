"""``billing.state_cache``: the call gate reads an account's subscription row at most once per
``MMW_BILLING_CACHE_SECONDS`` per process; a change saved in this process applies at once, one
made elsewhere (an ``update()``, no signal) within the lifetime; a grace end is never cached."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.keys import resolve_key
from billing import gate, state_cache
from billing.models import Subscription
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db
State = Subscription.State


@pytest.fixture
def cache_on(settings: Any, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The cache on (1 s, as in production) with a clock the test moves; returns the clock."""
    settings.MMW_BILLING_CACHE_SECONDS = 1.0
    now = [1000.0]
    monkeypatch.setattr(state_cache, "CACHE", state_cache.StateCache(clock=lambda: now[0]))
    return now


def subscription_reads(captured: CaptureQueriesContext) -> int:
    return sum('FROM "billing_subscription"' in q["sql"] for q in captured.captured_queries)


def admitted_state(tenancy: Tenancy) -> str:
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    return gate.CallAdmission(principal).state.state


def test_a_second_call_within_the_lifetime_reads_no_subscription(tenancy: Tenancy, cache_on: list[float]) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tenancy.alice.key}")
    assert client.get("/api/v1/workspaces").status_code == 200
    with CaptureQueriesContext(connection) as second:
        assert client.get("/api/v1/workspaces").status_code == 200
    assert subscription_reads(second) == 0
    cache_on[0] += 1.0
    with CaptureQueriesContext(connection) as later:
        assert client.get("/api/v1/workspaces").status_code == 200
    assert subscription_reads(later) == 1


def test_a_suspension_saved_in_this_process_applies_at_once(tenancy: Tenancy, cache_on: list[float]) -> None:
    assert admitted_state(tenancy) == State.ACTIVE  # kept
    sub = Subscription.objects.get(account=tenancy.alice.account)
    sub.state, sub.suspended_at = State.SUSPENDED, timezone.now()
    sub.save()
    assert admitted_state(tenancy) == State.SUSPENDED


def test_a_change_made_elsewhere_applies_within_the_lifetime(tenancy: Tenancy, cache_on: list[float]) -> None:
    assert admitted_state(tenancy) == State.ACTIVE
    Subscription.objects.filter(account=tenancy.alice.account).update(state=State.SUSPENDED)  # no signal
    cache_on[0] += 0.5
    assert admitted_state(tenancy) == State.ACTIVE  # still within the second
    cache_on[0] += 0.5
    assert admitted_state(tenancy) == State.SUSPENDED


def test_a_grace_period_ending_while_kept_suspends_at_once(
    tenancy: Tenancy, cache_on: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    ends = timezone.now() + dt.timedelta(minutes=5)
    Subscription.objects.filter(account=tenancy.alice.account).update(state=State.GRACE, grace_ends_at=ends)
    assert admitted_state(tenancy) == State.GRACE  # kept, with its end
    later = ends + dt.timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert admitted_state(tenancy) == State.SUSPENDED


def test_off_reads_every_call(tenancy: Tenancy, settings: Any) -> None:
    settings.MMW_BILLING_CACHE_SECONDS = 0.0
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tenancy.alice.key}")
    assert client.get("/api/v1/workspaces").status_code == 200
    with CaptureQueriesContext(connection) as second:
        assert client.get("/api/v1/workspaces").status_code == 200
    assert subscription_reads(second) == 1
