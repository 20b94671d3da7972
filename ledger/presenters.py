"""The shapes of the ledger's answers (docs/ledger.md). Amounts are decimal strings with the
currency's minor units, never numbers; times RFC 3339 in UTC. Selectors gather, these only format."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from ledger.currencies import format_amount
from ledger.models import Entry
from memories.presenters import Author, ProjectEnvelope, author


class EntryShape(TypedDict):
    id: str
    kind: str
    amount: str
    currency: str
    occurred_at: str | None
    due_at: str | None
    repeat: str | None
    counterparty: str
    category: str
    memo: str
    reference: str | None
    tags: list[str]
    visibility: str
    reverses: str | None
    reversed_by: str | None
    completes: str | None
    completes_due_at: str | None
    author: Author
    created_at: str


class Recorded(ProjectEnvelope):
    entry: EntryShape
    replayed: bool


class Listed(ProjectEnvelope):
    entries: list[EntryShape]
    limit: int
    offset: int
    next_offset: int | None


class BalanceLine(TypedDict):
    currency: str
    balance: str
    entries: int
    category: NotRequired[str]
    month: NotRequired[str]


class Balances(ProjectEnvelope):
    balances: list[BalanceLine]


class Occurrence(TypedDict):
    due_at: str
    entry: EntryShape


class Upcoming(ProjectEnvelope):
    until: str
    reminders: list[Occurrence]


def entry(e: Entry, *, reversed_by: str | None = None) -> EntryShape:
    """One entry; ``reversed_by`` is the id of its reversal when the selector found one."""
    return {
        "id": str(e.id),
        "kind": e.kind,
        "amount": format_amount(e.amount, e.currency),
        "currency": e.currency,
        "occurred_at": e.occurred_at.isoformat() if e.occurred_at else None,
        "due_at": e.due_at.isoformat() if e.due_at else None,
        "repeat": e.repeat or None,
        "counterparty": e.counterparty,
        "category": e.category,
        "memo": e.memo,
        "reference": e.reference,
        "tags": list(e.tags),
        "visibility": e.visibility,
        "reverses": str(e.reverses_id) if e.reverses_id else None,
        "reversed_by": reversed_by,
        "completes": str(e.completes_id) if e.completes_id else None,
        "completes_due_at": e.completes_due_at.isoformat() if e.completes_due_at else None,
        "author": author(e),  # type: ignore[arg-type]  # the same author fields as a record
        "created_at": e.created_at.isoformat(),
    }


CSV_COLUMNS = (
    "id", "kind", "amount", "currency", "occurred_at", "due_at", "repeat", "counterparty", "category", "memo",
    "reference", "tags", "visibility", "reverses", "reversed_by", "completes", "completes_due_at", "author",
    "created_at",
)  # fmt: skip


def csv_row(e: Entry, *, reversed_by: str | None = None) -> list[object]:
    """One entry as the values of a CSV row of ``CSV_COLUMNS`` (tags joined with ``;``), for
    ``mmw.csv_safe.lines`` (which escapes every cell)."""
    shape = entry(e, reversed_by=reversed_by)
    values: dict[str, object] = {**shape, "tags": ";".join(shape["tags"]), "author": shape["author"]["user"]}
    return [values[name] for name in CSV_COLUMNS]
