"""Writes about usage, run by beat: quota warnings (80 % and 100 %) and monthly snapshots."""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from collections.abc import Iterator

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, Project
from billing import counters, emails, gate, selectors
from billing.models import Plan, QuotaAlert, Subscription, UsageSnapshot
from memories.models import project_live_counts

THRESHOLDS = (80, 100)
Metric = QuotaAlert.Metric


def _records_per_project() -> dict[uuid.UUID, int]:
    return project_live_counts(Project.objects.filter(deleted_at__isnull=True).values_list("pk", flat=True))


def _accounts_with_plans() -> Iterator[tuple[Account, Plan | None, list[Project]]]:
    default = selectors.default_plan()
    plans = {s.account_id: s.plan for s in Subscription.objects.select_related("plan")}
    projects: dict[int, list[Project]] = defaultdict(list)
    for project in Project.objects.filter(deleted_at__isnull=True).order_by("name"):
        projects[project.account_id].append(project)
    for account in Account.objects.order_by("pk").iterator():
        yield account, plans.get(account.pk, default), projects[account.pk]


def quotas_check() -> int:
    """Warn each account's billing contacts once when a project reaches 80 % and 100 % of its
    record limit, or the account its project limit; a warning re-arms when usage drops below."""
    records = _records_per_project()
    sent = 0
    for account, plan, projects in _accounts_with_plans():
        if plan is None:
            continue
        for project in projects:
            sent += _alert(account, project, Metric.RECORDS, records.get(project.pk, 0), plan.records_per_project)
        sent += _alert(account, None, Metric.PROJECTS, len(projects), plan.projects_per_account)
    return sent


@transaction.atomic
def _alert(account: Account, project: Project | None, metric: str, used: int, limit: int | None) -> int:
    existing = QuotaAlert.objects.filter(account=account, project=project, metric=metric)
    if not limit:
        existing.delete()
        return 0
    percent = used * 100 // limit
    existing.filter(threshold__gt=percent).delete()
    due = [t for t in THRESHOLDS if percent >= t and not existing.filter(threshold=t).exists()]
    if not due:
        return 0
    threshold = max(due)
    for t in due:
        QuotaAlert.objects.create(account=account, project=project, metric=metric, threshold=t, used=used, limit=limit)
    url = selectors.billing_url(account)

    def compose() -> tuple[str, str]:
        what = (
            _("project %(project)s holds %(used)s of its %(limit)s records")
            % {"project": project.name, "used": used, "limit": limit}
            if project
            else _("%(used)s of %(limit)s projects") % {"used": used, "limit": limit}
        )
        consequence = (
            _("new records are refused until some are forgotten or the plan is upgraded")
            if threshold >= 100
            else _("writes will be refused at 100 %%") % {}
        )
        body = f"{what} ({percent} %); {consequence}.\n\n" + _("Upgrade or manage billing: %(url)s") % {"url": url}
        return _("%(threshold)s %% of your plan's limit reached") % {"threshold": threshold}, f"{body}\n"

    emails.notify_account(account, compose=compose)
    return 1


def usage_snapshot_take(*, now: dt.datetime | None = None) -> int:
    """Write this month's usage rows (one per project, one per account with no project): the
    current and peak record counts, allowed calls so far and projects. Re-running is safe."""
    now = now or timezone.now()
    month = now.date().replace(day=1)
    records = _records_per_project()
    written = 0
    for account, plan, projects in _accounts_with_plans():
        total_records = total_calls = 0
        for project in projects:
            used = records.get(project.pk, 0)
            calls = counters.peek(gate.monthly_calls_bucket(str(project.pk), f"{month:%Y%m}"))
            _snapshot(account, project, month, plan, used, calls, 1, now)
            total_records, total_calls, written = total_records + used, total_calls + calls, written + 1
        _snapshot(account, None, month, plan, total_records, total_calls, len(projects), now)
        written += 1
    return written


def _snapshot(
    account: Account,
    project: Project | None,
    month: dt.date,
    plan: Plan | None,
    records: int,
    calls: int,
    projects: int,
    now: dt.datetime,
) -> None:
    row, created = UsageSnapshot.objects.get_or_create(
        account=account,
        project=project,
        month=month,
        defaults={"records": records, "peak_records": records, "calls": calls, "projects": projects, "taken_at": now},
    )
    if not created:
        row.records, row.peak_records = records, max(row.peak_records, records)
        row.calls, row.projects, row.taken_at = max(row.calls, calls), projects, now
    row.plan_code = plan.code if plan else ""
    row.save()
