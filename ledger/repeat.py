"""Reminder repeat rules, RRULE-style, and their expansion into occurrences.

A rule is ``FREQ=DAILY|WEEKLY|MONTHLY|YEARLY`` with optional ``INTERVAL=n`` (1-366) and at most
one end, ``COUNT=n`` (1-1000) or ``UNTIL=<RFC 3339 time or date>``. Monthly and yearly
occurrences keep the first due date's day of month, clamped to the month's last day (a reminder
due on 31 January falls on 28 or 29 February, then on 31 March again; one due on 29 February
falls on 28 February in other years).

Times end with the year 9999 (``mmw.times``): an ``UNTIL`` past it once in UTC is refused, and
a series whose next occurrence would fall after it ends there.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mmw import times
from mmw.errors import InvalidInput

FREQUENCIES = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")
MAX_INTERVAL = 366
MAX_COUNT = 1000


@dataclass(frozen=True)
class Repeat:
    freq: str
    interval: int = 1
    count: int | None = None
    until: datetime | None = None

    def text(self) -> str:
        """The canonical spelling (stored, shown and compared for replays)."""
        parts = [f"FREQ={self.freq}"]
        if self.interval != 1:
            parts.append(f"INTERVAL={self.interval}")
        if self.count is not None:
            parts.append(f"COUNT={self.count}")
        if self.until is not None:
            parts.append(f"UNTIL={self.until.isoformat().replace('+00:00', 'Z')}")
        return ";".join(parts)


def _bad(detail: str) -> InvalidInput:
    return InvalidInput(f"repeat must look like FREQ=MONTHLY;INTERVAL=1;UNTIL=2027-12-31 ({detail})")


def parse_repeat(value: str) -> Repeat:
    fields: dict[str, str] = {}
    for part in value.strip().upper().split(";"):
        name, sep, setting = part.partition("=")
        if not sep or name in fields or name not in ("FREQ", "INTERVAL", "COUNT", "UNTIL"):
            raise _bad(f"unknown or repeated part {part[:20]!r}")
        fields[name] = setting
    if fields.get("FREQ") not in FREQUENCIES:
        raise _bad("FREQ is DAILY, WEEKLY, MONTHLY or YEARLY")
    if "COUNT" in fields and "UNTIL" in fields:
        raise _bad("give COUNT or UNTIL, not both")
    return Repeat(
        fields["FREQ"],
        _number(fields.get("INTERVAL", "1"), "INTERVAL", MAX_INTERVAL),
        _number(fields["COUNT"], "COUNT", MAX_COUNT) if "COUNT" in fields else None,
        _until(fields["UNTIL"]) if "UNTIL" in fields else None,
    )


def _number(text: str, name: str, maximum: int) -> int:
    if not text.isdigit() or not 1 <= int(text) <= maximum:
        raise _bad(f"{name} is a whole number from 1 to {maximum}")
    return int(text)


def _until(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _bad("UNTIL is a date or an RFC 3339 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
        if len(text) == 10:  # a date: the whole day
            parsed += timedelta(days=1) - timedelta(microseconds=1)
    try:
        return times.to_utc("UNTIL", parsed)
    except InvalidInput as exc:
        raise _bad(exc.message) from None


def _add_months(start: datetime, months: int) -> datetime | None:
    month0 = start.month - 1 + months
    year, month = start.year + month0 // 12, month0 % 12 + 1
    if year > times.LATEST.year:
        return None
    day = min(start.day, calendar.monthrange(year, month)[1])
    return start.replace(year=year, month=month, day=day)


def _add_days(start: datetime, days: int) -> datetime | None:
    return times.later(start, timedelta(days=min(days, times.MAX_DAYS)))


def nth(first: datetime, rule: Repeat, n: int) -> datetime | None:
    """The ``n``-th occurrence (0 is ``first``), always computed from ``first`` so a clamped
    month end does not drift; ``None`` when it would fall after the year 9999."""
    step = n * rule.interval
    if rule.freq == "DAILY":
        return _add_days(first, step)
    if rule.freq == "WEEKLY":
        return _add_days(first, 7 * step)
    return _add_months(first, step if rule.freq == "MONTHLY" else 12 * step)


def _skip(first: datetime, rule: Repeat, start: datetime) -> int:
    """An index no later than the first occurrence at or after ``start`` (no walk from 1990)."""
    if start <= first:
        return 0
    if rule.freq in ("DAILY", "WEEKLY"):
        days = 1 if rule.freq == "DAILY" else 7
        return (start - first).days // (days * rule.interval)
    months = (start.year - first.year) * 12 + start.month - first.month
    per = rule.interval * (1 if rule.freq == "MONTHLY" else 12)
    return max(0, months // per - 1)


def occurrences(first: datetime, rule: Repeat | None, *, start: datetime, end: datetime) -> Iterator[datetime]:
    """The occurrences within ``[start, end]``, in order; at most ``MAX_COUNT`` per reminder."""
    if rule is None:
        if start <= first <= end:
            yield first
        return
    for n in range(_skip(first, rule, start), rule.count or 10**9):
        at = nth(first, rule, n)
        if at is None or at > end or (rule.until is not None and at > rule.until):
            return
        if at >= start:
            yield at
