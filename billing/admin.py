"""Support staff's billing tools: plans (editable), subscriptions with suspend / reinstate /
extend-grace actions (each through a service, so each writes an audit row), and read-only
Stripe events and usage snapshots."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import User
from billing import services
from billing.models import Plan, StripeEvent, Subscription, UsageSnapshot
from interfaces.admin import labelled
from mmw.errors import MMWError

EXTRA_GRACE_DAYS = 7

if TYPE_CHECKING:  # ModelAdmin is generic only in django-stubs, not at run time
    PlanBase = admin.ModelAdmin[Plan]
    SubscriptionBase = admin.ModelAdmin[Subscription]
    StripeEventBase = admin.ModelAdmin[StripeEvent]
    UsageSnapshotBase = admin.ModelAdmin[UsageSnapshot]
else:
    PlanBase = SubscriptionBase = StripeEventBase = UsageSnapshotBase = admin.ModelAdmin

labelled(Plan, _("plan"), _("plans"))
labelled(Subscription, _("subscription"), _("subscriptions"))
labelled(StripeEvent, _("Stripe event"), _("Stripe events"))
labelled(UsageSnapshot, _("usage snapshot"), _("usage snapshots"))


@admin.register(Plan)
class PlanAdmin(PlanBase):
    list_display = (
        "name",
        "code",
        "stripe_price_id",
        "records_per_project",
        "projects_per_account",
        "calls_per_minute_per_key",
        "calls_per_minute_per_project",
        "organization_features",
        "is_default",
        "is_active",
    )
    list_editable = ("is_active",)
    ordering = ("sort_order",)


def _staff(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


def _each(
    modeladmin: SubscriptionBase,
    request: HttpRequest,
    queryset: QuerySet[Subscription],
    action: Any,
    done: Any,
) -> None:
    count = 0
    for sub in queryset.select_related("account"):
        try:
            action(sub)
            count += 1
        except MMWError as exc:
            modeladmin.message_user(request, f"{sub.account}: {exc.message}", messages.WARNING)
    modeladmin.message_user(request, gettext("%(done)s: %(count)d") % {"done": done, "count": count})


@admin.action(description=_("Suspend the selected accounts (read-only until reinstated)"))
def suspend(modeladmin: SubscriptionBase, request: HttpRequest, queryset: QuerySet[Subscription]) -> None:
    actor = _staff(request)
    _each(
        modeladmin,
        request,
        queryset,
        lambda s: services.subscription_suspend(account=s.account, actor=actor, reason="admin"),
        _("suspended"),
    )


@admin.action(description=_("Reinstate the selected accounts"))
def reinstate(modeladmin: SubscriptionBase, request: HttpRequest, queryset: QuerySet[Subscription]) -> None:
    actor = _staff(request)
    _each(
        modeladmin,
        request,
        queryset,
        lambda s: services.subscription_reinstate(account=s.account, actor=actor),
        _("reinstated"),
    )


@admin.action(description=format_lazy(_("Extend the grace period by {days} days"), days=EXTRA_GRACE_DAYS))
def extend_grace(modeladmin: SubscriptionBase, request: HttpRequest, queryset: QuerySet[Subscription]) -> None:
    actor = _staff(request)
    _each(
        modeladmin,
        request,
        queryset,
        lambda s: services.subscription_extend_grace(account=s.account, actor=actor, days=EXTRA_GRACE_DAYS),
        _("extended"),
    )


@admin.register(Subscription)
class SubscriptionAdmin(SubscriptionBase):
    list_display = ("account", "plan", "state", "stripe_status", "grace_ends_at", "suspended_by_staff", "updated_at")
    list_filter = ("state", "plan", "stripe_status", "suspended_by_staff")
    search_fields = ("account__tenant_id", "account__name", "stripe_customer_id", "stripe_subscription_id")
    actions = (suspend, reinstate, extend_grace)
    fields = (
        "account",
        "plan",
        "state",
        "grace_ends_at",
        "suspended_at",
        "suspended_by_staff",
        "stripe_customer_id",
        "stripe_subscription_id",
        "stripe_status",
        "current_period_end",
        "cancel_at_period_end",
    )
    readonly_fields = tuple(f for f in fields if f != "plan")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # every account gets its row when it is created

    def has_delete_permission(self, request: HttpRequest, obj: Subscription | None = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Subscription, form: Any, change: bool) -> None:
        """Only the plan is editable here, and it changes through the service (audited)."""
        services.subscription_change_plan(account=obj.account, plan=obj.plan, actor=_staff(request))


class ReadOnly:
    """A record of what happened: support reads it, nobody edits it."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(StripeEvent)
class StripeEventAdmin(ReadOnly, StripeEventBase):
    list_display = ("event_id", "type", "outcome", "account", "created_at", "received_at")
    list_filter = ("type", "outcome")
    search_fields = ("event_id", "account__tenant_id")


@admin.register(UsageSnapshot)
class UsageSnapshotAdmin(ReadOnly, UsageSnapshotBase):
    list_display = ("account", "project", "month", "plan_code", "records", "peak_records", "calls", "projects")
    list_filter = ("month", "plan_code")
    search_fields = ("account__tenant_id", "account__name")
