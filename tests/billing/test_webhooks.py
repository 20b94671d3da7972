"""The Stripe webhook against localstripe: signatures, the handler table, replays, disorder."""

from __future__ import annotations

import json
import logging
import time

import pytest

from accounts.models import AuditEvent
from billing.models import StripeEvent, Subscription
from tests.billing import localstripe
from tests.billing.conftest import PRO_PRICE, Deliver, Plans, subscribe, subscription_of
from tests.billing.localstripe import LocalStripe, as_payload, checkout_completed, sign
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db


def test_checkout_completed_puts_the_account_on_the_paid_plan(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    assert subscription_of(tenancy.alice).plan == plans.free
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    sub = subscription_of(tenancy.alice)
    assert (sub.plan, sub.state, sub.stripe_status) == (plans.pro, Subscription.State.ACTIVE, "active")
    assert (sub.stripe_customer_id, sub.stripe_subscription_id) == (paid.customer, paid.subscription)
    assert sub.current_period_end is not None
    assert AuditEvent.objects.filter(account=tenancy.alice.account, action="billing.plan_changed").count() == 1
    assert StripeEvent.objects.get(account=tenancy.alice.account).outcome == "subscribed"
    assert subscription_of(tenancy.charlie).plan == plans.free  # nobody else's plan moved


@pytest.mark.parametrize(
    "spoil",
    ["wrong secret", "tampered body", "no header", "garbage header", "five minutes late"],
)
def test_a_badly_signed_event_is_refused_with_400_and_changes_nothing(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver, spoil: str
) -> None:
    tenant = tenancy.alice.account.tenant_id
    customer = stripe_server.customer("alice@example.com", tenant)
    event = checkout_completed(customer, stripe_server.subscribe(customer, PRO_PRICE, tenant), tenant)
    payload = as_payload(event)
    signature = {
        "wrong secret": sign(payload, "whsec_not_ours"),
        "tampered body": sign(payload.replace(tenant, "t-00000000")),
        "no header": "",
        "garbage header": "t=abc,v1=zz",
        "five minutes late": sign(payload, timestamp=int(time.time()) - 301),
    }[spoil]
    answer = deliver(event, signature=signature)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_signature"
    assert not StripeEvent.objects.exists()
    assert subscription_of(tenancy.alice).plan == plans.free


def test_without_a_webhook_secret_every_event_is_refused(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver, settings: object
) -> None:
    settings.STRIPE_WEBHOOK_SECRET = ""  # type: ignore[attr-defined]
    answer = deliver(checkout_completed("cus_x", "sub_x", tenancy.alice.account.tenant_id))
    assert answer.status_code == 503
    assert not StripeEvent.objects.exists()


def test_an_unknown_event_type_is_acknowledged_and_logged(
    plans: Plans, stripe_server: LocalStripe, deliver: Deliver, caplog: pytest.LogCaptureFixture
) -> None:
    event = {"id": "evt_unknown_type_1", "object": "event", "type": "radar.early_fraud_warning.created", "data": {}}
    with caplog.at_level(logging.INFO, logger="billing.webhooks"):
        answer = deliver(event)
    assert answer.status_code == 200
    assert answer.json() == {"received": True, "outcome": "unhandled_type"}
    assert StripeEvent.objects.get(event_id="evt_unknown_type_1").outcome == "unhandled_type"
    assert "unhandled type radar.early_fraud_warning.created" in caplog.text


def test_an_event_of_a_stranger_is_acknowledged_as_unmatched(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    customer = stripe_server.customer("someone@else.example", "t-notours")
    subscription = stripe_server.subscribe(customer, PRO_PRICE, "t-notours")
    answer = deliver(checkout_completed(customer, subscription, "t-notours"))
    assert answer.json()["outcome"] == "unmatched"
    assert not Subscription.objects.filter(stripe_customer_id=customer).exists()


def test_a_replayed_event_is_a_no_op(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver, mailoutbox: list[object]
) -> None:
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    stripe_server.fail_renewal(paid.customer, paid.subscription)
    failed = stripe_server.event("invoice.payment_failed", paid.customer)
    assert deliver(failed).json()["outcome"] == "grace_started"
    first = subscription_of(tenancy.alice)
    audits, mails = AuditEvent.objects.count(), len(mailoutbox)

    for _ in range(2):
        answer = deliver(failed)
        assert (answer.status_code, answer.json()["outcome"]) == (200, "duplicate")
    again = subscription_of(tenancy.alice)
    assert (again.state, again.grace_ends_at, again.updated_at) == (first.state, first.grace_ends_at, first.updated_at)
    assert (AuditEvent.objects.count(), len(mailoutbox)) == (audits, mails)


def test_events_out_of_order_are_overruled_by_stripes_current_state(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver, mailoutbox: list[object]
) -> None:
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    invoice = stripe_server.fail_renewal(paid.customer, paid.subscription)
    stripe_server.pay(paid.customer, invoice)
    failed = stripe_server.event("invoice.payment_failed", paid.customer)
    succeeded = stripe_server.event("invoice.payment_succeeded", paid.customer)
    mails = len(mailoutbox)

    assert deliver(succeeded).json()["outcome"] == "unchanged"
    assert deliver(failed).json()["outcome"] == "unchanged"  # late news: Stripe says active now
    sub = subscription_of(tenancy.alice)
    assert (sub.state, sub.stripe_status, sub.grace_ends_at) == (Subscription.State.ACTIVE, "active", None)
    assert len(mailoutbox) == mails


def test_a_late_created_event_does_not_revive_a_cancelled_subscription(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    stripe_server.cancel(paid.subscription)
    assert deliver(stripe_server.event("customer.subscription.deleted", paid.customer)).json()["outcome"] == "ended"
    created = stripe_server.event("customer.subscription.created", paid.customer)
    assert deliver(created).json()["outcome"] == "stale"
    sub = subscription_of(tenancy.alice)
    assert (sub.plan, sub.stripe_subscription_id, sub.state) == (plans.free, "", Subscription.State.ACTIVE)


def test_the_event_stripe_sends_is_what_localstripe_signs(stripe_server: LocalStripe) -> None:
    """Our signing helper agrees with the SDK's verifier (and so with Stripe's scheme)."""
    import stripe

    payload = json.dumps({"id": "evt_1", "object": "event", "type": "ping", "data": {"object": {}}})
    event = stripe.Webhook.construct_event(payload, sign(payload), localstripe.WEBHOOK_SECRET)
    assert event.id == "evt_1"
