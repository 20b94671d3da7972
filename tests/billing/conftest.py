"""Billing fixtures: a real localstripe for the session, MMW's settings pointed at it, plans with
Stripe prices, signed webhook delivery, and a clock for rate-limit windows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from accounts.keys import resolve_key
from billing import counters
from billing.models import Plan, Subscription
from memories import admission
from tests.billing import localstripe
from tests.billing.localstripe import LocalStripe, as_payload, sign
from tests.conftest import Actor

WEBHOOK_PATH = "/billing/stripe/webhook"
PRO_PRICE = "price_mmw_pro"
TEAM_PRICE = "price_mmw_team"


@pytest.fixture(scope="session")
def localstripe_url() -> Iterator[str]:
    with localstripe.running() as url:
        yield url


@pytest.fixture
def stripe_server(localstripe_url: str, settings: Any) -> LocalStripe:
    settings.STRIPE_SECRET_KEY = localstripe.SECRET_KEY
    settings.STRIPE_WEBHOOK_SECRET = localstripe.WEBHOOK_SECRET
    settings.STRIPE_API_BASE = localstripe_url
    settings.MMW_BILLING_URL = "https://mmw.example/billing/"
    server = LocalStripe(localstripe_url)
    server.price(PRO_PRICE, 1900)
    server.price(TEAM_PRICE, 9900)
    return server


@dataclass
class Plans:
    free: Plan
    pro: Plan
    team: Plan


@pytest.fixture
def plans(db: None) -> Plans:
    """The seeded plans, with the localstripe prices pasted in (as an operator would)."""
    Plan.objects.filter(code="pro").update(stripe_price_id=PRO_PRICE)
    Plan.objects.filter(code="team").update(stripe_price_id=TEAM_PRICE)
    return Plans(*(Plan.objects.get(code=code) for code in ("free", "pro", "team")))


Deliver = Callable[..., Any]  # answers a test-client response (with .json())


@pytest.fixture
def deliver(django_capture_on_commit_callbacks: Any) -> Deliver:
    """POST one event to the webhook, signed like Stripe (``secret``/``signature`` to spoil it);
    after-commit work (e-mails) runs as if the request's transaction had committed."""
    client = Client()

    def post(event: dict[str, Any], *, secret: str = localstripe.WEBHOOK_SECRET, signature: str | None = None) -> Any:
        payload = as_payload(event)
        header = sign(payload, secret) if signature is None else signature
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(
                WEBHOOK_PATH, data=payload, content_type="application/json", HTTP_STRIPE_SIGNATURE=header
            )

    return post


@dataclass
class Subscribed:
    customer: str
    subscription: str


def subscribe(stripe_server: LocalStripe, deliver: Deliver, actor: Actor, price: str = PRO_PRICE) -> Subscribed:
    """The account pays at Checkout: the subscription exists at Stripe, the event arrives."""
    tenant = actor.account.tenant_id
    customer = stripe_server.customer(actor.user.email, tenant)
    subscription = stripe_server.subscribe(customer, price, tenant)
    answer = deliver(localstripe.checkout_completed(customer, subscription, tenant))
    assert answer.status_code == 200, answer.content
    return Subscribed(customer, subscription)


def notice_for(actor: Actor) -> str | None:
    """The ``[MMW Notice]: …`` the actor's calls carry now, asked the way REST and MCP ask it: the
    memory core's admission, which billing's gatekeeper answers."""
    principal = resolve_key(actor.key)
    assert principal is not None
    return admission.admit(principal).notice()


def subscription_of(actor: Actor) -> Subscription:
    return Subscription.objects.select_related("plan").get(account=actor.account)


@dataclass
class Clock:
    now: float

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Rate-limit windows' clock, stopped 10 s into a minute (moved only by ``advance``)."""
    frozen = Clock(1_800_000_000.0 - 50)  # 1_800_000_000 is a whole minute
    monkeypatch.setattr(counters, "now", lambda: frozen.now)
    return frozen
