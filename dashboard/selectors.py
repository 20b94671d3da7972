"""What the dashboard reads that the memory and billing selectors do not already answer: the
accounts a person belongs to, record listings without a query (through ``visible_to``), and the
series behind the usage charts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import Account, Project, User
from billing import counters, gate
from billing import selectors as billing_selectors
from dashboard.principals import principal_for_user
from memories import selectors as memory_selectors
from memories.models import project_live_counts
from mmw import replicas
from mmw.errors import NotFound
from orgs.models import Membership


def memberships_of(user: User) -> QuerySet[Membership]:
    """The person's active memberships, personal account first."""
    return (
        Membership.objects.filter(user=user, is_active=True)
        .select_related("account")
        .order_by("-account__kind", "account__name")  # "personal" sorts after "organization"
    )


def membership_in(user: User, tenant_id: str) -> Membership:
    """The person's active membership of the account; ``NotFound`` for anyone else (no existence
    leak: the page answers 404, ``dashboard.middleware``)."""
    membership = memberships_of(user).filter(account__tenant_id=tenant_id).first()
    if membership is None:
        raise NotFound("account not found")
    return membership


def project_for(user: User, project_id: Any) -> tuple[Project, Principal]:
    """A live project the person may use, with their principal in it; ``NotFound`` otherwise."""
    project = Project.objects.select_related("account").filter(pk=project_id, deleted_at__isnull=True).first()
    principal = principal_for_user(user, project) if project is not None else None
    if project is None or principal is None:
        raise NotFound("project not found")
    return project, principal


def projects_of(membership: Membership) -> list[tuple[Project, int]]:
    """The account's live projects this member may use, with their live record counts."""
    projects = Project.objects.filter(account=membership.account, deleted_at__isnull=True).order_by("name")
    usable = [p for p in projects if principal_for_user(membership.user, p) is not None]
    counts = project_live_counts(p.pk for p in usable)
    return [(p, counts[p.pk]) for p in usable]


# --- usage charts --------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    label: str
    value: int


@replicas.reads
def records_written_per_day(account: Account, *, days: int = 30) -> list[Point]:
    """Records written per day over the last ``days`` days (forgotten ones included: they were
    written), zero-filled, oldest first."""
    today = timezone.now().date()
    start = today - dt.timedelta(days=days - 1)
    rows = memory_selectors.records_written_since(account=account, start=start)
    return [
        Point((start + dt.timedelta(days=i)).strftime("%d %b"), rows.get(start + dt.timedelta(days=i), 0))
        for i in range(days)
    ]


def monthly_usage(account: Account) -> tuple[list[Point], list[Point]]:
    """(peak records, calls) per month from the usage snapshots, this month's calls read live."""
    history = {row.month.strftime("%Y-%m"): row for row in billing_selectors.usage_history(account)}
    now = timezone.now()
    this_month = now.strftime("%Y-%m")
    projects = Project.objects.filter(account=account, deleted_at__isnull=True).values_list("pk", flat=True)
    live_calls = sum(counters.peek(gate.monthly_calls_bucket(str(pk), now.strftime("%Y%m"))) for pk in projects)
    live_records = billing_selectors.usage_for(account).records
    months = sorted(set(history) | {this_month})[-12:]
    records, calls = [], []
    for month in months:
        row = history.get(month)
        if month == this_month:
            records.append(Point(month, max(live_records, row.peak_records if row else 0)))
            calls.append(Point(month, max(live_calls, row.calls if row else 0)))
        elif row is not None:
            records.append(Point(month, row.peak_records))
            calls.append(Point(month, row.calls))
    return records, calls


def key_calls_this_month(key_ids: list[int]) -> dict[int, int]:
    """Each key's API calls counted this month (UTC), by key id: the calls billing let through
    (``billing.gate.check_rate`` counts them beside the project's), 0 for a key never used."""
    month = timezone.now().strftime("%Y%m")
    return {pk: counters.peek(gate.monthly_key_calls_bucket(pk, month)) for pk in key_ids}
