"""The whole journey over real HTTP, with localstripe itself delivering its signed webhooks to
a live MMW: subscribe, fail a payment, see the banner and the MCP notice, pay, write again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from billing import selectors
from billing.models import StripeEvent, Subscription
from tests import live
from tests.billing.conftest import PRO_PRICE, WEBHOOK_PATH, Plans, notice_for, subscription_of
from tests.billing.localstripe import LocalStripe, as_payload, checkout_completed, sign
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call

live_server = live.live_server
pytestmark = pytest.mark.slow
State = Subscription.State


def eventually(check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "Stripe's webhook did not arrive in time"
        time.sleep(0.2)


@pytest.fixture
def webhooks_to(stripe_server: LocalStripe, live_server: LiveServer) -> Iterator[None]:
    stripe_server.register_webhook(f"{live_server.url}{WEBHOOK_PATH}")
    yield
    stripe_server.register_webhook(f"{live_server.url}{WEBHOOK_PATH}", events=["mmw.tests.none"])


def test_subscribe_fail_a_payment_see_the_notice_pay_and_write_again(
    live_server: LiveServer, tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, webhooks_to: None
) -> None:
    url, key, account = live_server.url, tenancy.alice.key, tenancy.alice.account
    tenant = account.tenant_id

    # Checkout: the subscription is paid; Stripe announces it (localstripe sends
    # customer.subscription.created itself; Checkout's own event is signed and posted here).
    customer = stripe_server.customer("alice@example.com", tenant)
    subscription = stripe_server.subscribe(customer, PRO_PRICE, tenant)
    payload = as_payload(checkout_completed(customer, subscription, tenant))
    answer = httpx.post(f"{url}{WEBHOOK_PATH}", content=payload, headers={"Stripe-Signature": sign(payload)})
    assert answer.status_code == 200
    eventually(lambda: subscription_of(tenancy.alice).plan == plans.pro)
    assert subscription_of(tenancy.alice).stripe_customer_id == customer
    assert selectors.banner_for(account) is None

    # The renewal fails: localstripe posts invoice.payment_failed; the account is read-only.
    invoice = stripe_server.fail_renewal(customer, subscription)
    eventually(lambda: subscription_of(tenancy.alice).state == State.GRACE)
    notice = notice_for(tenancy.alice)
    assert notice is not None
    assert notice.startswith("[MMW Notice]: the last payment for this account failed")
    banner = selectors.banner_for(account)
    assert banner is not None
    assert banner.level == "warning"
    assert f"[MMW Notice]: {banner.text}" == notice
    assert mcp_call(url, key, "remember", {"content": "refused"}) == (True, f"Error executing tool remember: {notice}")
    is_error, found = mcp_call(url, key, "search", {"query": "anything"})
    assert not is_error
    assert isinstance(found, dict)
    assert found["notice"] == notice
    rest = live.rest(url, key, "POST", "/api/v1/memories", json={"content": "refused too"})
    assert (rest.status_code, rest.json()["error"]["message"]) == (402, notice)

    # Payment: localstripe posts invoice.payment_succeeded; writing works again.
    stripe_server.pay(customer, invoice)
    eventually(lambda: subscription_of(tenancy.alice).state == State.ACTIVE)
    is_error, stored = mcp_call(url, key, "remember", {"content": "paid and writing again"})
    assert not is_error
    assert isinstance(stored, dict)
    assert "notice" not in stored
    assert selectors.banner_for(account) is None

    handled = set(StripeEvent.objects.filter(account=account).values_list("type", flat=True))
    assert {"checkout.session.completed", "invoice.payment_failed", "invoice.payment_succeeded"} <= handled
    assert StripeEvent.objects.filter(outcome="unhandled_type").exists()  # e.g. customer.created: 200
