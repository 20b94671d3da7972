"""What the billing page shows people about plans: prices (Stripe's where it sells the plan, else
the plan's own figures), limits written out, and what each plan's button does for this account."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal

from babel.numbers import format_decimal
from django.core.cache import cache
from django.utils.translation import get_language, gettext, ngettext, to_locale

from billing import stripe_api
from billing.models import Plan
from billing.selectors import BillingState

logger = logging.getLogger(__name__)

PRICE_CACHE_SECONDS = 600  # a price edited in Stripe shows within ten minutes
# Stripe unreachable (or the id not a Price): the plan's own figure is shown, and Stripe is asked
# again a minute later, not on every view (each attempt can take seconds when it does not answer).
PRICE_FAILURE_CACHE_SECONDS = 60
_SYMBOLS = {"usd": "$", "eur": "€", "gbp": "£"}


def _per(interval: str) -> str:
    per = {"month": gettext("month"), "year": gettext("year"), "week": gettext("week"), "day": gettext("day")}
    return per.get(interval, interval)


@dataclass(frozen=True)
class Price:
    cents: int
    currency: str
    interval: str  # "month", "year", …

    @property
    def text(self) -> str:
        """``Free``, ``$19 / month``, ``€190 / year``, ``19.50 CHF / month``; in Russian and French
        the locale's digits and the symbol after the amount (``1 000 € / mois``), never rounded."""
        if self.cents == 0:
            return gettext("Free")
        symbol = _SYMBOLS.get(self.currency.lower())
        language = get_language() or "en"
        if language.startswith("en"):
            amount = f"{self.cents // 100:,}" if self.cents % 100 == 0 else f"{self.cents / 100:,.2f}"
            money = f"{symbol}{amount}" if symbol else f"{amount} {self.currency.upper()}"
        else:
            exact = Decimal(self.cents) / 100
            pattern = "#,##0" if self.cents % 100 == 0 else "#,##0.00"
            amount = format_decimal(exact, format=pattern, locale=to_locale(language))
            money = f"{amount}\u00a0{symbol or self.currency.upper()}"
        return f"{money} / {_per(self.interval)}"


@dataclass(frozen=True)
class PlanOffer:
    """One plan as the billing page shows it to one account."""

    plan: Plan
    price: Price
    limits: list[str]
    current: bool
    action: str  # "current" | "checkout" | "portal" (back to the free plan) | "none"
    action_label: str


def _number(value: int) -> str:
    """``50,000`` in English, ``50 000`` in Russian and French (the locale's grouping)."""
    language = get_language() or "en"
    return f"{value:,}" if language.startswith("en") else format_decimal(value, locale=to_locale(language))


def limits_of(plan: Plan) -> list[str]:
    """``50,000 records per project`` or ``unlimited records per project``, …"""
    records, turns, entries = plan.records_per_project, plan.turns_per_project, plan.ledger_entries_per_project
    projects, calls = plan.projects_per_account, plan.calls_per_minute_per_key
    return [
        gettext("unlimited records per project")
        if records is None
        else ngettext("%(count)s record per project", "%(count)s records per project", records)
        % {"count": _number(records)},
        gettext("unlimited session turns per project")
        if turns is None
        else ngettext("%(count)s session turn per project", "%(count)s session turns per project", turns)
        % {"count": _number(turns)},
        gettext("unlimited ledger entries per project")
        if entries is None
        else ngettext("%(count)s ledger entry per project", "%(count)s ledger entries per project", entries)
        % {"count": _number(entries)},
        gettext("unlimited projects")
        if projects is None
        else ngettext("%(count)s project", "%(count)s projects", projects) % {"count": _number(projects)},
        gettext("unlimited API calls per minute per key")
        if calls is None
        else ngettext("%(count)s API call per minute per key", "%(count)s API calls per minute per key", calls)
        % {"count": _number(calls)},
        gettext("members, roles and departments") if plan.organization_features else gettext("just you (no members)"),
    ]


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
            action, label = "current", gettext("Your plan")
        elif selling and plan.stripe_price_id:
            upgrade = price.cents > current_cents
            label = gettext("Upgrade to %(plan)s") if upgrade else gettext("Switch to %(plan)s")
            action, label = "checkout", label % {"plan": plan.name}
        elif selling and plan.is_default and state.plan is not None and state.plan.stripe_price_id:
            action = "portal"
            label = gettext("Cancel the subscription to return to %(plan)s") % {"plan": plan.name}
        else:
            action, label = "none", ""
        offers.append(PlanOffer(plan, price, limits_of(plan), plan == state.plan, action, label))
    return offers
