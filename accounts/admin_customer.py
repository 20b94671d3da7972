"""The admin's customer page: one account on one page, for a support desk answering a ticket
("my key stopped working and search returns nothing") without hopping between lists.

It shows the plan and the subscription's state, a pending deletion, members and roles, open
invitations, projects with their records against the plan, every key (prefix, holder, last use,
calls this month, state) with the refused calls each key met (``accounts.RefusedCall``: reason,
how many, first and last), webhooks with their failures, and usage. Read-only: every action
stays where it was (a key's *Revoke*, the subscription's actions), linked from here.

Reached from the account list (a search that names one account opens it) and from
``/admin/accounts/account/<id>/customer/``; staff need the account's view permission.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Account, ApiKey, AuditEvent, Project, RefusedCall
from accounts.refusals import SUPPORT_TEXTS
from billing import counters, gate
from billing import selectors as billing_selectors
from billing.models import Subscription, UsageSnapshot
from datarights.models import AccountDeletion
from orgs.models import Invitation, Membership
from webhooks.models import WebhookDelivery, WebhookEndpoint

REFUSED_DAYS = 30  # refused calls shown: those whose last one is this recent
WEBHOOK_FAILURES = 10  # the newest failed deliveries shown
_REASONS = {reason.value: text for reason, text in SUPPORT_TEXTS.items()}
# A key's and an account's state in the staff member's language (the English is the code itself).
STATE_LABELS = {
    "active": _("active"),
    "revoked": _("revoked"),
    "expired": _("expired"),
    "grace": _("grace"),
    "suspended": _("suspended"),
    "none": _("none"),
}


@dataclass(frozen=True)
class KeyRow:
    key: ApiKey
    state: str  # "active" | "revoked" | "expired"
    calls_this_month: int
    matched: bool  # the key the search named

    @property
    def state_label(self) -> str:
        return str(STATE_LABELS.get(self.state, self.state))


@dataclass(frozen=True)
class RefusedRow:
    prefix: str
    holder: str
    reason: str
    count: int
    first_at: dt.datetime
    last_at: dt.datetime


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    records: int
    limit: int | None
    calls_this_month: int


@dataclass(frozen=True)
class WebhookRow:
    endpoint: WebhookEndpoint
    failed: int  # deliveries given up
    pending: int


@dataclass(frozen=True)
class Customer:
    account: Account
    subscription: Subscription | None
    state: billing_selectors.BillingState
    notice: str | None
    deletion: AccountDeletion | None
    members: list[Membership]
    invitations: list[Invitation]
    projects: list[ProjectRow]
    keys: list[KeyRow]
    refused: list[RefusedRow]
    webhooks: list[WebhookRow]
    webhook_failures: list[WebhookDelivery]
    snapshots: list[UsageSnapshot]
    recent_audit: list[AuditEvent]

    @property
    def calls_this_month(self) -> int:
        return sum(p.calls_this_month for p in self.projects)

    @property
    def state_label(self) -> str:
        return str(STATE_LABELS.get(self.state.state, self.state.state))


def key_state(key: ApiKey) -> str:
    if key.revoked_at is not None:
        return "revoked"
    return "expired" if key.is_expired else "active"


def customer(account: Account, *, prefix: str | None = None) -> Customer:
    """Everything the page shows about ``account`` (``prefix``: a key the search named)."""
    month = timezone.now().strftime("%Y%m")
    usage = billing_selectors.usage_for(account)
    keys = list(ApiKey.objects.filter(account=account).select_related("user", "project").order_by("-created_at", "-pk"))
    since = timezone.now() - dt.timedelta(days=REFUSED_DAYS)
    refused = (
        RefusedCall.objects.filter(account=account, last_at__gte=since)
        .select_related("api_key__user")
        .order_by("-last_at")[:100]
    )
    endpoints = WebhookEndpoint.objects.filter(project__account=account).select_related("project")
    counted = endpoints.annotate(
        failed=Count("deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.GAVE_UP)),
        pending=Count("deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.PENDING)),
    ).order_by("-created_at")
    state = billing_selectors.billing_state(account)
    return Customer(
        account=account,
        subscription=Subscription.objects.select_related("plan").filter(account=account).first(),
        state=state,
        notice=billing_selectors.notice_of(state, account),
        deletion=AccountDeletion.objects.filter(account=account, cancelled_at__isnull=True)
        .select_related("requested_by")
        .first(),
        members=list(Membership.objects.filter(account=account).select_related("user").order_by("created_at")),
        invitations=list(
            Invitation.objects.filter(account=account, accepted_at__isnull=True, revoked_at__isnull=True).order_by(
                "-created_at"
            )
        ),
        projects=[ProjectRow(p.project, p.records, p.limit, _project_calls(p.project, month)) for p in usage.projects],
        keys=[
            KeyRow(k, key_state(k), counters.peek(gate.monthly_key_calls_bucket(k.pk, month)), k.prefix == prefix)
            for k in keys
        ],
        refused=[
            RefusedRow(
                prefix=f"mmw_{r.api_key.prefix}…",
                holder=r.api_key.user.email,
                reason=_REASONS.get(r.reason, r.reason),
                count=r.count,
                first_at=r.first_at,
                last_at=r.last_at,
            )
            for r in refused
        ],
        webhooks=[WebhookRow(e, e.failed, e.pending) for e in counted],
        webhook_failures=list(
            WebhookDelivery.objects.filter(endpoint__in=endpoints, status=WebhookDelivery.Status.GAVE_UP)
            .select_related("endpoint")
            .order_by("-created_at")[:WEBHOOK_FAILURES]
        ),
        snapshots=list(UsageSnapshot.objects.filter(account=account, project__isnull=True).order_by("-month")[:6]),
        recent_audit=list(
            AuditEvent.objects.filter(account=account).select_related("actor_user").order_by("-created_at")[:10]
        ),
    )


def _project_calls(project: Project, month: str) -> int:
    return counters.peek(gate.monthly_calls_bucket(str(project.pk), month))


def context(account: Account, prefix: str | None) -> dict[str, Any]:
    data = customer(account, prefix=prefix)
    return {"customer": data, "usage_limit_projects": billing_selectors.usage_for(account).projects_limit}
