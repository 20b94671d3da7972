"""Everything that writes billing state: subscriptions driven by Stripe, staff actions, checkout.

State changes happen only here, each in a transaction holding the account's ``Subscription``
row (``SELECT … FOR UPDATE``), each with an audit row and, where people must know, an e-mail.
Stripe is always re-read under that lock, so whatever order webhooks arrive in, the last one
applied reflects Stripe's current truth.

Why one module of this length: every billing write shares that one locking rule and its audit;
keeping them together keeps the rule visible (the reads are ``billing.selectors``, Stripe's
events ``billing.webhooks``).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, User
from accounts.services import audit_record
from billing import emails, notices, selectors, stripe_api
from billing.models import Plan, Subscription
from mmw.errors import Forbidden, InvalidInput, NotFound
from orgs.selectors import active_membership

logger = logging.getLogger(__name__)

State = Subscription.State
PAID = frozenset({"active", "trialing"})
LATE = frozenset({"past_due", "unpaid"})
LIVE = PAID | LATE
ENDED = frozenset({"canceled", "incomplete_expired"})


def subscription_open(*, account: Account) -> Subscription:
    """The account's subscription row, made on first need: a new account gets the default (Free)
    plan where the deployment offers one, else no subscription."""
    sub = Subscription.objects.filter(account=account).first()
    if sub is not None:
        return sub
    plan = selectors.default_plan()
    sub, _ = Subscription.objects.get_or_create(
        account=account, defaults={"plan": plan, "state": State.ACTIVE if plan else State.NONE}
    )
    return sub


def _locked(account: Account) -> Subscription:
    subscription_open(account=account)
    return Subscription.objects.select_for_update(of=("self",)).select_related("plan", "account").get(account=account)


def _audit(sub: Subscription, action: str, actor: User | None = None, **data: Any) -> None:
    audit_record(
        action=f"billing.{action}",
        account=sub.account,
        actor_user=actor,
        target_type="subscription",
        target_id=str(sub.pk),
        data={"state": sub.state, "plan": sub.plan.code if sub.plan else None, **data},
    )


# --- Stripe-driven changes ---------------------------------------------------------------


@transaction.atomic
def subscription_link_customer(*, account: Account, customer_id: str) -> bool:
    """Record the account's Stripe customer (from a completed Checkout); False if it already has
    another one, which is left as it is and logged."""
    sub = _locked(account)
    if sub.stripe_customer_id == customer_id:
        return True
    if sub.stripe_customer_id:
        logger.error("account %s has customer %s, not %s", account.tenant_id, sub.stripe_customer_id, customer_id)
        return False
    sub.stripe_customer_id = customer_id
    sub.save(update_fields=["stripe_customer_id", "updated_at"])
    return True


@transaction.atomic
def subscription_sync(*, account: Account, stripe_subscription_id: str, now: dt.datetime | None = None) -> str:
    """Re-read one Stripe subscription and apply it to the account; return what happened.

    A subscription other than the account's current one is adopted only while live (a new
    Checkout); the one it replaces is cancelled at Stripe. Stale news about an old subscription
    (``stale``) changes nothing."""
    sub = _locked(account)
    data = stripe_api.retrieve_subscription(stripe_subscription_id)
    return _apply(sub, data, now or timezone.now())


def _apply(sub: Subscription, data: dict[str, Any], now: dt.datetime) -> str:
    status = str(data.get("status") or "")
    news = status != sub.stripe_status
    adopted = data["id"] != sub.stripe_subscription_id
    if adopted:
        if status not in LIVE:
            return "stale"
        news = True
        previous = sub.stripe_subscription_id if sub.stripe_status in LIVE else ""
        sub.stripe_subscription_id = data["id"]
        if previous:
            stripe_api.cancel_subscription(previous)
            _audit(sub, "subscription_replaced", previous=previous, current=data["id"])
    plan_before = sub.plan
    sub.stripe_status = status
    sub.current_period_end = stripe_api.period_end(data)
    sub.cancel_at_period_end = bool(data.get("cancel_at_period_end"))
    if status in PAID:
        _set_plan(sub, _plan_for(data, sub))
        outcome = _activate(sub)
    elif status in LATE:
        _set_plan(sub, _plan_for(data, sub))
        outcome = _start_grace(sub, now)
    elif status in ENDED or status == "paused":
        outcome = _end(sub, keep_subscription=status == "paused") if news else "unchanged"
    else:  # incomplete: the first payment is not settled yet; nothing changes until it is
        outcome = "pending"
    sub.save()
    if outcome == "unchanged" and (adopted or sub.plan != plan_before):
        return "subscribed" if adopted else "plan_changed"
    return outcome


def _plan_for(data: dict[str, Any], sub: Subscription) -> Plan | None:
    price = stripe_api.price_id(data)
    plan = Plan.objects.filter(stripe_price_id=price).first() if price else None
    if plan is None:
        logger.error("Stripe subscription %s bills price %s, which no plan sells", data["id"], price)
        return sub.plan
    return plan


def _set_plan(sub: Subscription, plan: Plan | None, actor: User | None = None) -> None:
    if plan != sub.plan:
        before = sub.plan.code if sub.plan else None
        sub.plan = plan
        _audit(sub, "plan_changed", actor, previous=before)


def _activate(sub: Subscription) -> str:
    if sub.suspended_by_staff or sub.state == State.ACTIVE:
        return "unchanged"
    before = sub.state
    sub.state, sub.grace_ends_at, sub.suspended_at = State.ACTIVE, None, None
    _audit(sub, "reactivated" if before in (State.GRACE, State.SUSPENDED) else "subscribed", previous=before)
    url = selectors.billing_url(sub.account)
    emails.notify_account(
        sub.account,
        compose=lambda: (
            _("Your subscription is active"),
            _("Thank you: the %(plan)s plan is active and MMW accepts writes again.") % {"plan": sub.plan}
            + "\n\n"
            + _("Billing: %(url)s") % {"url": url}
            + "\n",
        ),
    )
    return "activated"


def _start_grace(sub: Subscription, now: dt.datetime) -> str:
    if sub.suspended_by_staff or sub.state in (State.GRACE, State.SUSPENDED):
        return "unchanged"
    sub.state = State.GRACE
    sub.grace_ends_at = now + dt.timedelta(days=settings.MMW_BILLING_GRACE_DAYS)
    _audit(sub, "grace_started", grace_ends_at=sub.grace_ends_at.isoformat())
    ends_at, url = sub.grace_ends_at, selectors.billing_url(sub.account)
    emails.notify_account(
        sub.account,
        compose=lambda: (
            _("Payment failed: MMW is read-only"),
            f"{notices.grace(ends_at=ends_at, billing_url=url, people=True)}\n",
        ),
    )
    return "grace_started"


def _end(sub: Subscription, *, keep_subscription: bool) -> str:
    """The subscription ended (or is paused): fall back to the default plan, else no subscription."""
    if not keep_subscription:
        sub.stripe_subscription_id = ""
    fallback = selectors.default_plan()
    _set_plan(sub, fallback)
    if sub.suspended_by_staff:
        return "unchanged"
    before = sub.state
    sub.state = State.ACTIVE if fallback else State.NONE
    sub.grace_ends_at = sub.suspended_at = None
    _audit(sub, "subscription_ended", previous=before, stripe_status=sub.stripe_status)
    url = selectors.billing_url(sub.account)

    def compose() -> tuple[str, str]:
        body = (
            _("Your paid subscription has ended; the account is now on the %(plan)s plan.") % {"plan": fallback}
            + "\n\n"
            + _("Billing: %(url)s") % {"url": url}
            + "\n"
            if fallback
            else f"{notices.no_subscription(billing_url=url, people=True)}\n"
        )
        return _("Your subscription has ended"), body

    emails.notify_account(sub.account, compose=compose)
    return "ended"


# --- beat --------------------------------------------------------------------------------


def subscriptions_expire_grace(*, now: dt.datetime | None = None) -> int:
    """Suspend every account whose grace period has ended unpaid; return how many."""
    now = now or timezone.now()
    due = Subscription.objects.filter(state=State.GRACE, grace_ends_at__lte=now).values_list("pk", flat=True)
    return sum(_suspend_if_due(pk, now) for pk in list(due))


@transaction.atomic
def _suspend_if_due(pk: int, now: dt.datetime) -> bool:
    sub = (
        Subscription.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("account", "plan")
        .filter(pk=pk, state=State.GRACE, grace_ends_at__lte=now)
        .first()
    )
    if sub is None:
        return False
    sub.state, sub.suspended_at = State.SUSPENDED, now
    sub.save(update_fields=["state", "suspended_at", "updated_at"])
    _audit(sub, "suspended", reason="grace period ended unpaid")
    url = selectors.billing_url(sub.account)
    emails.notify_account(
        sub.account,
        compose=lambda: (
            _("MMW account suspended"),
            f"{notices.suspended(billing_url=url, by_staff=False, people=True)}\n",
        ),
    )
    return True


# --- support staff -----------------------------------------------------------------------


@transaction.atomic
def subscription_suspend(*, account: Account, actor: User, reason: str = "") -> Subscription:
    """Suspend by support: read-only until reinstated, whatever Stripe says."""
    sub = _locked(account)
    if sub.suspended_by_staff:
        return sub
    sub.state, sub.suspended_by_staff, sub.suspended_at = State.SUSPENDED, True, timezone.now()
    sub.save()
    _audit(sub, "staff_suspended", actor, reason=reason)
    url = selectors.billing_url(account)
    emails.notify_account(
        account,
        compose=lambda: (
            _("MMW account suspended"),
            f"{notices.suspended(billing_url=url, by_staff=True, people=True)}\n",
        ),
    )
    return sub


@transaction.atomic
def subscription_reinstate(*, account: Account, actor: User) -> Subscription:
    """Lift a suspension (by staff or for non-payment): active again, or no subscription if it
    has no plan. Stripe's next news about a late payment starts a new grace period."""
    sub = _locked(account)
    if sub.state == State.ACTIVE and not sub.suspended_by_staff:
        return sub
    before = sub.state
    sub.suspended_by_staff = False
    sub.state = State.ACTIVE if sub.plan else State.NONE
    sub.grace_ends_at = sub.suspended_at = None
    sub.save()
    _audit(sub, "staff_reinstated", actor, previous=before)
    url = selectors.billing_url(account)
    emails.notify_account(
        account,
        compose=lambda: (
            _("MMW account reinstated"),
            _("Support has reinstated this account; writes work again.")
            + "\n\n"
            + _("Billing: %(url)s") % {"url": url}
            + "\n",
        ),
    )
    return sub


@transaction.atomic
def subscription_extend_grace(*, account: Account, actor: User, days: int) -> Subscription:
    """Give a late payer ``days`` more (from now, or from the current end if later); an account
    suspended for non-payment goes back into its grace period."""
    if days < 1:
        raise InvalidInput("days must be at least 1")
    sub = _locked(account)
    if sub.suspended_by_staff or sub.state not in (State.GRACE, State.SUSPENDED):
        raise InvalidInput("only an account in a grace period or suspended for non-payment can get more time")
    now = timezone.now()
    start = max(now, sub.grace_ends_at) if sub.grace_ends_at else now
    sub.state, sub.grace_ends_at, sub.suspended_at = State.GRACE, start + dt.timedelta(days=days), None
    sub.save()
    _audit(sub, "grace_extended", actor, days=days, grace_ends_at=sub.grace_ends_at.isoformat())
    ends_at, url = sub.grace_ends_at, selectors.billing_url(account)
    emails.notify_account(
        account,
        compose=lambda: (
            _("Grace period extended"),
            f"{notices.grace(ends_at=ends_at, billing_url=url, people=True)}\n",
        ),
    )
    return sub


@transaction.atomic
def subscription_change_plan(*, account: Account, plan: Plan | None, actor: User) -> Subscription:
    """Put the account on ``plan`` by hand (support: a complimentary plan, a correction)."""
    sub = _locked(account)
    _set_plan(sub, plan, actor)
    if plan is None and sub.state == State.ACTIVE:
        sub.state = State.NONE
    elif plan is not None and sub.state == State.NONE:
        sub.state = State.ACTIVE
    sub.save()
    return sub


@transaction.atomic
def plan_make_default(*, plan: Plan, move_accounts: bool = False, actor: User | None = None) -> int:
    """Make ``plan`` the one new accounts start on (and ended subscriptions fall back to); the
    operator's choice on a server that sells nothing (``manage.py default_plan``). With
    ``move_accounts``, every account still on the previous default plan, or left without a plan,
    and paying nothing through Stripe moves to ``plan`` (one ``billing.plan_changed`` row each);
    accounts that pay, or that support put on another plan, stay where they are. Returns how many
    moved."""
    previous = selectors.default_plan()
    Plan.objects.filter(is_default=True).exclude(pk=plan.pk).update(is_default=False)
    if not plan.is_default or not plan.is_active:
        plan.is_default, plan.is_active = True, True
        plan.save(update_fields=["is_default", "is_active", "updated_at"])
    if not move_accounts:
        return 0
    on_old = Q(plan__isnull=True) | (Q(plan=previous) if previous is not None and previous != plan else Q(pk__in=[]))
    paying = Q(stripe_status__in=LIVE) & ~Q(stripe_subscription_id="")
    moved = 0
    for pk in Subscription.objects.filter(on_old).exclude(paying).values_list("pk", flat=True):
        sub = Subscription.objects.select_for_update(of=("self",)).select_related("account", "plan").get(pk=pk)
        _set_plan(sub, plan, actor)
        if sub.state == State.NONE:
            sub.state = State.ACTIVE
        sub.save()
        moved += 1
    return moved


# --- Checkout and the customer portal ----------------------------------------------------


def _require_billing_manager(account: Account, actor: User) -> None:
    membership = active_membership(account=account, user=actor)
    if membership is None:
        raise NotFound("account not found")
    if not membership.manages:
        raise Forbidden("403 Forbidden: only owners and admins manage billing")


@transaction.atomic
def _ensure_customer(account: Account, actor: User) -> str:
    sub = _locked(account)
    if not sub.stripe_customer_id:
        customer = stripe_api.call(
            stripe_api.client().v1.customers.create,
            params={"email": actor.email, "name": account.name, "metadata": {"tenant_id": account.tenant_id}},
            options={"idempotency_key": f"mmw-customer-{account.tenant_id}"},
        )
        sub.stripe_customer_id = customer["id"]
        sub.save(update_fields=["stripe_customer_id", "updated_at"])
        _audit(sub, "customer_created", actor, customer=customer["id"])
    return sub.stripe_customer_id


def billing_checkout_start(*, account: Account, plan: Plan, actor: User, success_url: str, cancel_url: str) -> str:
    """Open a Stripe Checkout session for ``plan``; return its URL. Paying there sends
    ``checkout.session.completed``, which makes the new subscription the account's (and cancels
    a previous one: an upgrade or downgrade is a new Checkout)."""
    _require_billing_manager(account, actor)
    if not plan.is_active or not plan.stripe_price_id:
        raise InvalidInput(f"the {plan.name} plan cannot be bought")
    customer = _ensure_customer(account, actor)
    session = stripe_api.call(
        stripe_api.client().v1.checkout.sessions.create,
        params={
            "mode": "subscription",
            "customer": customer,
            "client_reference_id": account.tenant_id,
            "line_items": [{"price": plan.stripe_price_id, "quantity": 1}],
            "subscription_data": {"metadata": {"tenant_id": account.tenant_id, "plan": plan.code}},
            "success_url": success_url,
            "cancel_url": cancel_url,
        },
    )
    return str(session["url"])


def billing_portal_start(*, account: Account, actor: User, return_url: str) -> str:
    """Open Stripe's customer portal (card, invoices, cancellation); return its URL."""
    _require_billing_manager(account, actor)
    client = stripe_api.client()  # billing off: BillingNotConfigured before anything else
    sub = subscription_open(account=account)
    if not sub.stripe_customer_id:
        raise InvalidInput("this account has no billing details yet: choose a plan first")
    session = stripe_api.call(
        client.v1.billing_portal.sessions.create,
        params={"customer": sub.stripe_customer_id, "return_url": return_url},
    )
    return str(session["url"])


def subscription_end_for_purge(account: Account) -> None:
    """An account is being purged for good (``datarights.deletion``): cancel its live Stripe
    subscription now (prorated), so a deleted account is never charged again. Raises
    ``PaymentProviderError`` when Stripe does not answer — the purge waits for the next run."""
    sub = Subscription.objects.filter(account=account).first()
    if sub is None or not sub.stripe_subscription_id or sub.stripe_status not in LIVE:
        return
    stripe_api.cancel_subscription(sub.stripe_subscription_id)
    # No audit row: the account's audit log is purged with it; the purge's own row stays.
    logger.info("Stripe subscription %s cancelled: account %s purged", sub.stripe_subscription_id, account.tenant_id)
