"""Everything that reads the ledger: ``ledger_list``, ``ledger_balance``, ``ledger_upcoming``, and
``ledger_rows`` (the dashboard's CSV export, the same filters as ``ledger_list``).

Every read starts from ``Entry.objects.visible_to(principal)`` (the memory records' visibility
rule) and needs ``ledger:read``. Balances are sums in the database's ``numeric`` of transactions
that are neither reversed nor reversals, so a reversal nets its original out of every period.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, TruncMonth
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_LEDGER_READ
from ledger import inputs, presenters
from ledger.currencies import check_currency, format_amount
from ledger.models import Entry, Kind
from ledger.repeat import occurrences, parse_repeat
from memories import admission
from memories.inputs import parse
from memories.presenters import project_envelope
from memories.record_rules import parse_time_filter
from mmw import csv_safe, replicas
from mmw.errors import InvalidInput

UPCOMING_DEFAULT = timedelta(days=30)
UPCOMING_MAX = timedelta(days=366)
MAX_OCCURRENCES = 1000
ROWS_CHUNK = 1000


def _begin_read(principal: Principal) -> admission.Admission:
    return admission.admit_read(principal, SCOPE_LEDGER_READ)


def _times(values: Mapping[str, Any]) -> tuple[datetime | None, datetime | None]:
    since = parse_time_filter("since", values["since"]) if values["since"] is not None else None
    until = parse_time_filter("until", values["until"]) if values["until"] is not None else None
    if since is not None and until is not None and until < since:
        raise InvalidInput("until must not be before since")
    return since, until


def completed_occurrences(reminders: QuerySet[Entry]) -> set[tuple[Any, datetime | None]]:
    """The (reminder id, occurrence) pairs of ``reminders`` that a completion has paid
    (``ledger.services.ledger_complete``), whoever completed them."""
    completions = Entry.objects.filter(completes__in=reminders.values("pk"))
    return set(completions.values_list("completes_id", "completes_due_at"))


def _reversed() -> Exists:
    return Exists(Entry.objects.filter(reverses=OuterRef("pk")))


@replicas.reads
def ledger_list(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Listed:
    """One page of the entries the caller may read, newest first (by occurred_at or due_at)."""
    values = parse(inputs.LIST, payload)
    since, until = _times(values)
    admitted = _begin_read(principal)
    entries = _filtered(principal, values, since, until)
    limit, offset = values["limit"], values["offset"]
    page = list(_ordered(entries)[offset : offset + limit + 1])
    reversals = dict(Entry.objects.filter(reverses__in=[e.pk for e in page]).values_list("reverses_id", "id"))
    shown = [presenters.entry(e, reversed_by=_str(reversals.get(e.pk))) for e in page[:limit]]
    return {
        **project_envelope(principal, admitted.notice()),
        "entries": shown,
        "limit": limit,
        "offset": offset,
        "next_offset": offset + limit if len(page) > limit else None,
    }


def ledger_rows(*, principal: Principal, payload: Mapping[str, Any] | None) -> Iterator[str]:
    """The CSV export of the entries ``ledger_list`` would page through with the same filters, as
    lines of CSV text (``mmw.csv_safe``: cells formula-escaped): a header, then one row per entry,
    newest first, read from the database in chunks (the caller streams it). The checks
    (parameters, ``ledger:read``) run before the first line."""
    values = parse(inputs.ROWS, payload)
    since, until = _times(values)
    _begin_read(principal)
    entries = _ordered(_filtered(principal, values, since, until)).annotate(
        reversal_id=Subquery(Entry.objects.filter(reverses=OuterRef("pk")).values("pk")[:1])
    )
    return csv_safe.lines(presenters.CSV_COLUMNS, _rows(entries))


def _rows(entries: QuerySet[Entry]) -> Iterator[list[object]]:
    for e in entries.iterator(chunk_size=ROWS_CHUNK):
        yield presenters.csv_row(e, reversed_by=_str(getattr(e, "reversal_id", None)))


def _filtered(
    principal: Principal, values: Mapping[str, Any], since: datetime | None, until: datetime | None
) -> QuerySet[Entry]:
    """The entries ``principal`` reads that match ``ledger_list``'s filters (parsed ``values``)."""
    entries = Entry.objects.visible_to(principal).select_related("author", "api_key")
    if values["kind"] is not None:
        if values["kind"] not in inputs.KINDS:
            raise InvalidInput('kind must be "transaction" or "reminder"')
        entries = entries.filter(kind=values["kind"])
    if values["currency"] is not None:
        entries = entries.filter(currency=check_currency(values["currency"]))
    for name in ("category", "counterparty"):
        if values[name] is not None:
            entries = entries.filter(**{name: values[name]})
    if values["text"] is not None and values["text"].strip():
        words = values["text"].strip()
        entries = entries.filter(Q(memo__icontains=words) | Q(counterparty__icontains=words))
    if since is not None:
        entries = entries.filter(Q(occurred_at__gte=since) | Q(due_at__gte=since))
    if until is not None:
        entries = entries.filter(Q(occurred_at__lte=until) | Q(due_at__lte=until))
    return entries


def _ordered(entries: QuerySet[Entry]) -> QuerySet[Entry]:
    return entries.annotate(at=Coalesce("occurred_at", "due_at")).order_by("-at", "-created_at", "-id")


def _str(value: object | None) -> str | None:
    return None if value is None else str(value)


@replicas.reads
def ledger_balance(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Balances:
    """Sums per currency (and per category and/or calendar month when asked) of the transactions
    the caller may read, reversed entries and their reversals left out."""
    values = parse(inputs.BALANCE, payload)
    since, until = _times(values)
    admitted = _begin_read(principal)
    rows = Entry.objects.visible_to(principal).filter(kind=Kind.TRANSACTION, reverses__isnull=True)
    rows = rows.exclude(_reversed())
    if values["currency"] is not None:
        rows = rows.filter(currency=check_currency(values["currency"]))
    if values["category"] is not None:
        rows = rows.filter(category=values["category"])
    if since is not None:
        rows = rows.filter(occurred_at__gte=since)
    if until is not None:
        rows = rows.filter(occurred_at__lte=until)
    keys = ["currency"]
    if values["by_category"]:
        keys.append("category")
    if values["by_month"]:
        rows = rows.annotate(month=TruncMonth("occurred_at"))
        keys.append("month")
    grouped = rows.values(*keys).annotate(total=Sum("amount"), n=Count("id")).order_by(*keys)
    return {**project_envelope(principal, admitted.notice()), "balances": [_line(row) for row in grouped]}


def _line(row: Mapping[str, Any]) -> presenters.BalanceLine:
    total: Decimal = row["total"]
    line: presenters.BalanceLine = {
        "currency": row["currency"],
        "balance": format_amount(total, row["currency"]),
        "entries": row["n"],
    }
    if "category" in row:
        line["category"] = row["category"]
    if "month" in row:
        line["month"] = row["month"].strftime("%Y-%m")
    return line


@replicas.reads
def ledger_upcoming(
    *, principal: Principal, payload: Mapping[str, Any] | None, now: datetime | None = None
) -> presenters.Upcoming:
    """Occurrences of the caller's readable reminders due from now up to ``until`` (default 30
    days, at most 366), repeats expanded, reversed (cancelled) reminders and completed occurrences
    left out, soonest first; at most 1,000 occurrences."""
    values = parse(inputs.UPCOMING, payload)
    now = now or timezone.now()
    until = parse_time_filter("until", values["until"]) if values["until"] is not None else now + UPCOMING_DEFAULT
    if until < now:
        raise InvalidInput("until must not be in the past")
    if until > now + UPCOMING_MAX:
        raise InvalidInput("until must be at most 366 days ahead")
    admitted = _begin_read(principal)
    reminders = (
        Entry.objects.visible_to(principal)
        .filter(kind=Kind.REMINDER, reverses__isnull=True, due_at__lte=until)
        .exclude(_reversed())
        .select_related("author", "api_key")
    )
    done = completed_occurrences(reminders)
    found: list[tuple[datetime, Entry]] = []
    for reminder in reminders.order_by("due_at", "id").iterator():
        assert reminder.due_at is not None
        rule = parse_repeat(reminder.repeat) if reminder.repeat else None
        for at in occurrences(reminder.due_at, rule, start=now, end=until):
            if (reminder.pk, at) in done:
                continue
            found.append((at, reminder))
            if len(found) > 10 * MAX_OCCURRENCES:
                break
    found.sort(key=lambda pair: (pair[0], str(pair[1].id)))
    shown: list[presenters.Occurrence] = [
        {"due_at": at.isoformat(), "entry": presenters.entry(e)} for at, e in found[:MAX_OCCURRENCES]
    ]
    return {**project_envelope(principal, admitted.notice()), "until": until.isoformat(), "reminders": shown}
