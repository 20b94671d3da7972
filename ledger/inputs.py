"""The parameters of every ledger operation, declared once (the same ``Param`` table, parser and
schema generator as the memory operations: ``memories.inputs``)."""

from __future__ import annotations

from memories.inputs import ID_CHARS, KEY_CHARS, MAX_TAGS, NAME_CHARS, REASON_CHARS, TIME_CHARS, Param

MEMO_CHARS = 10_000
AMOUNT_CHARS = 40
MAX_OFFSET = 100_000
VISIBILITY = ("author", "department", "project", "org")
KINDS = ("transaction", "reminder")

_TIME = " An RFC 3339 time with an offset."

RECORD: tuple[Param, ...] = (
    Param("kind", "string", '"transaction" (money that moved) or "reminder" (money due).', required=True,
          nullable=False, enum=KINDS),
    Param("amount", "string", 'Exact decimal string, signed: "-1240.18" paid out, "2500" received; at most the '
          "currency's minor units (JPY 0, EUR 2, BHD 3). Never a JSON number.", required=True, nullable=False,
          max_length=AMOUNT_CHARS, min_length=1),
    Param("currency", "string", "ISO 4217 code in upper case (EUR, USD, JPY, ...).", required=True, nullable=False,
          max_length=3, min_length=3),
    Param("occurred_at", "string", "Transactions: when the money moved (default: now), from 1900 to one day ahead."
          + _TIME, max_length=TIME_CHARS),
    Param("due_at", "string", "Reminders (required): when it falls due." + _TIME, max_length=TIME_CHARS),
    Param("repeat", "string", "Reminders: FREQ=DAILY|WEEKLY|MONTHLY|YEARLY with optional ;INTERVAL=n and one end, "
          ";COUNT=n or ;UNTIL=<date>. Month ends are clamped (31 Jan, 29 Feb, 31 Mar).", max_length=NAME_CHARS),
    Param("counterparty", "string", "Who was paid or paid you.", max_length=NAME_CHARS),
    Param("category", "string", 'A label such as "hosting" or "rent"; balances can be split by it.',
          max_length=NAME_CHARS),
    Param("memo", "string", "Free text (screened by the Guard; card numbers and IBANs are redacted).",
          max_length=MEMO_CHARS),
    Param("reference", "string", "Your own id for this entry (invoice or payment id): recording it again with the "
          "same content returns the same entry, with other content is a 409.", max_length=KEY_CHARS),
    Param("tags", "string[]", "Free tags (at most 64, each at most 200 characters).", max_items=MAX_TAGS,
          max_length=NAME_CHARS),
    Param("visibility", "string", 'Who may see it: "author", "department", "project" (default) or "org".',
          default="project", nullable=False, enum=VISIBILITY),
)  # fmt: skip

SINCE = Param(
    "since", "string", "From this time (occurred_at, or due_at for reminders)." + _TIME, max_length=TIME_CHARS
)
UNTIL = Param("until", "string", "Up to this time (occurred_at, or due_at for reminders)." + _TIME,
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
    Param("limit", "integer", "Entries per page (1-100, default 50).", default=50, nullable=False, minimum=1,
          maximum=100),
    Param("offset", "integer", "Entries to skip (0-100,000): the next page starts at offset + limit.", default=0,
          nullable=False, minimum=0, maximum=MAX_OFFSET),
)  # fmt: skip

# The CSV export (dashboard): ledger_list's filters, every matching entry (no paging).
ROWS: tuple[Param, ...] = tuple(p for p in LIST if p.name not in ("limit", "offset"))

BALANCE: tuple[Param, ...] = (
    CURRENCY,
    CATEGORY,
    Param("since", "string", "Transactions from this time." + _TIME, max_length=TIME_CHARS),
    Param("until", "string", "Transactions up to this time." + _TIME, max_length=TIME_CHARS),
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
    Param("due_at", "string", "The occurrence to complete (its due_at as ledger_upcoming lists it; default: the "
          "earliest occurrence not completed yet)." + _TIME, max_length=TIME_CHARS),
    Param("occurred_at", "string", "When it was paid (default: now), from 1900 to one day ahead." + _TIME,
          max_length=TIME_CHARS),
    Param("memo", "string", "Free text kept on the completing transaction (screened by the Guard).",
          max_length=MEMO_CHARS),
)  # fmt: skip

UPCOMING: tuple[Param, ...] = (
    Param("until", "string", "Reminders due up to this time (default: 30 days ahead, at most 366)." + _TIME,
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
