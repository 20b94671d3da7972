"""Stripe webhooks: verify, record the event id once, dispatch through one table of handlers.

Handlers read only the ids in the event (customer, subscription, tenant) and then re-read the
subscription from Stripe (``services.subscription_sync``), so events may arrive late, twice or
out of order: a replayed id is a no-op, and stale news is overruled by Stripe's current state.
Unknown types are answered 200 and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import stripe
from django.conf import settings
from django.db import transaction

from accounts.models import Account
from billing import services, stripe_api
from billing.models import StripeEvent, Subscription
from mmw.errors import MMWError

logger = logging.getLogger(__name__)


class WebhookRefused(MMWError):
    code = "invalid_signature"
    http_status = 400


@dataclass(frozen=True)
class Handled:
    outcome: str
    account: Account | None = None


def _account_for(obj: dict[str, Any]) -> Account | None:
    """The account a Stripe object belongs to: by its customer, else by the tenant id MMW
    stamped on it at Checkout (then the customer is linked to that account)."""
    customer = stripe_api.object_id(obj.get("customer"))
    if customer:
        sub = Subscription.objects.select_related("account").filter(stripe_customer_id=customer).first()
        if sub is not None:
            return sub.account
    tenant = stripe_api.tenant_of(obj)
    account = Account.objects.filter(tenant_id=tenant).first() if tenant else None
    if account is None or not customer:
        return account
    return account if services.subscription_link_customer(account=account, customer_id=customer) else None


def _sync(obj: dict[str, Any], subscription_id: str | None) -> Handled:
    if not subscription_id:
        return Handled("ignored")
    account = _account_for(obj)
    if account is None:
        logger.warning("Stripe subscription %s belongs to no MMW account", subscription_id)
        return Handled("unmatched")
    return Handled(services.subscription_sync(account=account, stripe_subscription_id=subscription_id), account)


def on_checkout_completed(session: dict[str, Any]) -> Handled:
    if session.get("mode") != "subscription":
        return Handled("ignored")
    return _sync(session, stripe_api.object_id(session.get("subscription")))


def on_subscription(subscription: dict[str, Any]) -> Handled:
    return _sync(subscription, stripe_api.object_id(subscription.get("id")))


def on_invoice(invoice: dict[str, Any]) -> Handled:
    return _sync(invoice, stripe_api.invoice_subscription_id(invoice))


HANDLERS: dict[str, Callable[[dict[str, Any]], Handled]] = {
    "checkout.session.completed": on_checkout_completed,
    "checkout.session.async_payment_succeeded": on_checkout_completed,
    "customer.subscription.created": on_subscription,
    "customer.subscription.updated": on_subscription,
    "customer.subscription.deleted": on_subscription,
    "customer.subscription.paused": on_subscription,
    "customer.subscription.resumed": on_subscription,
    "invoice.paid": on_invoice,
    "invoice.payment_succeeded": on_invoice,
    "invoice.payment_failed": on_invoice,
    "invoice.payment_action_required": on_invoice,
    "invoice.marked_uncollectible": on_invoice,
}


def _verified(payload: bytes, signature: str | None) -> dict[str, Any]:
    secret = settings.STRIPE_WEBHOOK_SECRET
    if not secret:
        raise stripe_api.BillingNotConfigured("billing is not configured on this server (no STRIPE_WEBHOOK_SECRET)")
    try:
        event = stripe.Webhook.construct_event(payload, signature, secret)
    except (ValueError, stripe.SignatureVerificationError):
        raise WebhookRefused("invalid Stripe signature") from None
    data: dict[str, Any] = event.to_dict()
    return data


def stripe_webhook_receive(*, payload: bytes, signature: str | None) -> str:
    """Handle one delivery; return its outcome (``duplicate`` for an id seen before).

    A handler's failure (Stripe unreachable…) rolls the event record back and propagates, so the
    endpoint answers 500 and Stripe delivers the event again later."""
    event = _verified(payload, signature)
    event_type = str(event.get("type") or "")
    with transaction.atomic():
        record, created = StripeEvent.objects.get_or_create(
            event_id=str(event["id"]),
            defaults={"type": event_type, "created_at": stripe_api.timestamp(event.get("created"))},
        )
        if not created:
            logger.info("Stripe event %s (%s) replayed: ignored", record.event_id, event_type)
            return "duplicate"
        handler = HANDLERS.get(event_type)
        if handler is None:
            logger.info("Stripe event %s of unhandled type %s: ignored", record.event_id, event_type)
            handled = Handled("unhandled_type")
        else:
            handled = handler((event.get("data") or {}).get("object") or {})
        record.outcome, record.account = handled.outcome, handled.account
        record.save(update_fields=["outcome", "account"])
    logger.info("Stripe event %s (%s): %s", record.event_id, event_type, handled.outcome)
    return handled.outcome
