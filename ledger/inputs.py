"""The parameters of every ledger operation, declared once (the same ``Param`` table, parser and
schema generator as the memory operations: ``memories.inputs``)."""

from __future__ import annotations

from memories.inputs import ID_CHARS, KEY_CHARS, MAX_TAGS, NAME_CHARS, REASON_CHARS, TIME_CHARS, Param

MEMO_CHARS = 10_000
AMOUNT_CHARS = 40
MAX_OFFSET = 100_000
VISIBILITY = ("author", "department", "project", "org")
KINDS = ("transaction", "reminder")

_TIME = "With an offset (Z or +02:00)."  # the details of a time parameter (its description says RFC 3339)

RECORD: tuple[Param, ...] = (
    Param("kind", "string", '"transaction" (money that moved) or "reminder" (money due).', required=True,
          nullable=False, enum=KINDS),
    Param("amount", "string", 'Signed decimal string: "-1240.18" paid out, "2500" received; never a JSON number.',
          details="At most the currency's minor units (JPY 0, EUR 2, BHD 3).", required=True, nullable=False,
          max_length=AMOUNT_CHARS, min_length=1),
    Param("currency", "string", "ISO 4217 code in upper case (EUR, USD, ...).", required=True, nullable=False,
          max_length=3, min_length=3),
    Param("occurred_at", "string", "Transactions: when the money moved (RFC 3339; default: now).",
          details="From 1900 to one day ahead. " + _TIME, max_length=TIME_CHARS),
    Param("due_at", "string", "Reminders (required): when it falls due (RFC 3339).", details=_TIME,
          max_length=TIME_CHARS),
    Param("repeat", "string", "Reminders: FREQ=DAILY|WEEKLY|MONTHLY|YEARLY[;INTERVAL=n][;COUNT=n or ;UNTIL=<date>].",
          details="Month ends are clamped (31 Jan, 29 Feb, 31 Mar).", max_length=NAME_CHARS),
    Param("counterparty", "string", "Who was paid or paid you.", max_length=NAME_CHARS),
    Param("category", "string", 'A label such as "hosting"; balances can be split by it.', max_length=NAME_CHARS),
    Param("memo", "string", "Free text; card numbers and IBANs are redacted.",
          details="Screened by the Guard like every text field.", max_length=MEMO_CHARS),
    Param("reference", "string", "Your own id (invoice or payment id): the same again returns the same entry.",
          details="Recorded again with other content it is a 409.", max_length=KEY_CHARS),
    Param("tags", "string[]", "Free tags.", max_items=MAX_TAGS, max_length=NAME_CHARS),
    Param("visibility", "string", 'Who may see it ("author": only you).', default="project", nullable=False,
          enum=VISIBILITY),
)  # fmt: skip

SINCE = Param("since", "string", "From this RFC 3339 time (occurred_at, or due_at for reminders).", details=_TIME,
              max_length=TIME_CHARS)  # fmt: skip
UNTIL = Param("until", "string", "Up to this RFC 3339 time (occurred_at, or due_at for reminders).", details=_TIME,
              max_length=TIME_CHARS)  # fmt: skip
CURRENCY = Param("currency", "string", "Only this ISO 4217 currency.", max_length=3)
CATEGORY = Param("category", "string", "Only this category.", max_length=NAME_CHARS)

LIST: tuple[Param, ...] = (
    Param("kind", "string", 'Only "transaction" or only "reminder" entries.', enum=KINDS),
    SINCE,
    UNTIL,
    CATEGORY,
    Param("counterparty", "string", "Only this counterparty (exact).", max_length=NAME_CHARS),
    CURRENCY,
    Param("text", "string", "Words to find in memo or counterparty (case-insensitive).", max_length=NAME_CHARS),
    Param("limit", "integer", "Entries per page.", default=50, nullable=False, minimum=1, maximum=100),
    Param("offset", "integer", "Entries to skip: the next page starts at offset + limit.", default=0,
          nullable=False, minimum=0, maximum=MAX_OFFSET),
)  # fmt: skip

# The CSV export (dashboard): ledger_list's filters, every matching entry (no paging).
ROWS: tuple[Param, ...] = tuple(p for p in LIST if p.name not in ("limit", "offset"))

BALANCE: tuple[Param, ...] = (
    CURRENCY,
    CATEGORY,
    Param("since", "string", "Transactions from this RFC 3339 time.", details=_TIME, max_length=TIME_CHARS),
    Param("until", "string", "Transactions up to this RFC 3339 time.", details=_TIME, max_length=TIME_CHARS),
    Param("by_category", "boolean", "One line per currency and category.", default=False, nullable=False),
    Param("by_month", "boolean", "One line per currency and calendar month (UTC).", default=False, nullable=False),
)

REVERSE: tuple[Param, ...] = (
    Param("entry_id", "string", "Id of the entry to reverse.", required=True, nullable=False, max_length=ID_CHARS),
    Param("reason", "string", "Why (kept as the reversing entry's memo).", required=True, nullable=False,
          max_length=REASON_CHARS, min_length=1),
)  # fmt: skip

COMPLETE: tuple[Param, ...] = (
    Param("entry_id", "string", "Id of the reminder to complete.", required=True, nullable=False, max_length=ID_CHARS),
    Param("due_at", "string", "The occurrence's due_at as ledger_upcoming lists it (default: the earliest not "
          "completed).", details=_TIME, max_length=TIME_CHARS),
    Param("occurred_at", "string", "When it was paid (RFC 3339; default: now).",
          details="From 1900 to one day ahead. " + _TIME, max_length=TIME_CHARS),
    Param("memo", "string", "Free text kept on the completing transaction.",
          details="Screened by the Guard.", max_length=MEMO_CHARS),
)  # fmt: skip

UPCOMING: tuple[Param, ...] = (
    Param("until", "string", "Reminders due up to this RFC 3339 time (default: 30 days ahead, at most 366).",
          details=_TIME,
          max_length=TIME_CHARS),
)  # fmt: skip

OPERATIONS: dict[str, tuple[Param, ...]] = {
    "ledger_record": RECORD,
    "ledger_list": LIST,
    "ledger_balance": BALANCE,
    "ledger_reverse": REVERSE,
    "ledger_upcoming": UPCOMING,
    "ledger_complete": COMPLETE,
}
