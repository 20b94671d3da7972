"""Plans, each account's subscription, Stripe's delivered events, usage and rate counters."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Account, Project


class Plan(models.Model):
    """What a subscription buys. Data, edited by staff in the admin; ``None`` limits are unlimited."""

    code = models.SlugField(max_length=32, unique=True, help_text=_("Stable identifier, e.g. free, pro, team."))
    name = models.CharField(max_length=100)
    stripe_price_id = models.CharField(
        max_length=255,
        blank=True,
        help_text=_("The Stripe Price (or legacy Plan) id Checkout sells; empty for a plan that is not sold."),
    )
    monthly_price_cents = models.PositiveIntegerField(
        default=0, help_text=_("Shown to people; Stripe bills the price.")
    )
    currency = models.CharField(max_length=3, default="usd")
    records_per_project = models.PositiveIntegerField(null=True, blank=True, help_text=_("Empty: unlimited."))
    turns_per_project = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Uploaded session turns per project (docs/sessions.md). Empty: unlimited.")
    )
    ledger_entries_per_project = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Ledger entries per project (docs/ledger.md). Empty: unlimited.")
    )
    projects_per_account = models.PositiveIntegerField(null=True, blank=True, help_text=_("Empty: unlimited."))
    calls_per_minute_per_key = models.PositiveIntegerField(null=True, blank=True, help_text=_("Empty: unlimited."))
    calls_per_minute_per_project = models.PositiveIntegerField(null=True, blank=True, help_text=_("Empty: unlimited."))
    organization_features = models.BooleanField(default=False, help_text=_("Members, roles, auditors and departments."))
    is_default = models.BooleanField(
        default=False,
        help_text=_(
            "New accounts start on this plan and ended subscriptions fall back to it (the Free plan). "
            "At most one; with none (or an inactive one) such accounts have no subscription."
        ),
    )
    is_active = models.BooleanField(default=True, help_text=_("Offered to new subscribers."))
    sort_order = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sort_order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="plan_one_default"),
            models.UniqueConstraint(
                fields=["stripe_price_id"], condition=~Q(stripe_price_id=""), name="plan_stripe_price_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Subscription(models.Model):
    """One per account: its plan, its access state, and the Stripe objects behind it.

    ``state`` is what MMW allows (Stripe's own status is kept in ``stripe_status``):
    ``active`` — everything within the plan's limits; ``grace`` — a payment failed, read-only until
    ``grace_ends_at``; ``suspended`` — grace ended unpaid (or staff suspended it), read-only;
    ``none`` — no subscription (ended, and the deployment offers no Free plan), read-only.
    """

    class State(models.TextChoices):
        ACTIVE = "active", _("Active")
        GRACE = "grace", _("Grace period")
        SUSPENDED = "suspended", _("Suspended")
        NONE = "none", _("No subscription")

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="subscription")
    plan = models.ForeignKey(Plan, null=True, blank=True, on_delete=models.PROTECT, related_name="subscriptions")
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    grace_ends_at = models.DateTimeField(null=True, blank=True)
    suspended_at = models.DateTimeField(null=True, blank=True)
    suspended_by_staff = models.BooleanField(
        default=False, help_text=_("Suspended by support: a payment does not lift it, only a reinstatement.")
    )
    stripe_customer_id = models.CharField(max_length=255, blank=True)
    stripe_subscription_id = models.CharField(max_length=255, blank=True, db_index=True)
    stripe_status = models.CharField(max_length=32, blank=True, help_text=_("Stripe's status, as last read."))
    current_period_end = models.DateTimeField(null=True, blank=True)
    cancel_at_period_end = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["stripe_customer_id"], condition=~Q(stripe_customer_id=""), name="subscription_customer_unique"
            ),
            models.CheckConstraint(
                condition=~Q(state="grace") | Q(grace_ends_at__isnull=False), name="subscription_grace_has_end"
            ),
        ]

    def __str__(self) -> str:
        plan = self.plan or gettext("no plan")
        return f"{self.account} — {plan} ({self.get_state_display()})"


class StripeEvent(models.Model):
    """A webhook event already handled: a second delivery of the same id changes nothing."""

    event_id = models.CharField(max_length=255, unique=True)
    type = models.CharField(max_length=100)
    account = models.ForeignKey(Account, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    outcome = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(null=True, blank=True, help_text=_("When Stripe created the event."))
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.event_id} {self.type} ({self.outcome})"


class UsageSnapshot(models.Model):
    """Usage of one project (or, with no project, the whole account) in one calendar month.

    The beat job rewrites the current month's rows, so each holds the month's latest figures and
    the peak record count; past months stay as they were when the month ended."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="usage_snapshots")
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="usage_snapshots"
    )
    month = models.DateField(help_text=_("The first day of the month."))
    plan_code = models.CharField(max_length=32, blank=True)
    records = models.PositiveIntegerField(default=0)
    peak_records = models.PositiveIntegerField(default=0)
    calls = models.PositiveBigIntegerField(default=0)
    projects = models.PositiveIntegerField(default=0)
    taken_at = models.DateTimeField()

    class Meta:
        ordering = ["account", "month"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "project", "month"], nulls_distinct=False, name="usage_snapshot_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.account_id}/{self.project_id or '*'} {self.month:%Y-%m}"


class QuotaAlert(models.Model):
    """An 80 % / 100 % warning already e-mailed; deleted when usage drops below, to re-arm it."""

    class Metric(models.TextChoices):
        RECORDS = "records", _("Records per project")
        PROJECTS = "projects", _("Projects per account")

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=16, choices=Metric.choices)
    threshold = models.PositiveSmallIntegerField()
    used = models.PositiveIntegerField()
    limit = models.PositiveIntegerField()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "project", "metric", "threshold"], nulls_distinct=False, name="quota_alert_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric} {self.threshold}% ({self.used}/{self.limit})"


class RateCounter(models.Model):
    """Call counters kept in PostgreSQL when no atomic cache (Redis) is configured.

    Incremented with one ``INSERT … ON CONFLICT DO UPDATE`` (atomic); rows past ``expires_at``
    are purged by a beat job."""

    bucket = models.CharField(max_length=200, primary_key=True)
    count = models.BigIntegerField(default=0)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.bucket}={self.count}"
