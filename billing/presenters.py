"""What the billing page shows people about plans: prices (Stripe's where it sells the plan, else
the plan's own figures), limits written out, and what each plan's button does for this account."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.core.cache import cache

from billing import stripe_api
from billing.models import Plan
from billing.selectors import BillingState

logger = logging.getLogger(__name__)

PRICE_CACHE_SECONDS = 600  # a price edited in Stripe shows within ten minutes
# Stripe unreachable (or the id not a Price): the plan's own figure is shown, and Stripe is asked
# again a minute later, not on every view (each attempt can take seconds when it does not answer).
PRICE_FAILURE_CACHE_SECONDS = 60
_SYMBOLS = {"usd": "$", "eur": "€", "gbp": "£"}
_PER = {"month": "month", "year": "year", "week": "week", "day": "day"}


@dataclass(frozen=True)
class Price:
    cents: int
    currency: str
    interval: str  # "month", "year", …

    @property
    def text(self) -> str:
        """``Free``, ``$19 / month``, ``€190 / year``, ``19.50 CHF / month``."""
        if self.cents == 0:
            return "Free"
        amount = f"{self.cents // 100:,}" if self.cents % 100 == 0 else f"{self.cents / 100:,.2f}"
        symbol = _SYMBOLS.get(self.currency.lower())
        money = f"{symbol}{amount}" if symbol else f"{amount} {self.currency.upper()}"
        return f"{money} / {_PER.get(self.interval, self.interval)}"


@dataclass(frozen=True)
class PlanOffer:
    """One plan as the billing page shows it to one account."""

    plan: Plan
    price: Price
    limits: list[str]
    current: bool
    action: str  # "current" | "checkout" | "portal" (back to the free plan) | "none"
    action_label: str


def count(value: int | None, unit: str) -> str:
    """``50,000 records per project`` or ``unlimited records per project``."""
    return f"{'unlimited' if value is None else f'{value:,}'} {unit}"


def limits_of(plan: Plan) -> list[str]:
    lines = [
        count(plan.records_per_project, "records per project"),
        count(plan.turns_per_project, "session turns per project"),
        count(plan.ledger_entries_per_project, "ledger entries per project"),
        count(plan.projects_per_account, "projects"),
        count(plan.calls_per_minute_per_key, "API calls per minute per key"),
    ]
    lines.append("members, roles and departments" if plan.organization_features else "just you (no members)")
    return lines


def price_of(plan: Plan) -> Price:
    """Stripe's price for a plan it sells (cached), else the plan's own ``monthly_price_cents``."""
    fallback = Price(plan.monthly_price_cents, plan.currency, "month")
    if not plan.stripe_price_id or not stripe_api.configured():
        return fallback
    key = f"mmw:billing:price:{plan.stripe_price_id}"
    cached = cache.get(key)
    if isinstance(cached, Price):
        return cached
    try:
        data = stripe_api.retrieve_price(plan.stripe_price_id)
    except stripe_api.PaymentProviderError:  # a legacy Plan id, or Stripe unreachable: the plan's figure
        cache.set(key, fallback, PRICE_FAILURE_CACHE_SECONDS)
        return fallback
    amount = data.get("unit_amount")
    if not isinstance(amount, int):
        cache.set(key, fallback, PRICE_FAILURE_CACHE_SECONDS)
        return fallback
    price = Price(
        amount,
        str(data.get("currency") or plan.currency),
        str((data.get("recurring") or {}).get("interval") or "month"),
    )
    cache.set(key, price, PRICE_CACHE_SECONDS)
    return price


def plan_offers(plans: list[Plan], state: BillingState) -> list[PlanOffer]:
    """Every offered plan with its price, limits and the action open to an account in ``state``:
    Checkout for a plan Stripe sells (an upgrade or a switch), the customer portal to go back to
    the free plan (cancelling the paid subscription), nothing where payments are off."""
    selling = stripe_api.configured()
    current_cents = price_of(state.plan).cents if state.plan else 0
    offers = []
    for plan in plans:
        price = price_of(plan)
        if plan == state.plan:
            action, label = "current", "Your plan"
        elif selling and plan.stripe_price_id:
            action, label = "checkout", f"{'Upgrade' if price.cents > current_cents else 'Switch'} to {plan.name}"
        elif selling and plan.is_default and state.plan is not None and state.plan.stripe_price_id:
            action, label = "portal", f"Cancel the subscription to return to {plan.name}"
        else:
            action, label = "none", ""
        offers.append(PlanOffer(plan, price, limits_of(plan), plan == state.plan, action, label))
    return offers
