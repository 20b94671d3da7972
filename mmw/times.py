"""Times bounded to what Python and PostgreSQL can both hold (docs/reliability.md, "Input bounds").

PostgreSQL's ``timestamptz`` spans 4713 BC to 294276 AD; Python's ``datetime`` only the years
1-9999, so Python's range is the bound for anything MMW stores and reads back. A time can be
inside that range as written and outside it in UTC: ``9999-12-31T23:59:59-14:00`` is
``10000-01-01T13:59:59Z`` and ``0001-01-01T00:00:00+14:00`` is in year 0. Converting either
raises ``OverflowError`` (a 500 when nothing catches it); adding a step to a time near the end
does the same. This module is the one place those edges are handled:

- ``to_utc(field, value)``: an aware time in UTC, or ``InvalidInput`` naming the field —
  ``<field> must lie between the years 1 and 9999 once converted to UTC``.
- ``later(value, step)``: ``value + step``, or ``None`` past the year 9999 (nothing can happen
  there: a series that would step past it ends).
- ``capped_later(value, step)``: ``value + step``, or the last representable moment (a horizon).
- ``MAX_DAYS``: more days than lie between the first and the last representable moment, so a
  larger step (``timedelta`` itself refuses a billion days) can be cut to it and still overflow.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mmw.errors import InvalidInput

LATEST = datetime.max.replace(tzinfo=UTC)
EARLIEST = datetime.min.replace(tzinfo=UTC)
MAX_DAYS = (LATEST - EARLIEST).days + 1


def out_of_range_text(field: str) -> str:
    return f"{field} must lie between the years 1 and 9999 once converted to UTC"


def to_utc(field: str, value: datetime) -> datetime:
    """``value`` (aware) in UTC; refused with ``InvalidInput`` when that falls outside the years
    1-9999. Comparisons of aware times never overflow, so callers may bound ``value`` first."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInput(out_of_range_text(field)) from None


def later(value: datetime, step: timedelta) -> datetime | None:
    """``value + step``, or ``None`` when that is past (or before) what a ``datetime`` holds."""
    try:
        return value + step
    except OverflowError:
        return None


def capped_later(value: datetime, step: timedelta) -> datetime:
    """``value + step``, or ``LATEST`` (in UTC) when that is past the year 9999."""
    moved = later(value, step)
    return moved if moved is not None else LATEST
