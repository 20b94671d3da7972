"""Everything that reads billing: an account's plan and state, its notice, banner, usage, invoices."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import Account, Project
from billing import notices, state_cache, stripe_api
from billing.models import Plan, Subscription, UsageSnapshot
from ledger.models import Entry as LedgerEntry
from memories.models import live_count, project_live_counts
from transcripts.selectors import live_turns as _live_turns

State = Subscription.State

# Calls per minute (per key, per project) for an account without a plan: it can still read.
UNPLANNED_CALLS_PER_MINUTE = (60, 120)
WARN_AT_PERCENT = 80


@dataclass(frozen=True)
class BillingState:
    """An account's plan and what it may do now. ``state`` is effective: a grace period whose end
    has passed is ``suspended`` at once, whether or not the beat job has recorded it yet."""

    plan: Plan | None
    state: str
    grace_ends_at: dt.datetime | None
    suspended_by_staff: bool


def default_plan() -> Plan | None:
    """The plan new accounts get and ended subscriptions fall back to (Free), if one is offered."""
    return Plan.objects.filter(is_default=True, is_active=True).first()


def plans_offered() -> list[Plan]:
    return list(Plan.objects.filter(is_active=True))


def billing_state(account: Account, *, now: dt.datetime | None = None) -> BillingState:
    """The account's plan and effective state, read now (one statement)."""
    return effective_state(stored_state(account), now=now)


def stored_state(account: Account) -> BillingState:
    """The subscription as stored (its ``state`` not yet made effective): the default plan for an
    account made before billing existed."""
    sub = Subscription.objects.select_related("plan").filter(account_id=account.pk).first()
    if sub is None:  # an account made before billing existed: it is on the default plan
        plan = default_plan()
        return BillingState(plan, State.ACTIVE if plan else State.NONE, None, False)
    return BillingState(sub.plan, sub.state, sub.grace_ends_at, sub.suspended_by_staff)


def effective_state(stored: BillingState, *, now: dt.datetime | None = None) -> BillingState:
    """``stored`` at ``now``: a grace period whose end has passed is ``suspended``."""
    if (
        stored.state == State.GRACE
        and stored.grace_ends_at is not None
        and stored.grace_ends_at <= (now or timezone.now())
    ):
        return BillingState(stored.plan, State.SUSPENDED, stored.grace_ends_at, stored.suspended_by_staff)
    return stored


def call_billing_state(account: Account) -> BillingState:
    """``billing_state`` for the call gate: the stored row may come from ``billing.state_cache``
    (kept ``MMW_BILLING_CACHE_SECONDS``); the effective state is always computed now."""
    return effective_state(state_cache.CACHE.get_or_read(account.pk, lambda: stored_state(account)))


def has_payment_customer(account: Account) -> bool:
    """Whether Stripe knows this account (a Checkout was started), so its customer portal opens."""
    return Subscription.objects.filter(account_id=account.pk).exclude(stripe_customer_id="").exists()


def billing_url(account: Account) -> str:
    """Where people manage this account's billing (named in every notice and e-mail)."""
    return f"{settings.MMW_BILLING_URL.rstrip('/')}/{account.tenant_id}/"


def notice_of(state: BillingState, account: Account) -> str | None:
    """The ``[MMW Notice]: …`` text while the account in ``state`` may not write, else None (what
    the gatekeeper attaches to calls and the dashboard banner shows)."""
    url = billing_url(account)
    if state.state == State.GRACE and state.grace_ends_at is not None:
        return notices.grace(ends_at=state.grace_ends_at, billing_url=url)
    if state.state == State.SUSPENDED:
        return notices.suspended(billing_url=url, by_staff=state.suspended_by_staff)
    if state.state == State.NONE:
        return notices.no_subscription(billing_url=url)
    return None


def rate_limits(account: Account, state: BillingState | None = None) -> tuple[int | None, int | None]:
    """Calls per minute ``(per key, per project)``; None is unlimited. ``state``: the account's
    billing state when the caller already holds it."""
    plan = (state or billing_state(account)).plan
    if plan is None:
        return UNPLANNED_CALLS_PER_MINUTE
    return plan.calls_per_minute_per_key, plan.calls_per_minute_per_project


def organization_features_allowed(account: Account) -> bool:
    """Whether the account's plan includes members, roles, auditors and departments."""
    plan = billing_state(account).plan
    return bool(plan and plan.organization_features)


@dataclass(frozen=True)
class FeatureGap:
    """Organisation features a plan lacks, and the way forward, for a page to show before the
    click: ``upgrade_to`` is the first offered plan that has them; ``selling`` says the billing page
    can sell it (Stripe on and the plan priced), else plans are assigned by the operator."""

    plan_name: str
    upgrade_to: str | None
    upgrade_code: str | None
    selling: bool


def organization_features_gap(account: Account | None = None) -> FeatureGap | None:
    """None when ``account``'s plan (without an account: the plan a new organisation starts on)
    includes members, roles and departments; else what is missing and where to get it."""
    plan = billing_state(account).plan if account is not None else default_plan()
    if plan is not None and plan.organization_features:
        return None
    better = Plan.objects.filter(is_active=True, organization_features=True).first()
    selling = bool(better and better.stripe_price_id and stripe_api.configured())
    return FeatureGap(
        plan.name if plan else "",
        better.name if better else None,
        better.code if better else None,
        selling,
    )


def live_records(project: Project) -> int:
    """The records that count against the plan: every record not forgotten (a trigger-kept
    counter, memories.models.LiveCount: current as of the last committed write)."""
    return live_count(project_id=project.pk)


def live_turns(project: Project) -> int:
    """The session turns that count against the plan: those of the project's sessions not forgotten."""
    return _live_turns(project_id=project.pk)


def ledger_entries(project: Project) -> int:
    """The ledger entries that count against the plan: all of the project's (append-only)."""
    return LedgerEntry.objects.filter(project=project).count()


# --- usage -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectUsage:
    project: Project
    records: int
    limit: int | None

    @property
    def percent(self) -> int | None:
        return None if not self.limit else (self.records * 100) // self.limit


@dataclass(frozen=True)
class AccountUsage:
    plan: Plan | None
    projects: list[ProjectUsage]
    projects_limit: int | None

    @property
    def records(self) -> int:
        return sum(p.records for p in self.projects)


def usage_for(account: Account) -> AccountUsage:
    plan = billing_state(account).plan
    projects = list(Project.objects.filter(account=account, deleted_at__isnull=True).order_by("name"))
    counts = project_live_counts(p.pk for p in projects)
    limit = plan.records_per_project if plan else None
    return AccountUsage(
        plan=plan,
        projects=[ProjectUsage(p, counts.get(p.pk, 0), limit) for p in projects],
        projects_limit=plan.projects_per_account if plan else None,
    )


def usage_history(account: Account, *, months: int = 12) -> list[UsageSnapshot]:
    """The account's monthly totals (the rows without a project), oldest first, for charts."""
    rows = UsageSnapshot.objects.filter(account=account, project__isnull=True).order_by("-month")[:months]
    return list(reversed(rows))


# --- banner ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Banner:
    """What the dashboard shows at the top of every page of this account."""

    level: str  # "danger" | "warning"
    text: str  # the notice agents get (without its "[MMW Notice]: " prefix), or the usage warning
    action_url: str
    action_label: str
    headline: str = ""  # the same in people's words, what the dashboard shows

    @property
    def for_people(self) -> str:
        return self.headline or self.text[:1].upper() + self.text[1:] + "."


def banner_for(account: Account) -> Banner | None:
    """The most important billing message for the dashboard, or None when all is well."""
    state = billing_state(account)
    url = billing_url(account)
    notice = notice_of(state, account)
    if notice is not None:
        level = "warning" if state.state == State.GRACE else "danger"
        label = gettext("Choose a plan") if state.state == State.NONE else gettext("Update payment")
        label = label if stripe_api.configured() else gettext("See billing")  # nothing to pay on this server
        headline = notices.for_people(
            state=state.state, grace_ends_at=state.grace_ends_at, by_staff=state.suspended_by_staff
        )
        return Banner(level, notice.removeprefix(notices.PREFIX), url, label, headline)
    usage = usage_for(account)
    full = [p for p in usage.projects if p.percent is not None and p.percent >= WARN_AT_PERCENT]
    if full:
        worst = max(full, key=lambda p: p.records)
        return Banner(
            "danger" if (worst.percent or 0) >= 100 else "warning",
            f"project {worst.project.name} uses {worst.records} of its {worst.limit} records",
            url,
            gettext("Upgrade") if stripe_api.configured() else gettext("See plans"),
            gettext("Project %(project)s uses %(records)s of its %(limit)s records.")
            % {"project": worst.project.name, "records": worst.records, "limit": worst.limit},
        )
    return None


# --- Stripe reads ------------------------------------------------------------------------


@dataclass(frozen=True)
class InvoiceSummary:
    id: str
    number: str | None
    status: str | None
    amount_due: int
    currency: str
    created: dt.datetime | None
    hosted_invoice_url: str | None
    invoice_pdf: str | None

    @property
    def amount(self) -> str:
        return f"{self.amount_due / 100:.2f} {self.currency.upper()}"


def invoices_for(account: Account, *, limit: int = 24) -> list[InvoiceSummary]:
    """The account's invoices, newest first, read from Stripe (none before its first checkout)."""
    sub = Subscription.objects.filter(account_id=account.pk).first()
    if sub is None or not sub.stripe_customer_id:
        return []
    page = stripe_api.call(
        stripe_api.client().v1.invoices.list, params={"customer": sub.stripe_customer_id, "limit": limit}
    )
    return sorted((_invoice(i) for i in page.get("data", [])), key=_newest_first)


def _invoice(data: dict[str, Any]) -> InvoiceSummary:
    return InvoiceSummary(
        id=data["id"],
        number=data.get("number"),
        status=data.get("status"),
        amount_due=int(data.get("amount_due") or 0),
        currency=str(data.get("currency") or ""),
        created=stripe_api.timestamp(data.get("created")),
        hosted_invoice_url=data.get("hosted_invoice_url"),
        invoice_pdf=data.get("invoice_pdf"),
    )


def _newest_first(invoice: InvoiceSummary) -> float:
    return -(invoice.created.timestamp() if invoice.created else 0.0)
