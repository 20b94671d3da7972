"""The ledger's MCP tools (docs/reference/ledger_*.md): each hands its raw arguments to the service
or selector ``ledger.api`` calls; registered with the one ``/mcp`` server (``interfaces.mcp``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accounts.keys import Principal
from accounts.models import SCOPE_LEDGER_READ, SCOPE_LEDGER_WRITE
from interfaces.mcp import APPEND, READ, ToolSpec, register
from ledger import inputs as ledger_inputs
from ledger import presenters as ledger_presenters
from ledger import selectors as ledger_selectors
from ledger import services as ledger_services

_LEDGER_RECORD = """\
Append a ledger entry: a transaction (money that moved) or a reminder (money falling due, \
optionally repeating). Use this, never remember, for payments, invoices, refunds and \
subscriptions: amounts stay exact, sum per currency and can be reversed. amount is a signed \
decimal string ("-1240.18" paid out), never a JSON number. The same reference with the same \
content returns the stored entry (replayed: true). Entries are append-only: correct one with \
ledger_reverse. Reference: mmw://docs/ledger_record"""

_LEDGER_LIST = """\
Ledger entries you may read, newest first, a page at a time (next_offset is null on the last), \
filtered by kind, time, category, counterparty, currency or words. Each says whether it \
reverses another or was reversed. Reference: mmw://docs/ledger_list"""

_LEDGER_BALANCE = """\
Sums of the transactions you may read per currency (never across currencies), optionally per \
category and per month (UTC), as exact decimal strings; reversed entries and their reversals \
are left out. Reference: mmw://docs/ledger_balance"""

_LEDGER_REVERSE = """\
Correct or cancel an entry by appending its reversal (the opposite amount, your reason as memo); \
nothing is edited, and an entry is reversed once. Reversing a reminder cancels it; to mark one \
occurrence paid, use ledger_complete. Reference: mmw://docs/ledger_reverse"""

_LEDGER_UPCOMING = """\
Reminders falling due from now up to until (default 30 days), one item per occurrence, soonest \
first; cancelled reminders and completed occurrences are left out. \
Reference: mmw://docs/ledger_upcoming"""

_LEDGER_COMPLETE = """\
Mark one occurrence of a reminder paid: appends the transaction that completes it (the \
reminder's amount, currency, counterparty, category). due_at names the occurrence (default: the \
earliest not completed); each is completed once. Reference: mmw://docs/ledger_complete"""


def _ledger_record(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> ledger_presenters.Recorded:
    return ledger_services.ledger_record(principal=principal, payload=arguments)


def _ledger_list(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> ledger_presenters.Listed:
    return ledger_selectors.ledger_list(principal=principal, payload=arguments)


def _ledger_balance(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> ledger_presenters.Balances:
    return ledger_selectors.ledger_balance(principal=principal, payload=arguments)


def _ledger_reverse(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> ledger_presenters.Recorded:
    return ledger_services.ledger_reverse(principal=principal, payload=arguments)


def _ledger_upcoming(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> ledger_presenters.Upcoming:
    return ledger_selectors.ledger_upcoming(principal=principal, payload=arguments)


def _ledger_complete(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> ledger_presenters.Recorded:
    return ledger_services.ledger_complete(principal=principal, payload=arguments)


LEDGER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "ledger_record",
        "Record a transaction or reminder",
        ledger_inputs.RECORD,
        _LEDGER_RECORD,
        _ledger_record,
        APPEND,
        ledger_presenters.Recorded,
        scope=SCOPE_LEDGER_WRITE,
    ),
    ToolSpec(
        "ledger_list",
        "List ledger entries",
        ledger_inputs.LIST,
        _LEDGER_LIST,
        _ledger_list,
        READ,
        ledger_presenters.Listed,
        scope=SCOPE_LEDGER_READ,
    ),
    ToolSpec(
        "ledger_balance",
        "Ledger balances",
        ledger_inputs.BALANCE,
        _LEDGER_BALANCE,
        _ledger_balance,
        READ,
        ledger_presenters.Balances,
        scope=SCOPE_LEDGER_READ,
    ),
    ToolSpec(
        "ledger_reverse",
        "Reverse a ledger entry",
        ledger_inputs.REVERSE,
        _LEDGER_REVERSE,
        _ledger_reverse,
        APPEND,
        ledger_presenters.Recorded,
        scope=SCOPE_LEDGER_WRITE,
    ),
    ToolSpec(
        "ledger_upcoming",
        "Reminders falling due",
        ledger_inputs.UPCOMING,
        _LEDGER_UPCOMING,
        _ledger_upcoming,
        READ,
        ledger_presenters.Upcoming,
        scope=SCOPE_LEDGER_READ,
    ),
    ToolSpec(
        "ledger_complete",
        "Complete a reminder",
        ledger_inputs.COMPLETE,
        _LEDGER_COMPLETE,
        _ledger_complete,
        APPEND,
        ledger_presenters.Recorded,
        scope=SCOPE_LEDGER_WRITE,
    ),
)
register("ledger", *LEDGER_TOOLS)
