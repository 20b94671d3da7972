"""The one door to Stripe: a configured client, error translation, and readers for the fields
MMW uses from Stripe's objects (which moved between API versions).

Every Stripe answer leaves this module as a plain ``dict`` (``StripeObject.to_dict()``).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from typing import Any

import stripe
from django.conf import settings

from mmw.errors import MMWError

logger = logging.getLogger(__name__)


class BillingNotConfigured(MMWError):
    code = "billing_not_configured"
    http_status = 503


class PaymentProviderError(MMWError):
    code = "payment_provider_error"
    http_status = 502


def configured() -> bool:
    """Whether this server takes payments (``STRIPE_SECRET_KEY`` is set); without it plans are
    assigned by the operator in the admin and the billing page says so."""
    return bool(settings.STRIPE_SECRET_KEY)


def client() -> stripe.StripeClient:
    """A client for ``STRIPE_SECRET_KEY`` (at ``STRIPE_API_BASE`` when set, e.g. localstripe)."""
    if not settings.STRIPE_SECRET_KEY:
        raise BillingNotConfigured("billing is not configured on this server (STRIPE_SECRET_KEY is not set)")
    return _client(settings.STRIPE_SECRET_KEY, settings.STRIPE_API_BASE or None)


@functools.lru_cache(maxsize=8)
def _client(api_key: str, api_base: str | None) -> stripe.StripeClient:
    return stripe.StripeClient(api_key, base_addresses={"api": api_base} if api_base else None, max_network_retries=2)


def call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call one SDK method; answer its object as a dict. Stripe's failures become
    ``PaymentProviderError`` (logged with Stripe's own message, which may name ids)."""
    try:
        result = method(*args, **kwargs)
    except stripe.StripeError as exc:
        logger.warning("Stripe call %s failed: %s", getattr(method, "__qualname__", method), exc)
        raise PaymentProviderError("the payment provider did not answer as expected; try again later") from exc
    answer: dict[str, Any] = result.to_dict()
    return answer


def retrieve_price(price_id: str) -> dict[str, Any]:
    return call(client().v1.prices.retrieve, price_id)


def retrieve_subscription(subscription_id: str) -> dict[str, Any]:
    return call(client().v1.subscriptions.retrieve, subscription_id)


def cancel_subscription(subscription_id: str) -> None:
    """Cancel now, prorated. One already cancelled (or unknown) is logged and left alone."""
    try:
        client().v1.subscriptions.cancel(subscription_id, params={"prorate": True})
    except stripe.InvalidRequestError as exc:
        logger.warning("Stripe subscription %s was not cancelled: %s", subscription_id, exc)
    except stripe.StripeError as exc:
        logger.warning("Stripe call subscriptions.cancel failed: %s", exc)
        raise PaymentProviderError("the payment provider did not answer as expected; try again later") from exc


# --- readers -----------------------------------------------------------------------------


def timestamp(value: Any) -> dt.datetime | None:
    """A Stripe Unix time as an aware UTC datetime."""
    if value is None or value == "":
        return None
    return dt.datetime.fromtimestamp(int(value), tz=dt.UTC)


def object_id(value: Any) -> str | None:
    """An id, whether Stripe sent the bare id or the expanded object."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


def first_item(subscription: dict[str, Any]) -> dict[str, Any]:
    items = (subscription.get("items") or {}).get("data") or []
    return items[0] if items else {}


def price_id(subscription: dict[str, Any]) -> str | None:
    """The price the subscription bills: ``items[0].price`` (current API) or ``.plan`` (legacy)."""
    item = first_item(subscription)
    return object_id(item.get("price")) or object_id(item.get("plan")) or object_id(subscription.get("plan"))


def period_end(subscription: dict[str, Any]) -> dt.datetime | None:
    """``current_period_end``: on the subscription (before 2025-03) or on its items (since)."""
    return timestamp(subscription.get("current_period_end") or first_item(subscription).get("current_period_end"))


def invoice_subscription_id(invoice: dict[str, Any]) -> str | None:
    """An invoice's subscription: ``parent.subscription_details.subscription`` (current API) or
    the older top-level ``subscription``."""
    parent = invoice.get("parent") or {}
    details = parent.get("subscription_details") or {}
    return object_id(details.get("subscription")) or object_id(invoice.get("subscription"))


def tenant_of(obj: dict[str, Any]) -> str | None:
    """The MMW tenant id stamped on a Stripe object (Checkout's ``client_reference_id`` or
    ``metadata.tenant_id``, also on an invoice's subscription details)."""
    for candidate in (
        obj.get("client_reference_id"),
        (obj.get("metadata") or {}).get("tenant_id"),
        (((obj.get("parent") or {}).get("subscription_details") or {}).get("metadata") or {}).get("tenant_id"),
        ((obj.get("subscription_details") or {}).get("metadata") or {}).get("tenant_id"),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None
