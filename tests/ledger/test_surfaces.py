"""The ledger over REST and MCP: the same operations, answers and error texts, and a
memory-only key refused on both with the documented text."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.test import Client

from tests import live
from tests.ledger.conftest import Ledgers
from tests.live import LiveServer, mcp_call

live_server = live.live_server

TRANSACTION = {"kind": "transaction", "amount": "-1240.18", "currency": "USD", "counterparty": "AWS",
               "category": "hosting", "occurred_at": "2026-03-03T10:00:00Z", "reference": "inv-2026-03"}  # fmt: skip


def post(key: str, path: str, body: Any) -> tuple[int, Any]:
    response = Client().post(f"/api/v1/ledger/{path}", body, content_type="application/json",
                             headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    return response.status_code, response.json()


@pytest.mark.django_db
def test_rest_records_replays_reverses_and_sums(ledgers: Ledgers) -> None:
    status, created = post(ledgers.alice_key, "entries", TRANSACTION)
    assert status == 201, created
    assert created["entry"]["amount"] == "-1240.18"
    status, replay = post(ledgers.alice_key, "entries", TRANSACTION)
    assert (status, replay["entry"]["id"], replay["replayed"]) == (200, created["entry"]["id"], True)
    status, conflict = post(ledgers.alice_key, "entries", {**TRANSACTION, "amount": "-1240.19"})
    assert (status, conflict["error"]["code"]) == (409, "conflict")
    status, reversal = post(ledgers.alice_key, "reverse", {"entry_id": created["entry"]["id"], "reason": "refund"})
    assert (status, reversal["entry"]["amount"]) == (201, "1240.18")
    status, again = post(ledgers.alice_key, "reverse", {"entry_id": created["entry"]["id"], "reason": "refund"})
    assert (status, again["error"]["message"]) == (409, "409 Conflict: entry was already reversed")
    status, balance = post(ledgers.alice_key, "balance", {})
    assert (status, balance["balances"]) == (200, [])
    status, listed = post(ledgers.alice_key, "list", {"currency": "USD"})
    assert [e["reversed_by"] is not None for e in listed["entries"]] == [False, True]
    status, upcoming = post(ledgers.alice_key, "upcoming", {})
    assert (status, upcoming["reminders"]) == (200, [])


@pytest.mark.django_db
def test_rest_refuses_a_memory_only_key_and_hides_alices_entries_from_charlie(ledgers: Ledgers) -> None:
    status, refused = post(ledgers.alice_memory_key, "entries", TRANSACTION)
    assert (status, refused["error"]["message"]) == (403, "403 Forbidden: key lacks ledger:write")
    _, created = post(ledgers.alice_key, "entries", TRANSACTION)
    status, missing = post(ledgers.charlie_key, "reverse", {"entry_id": created["entry"]["id"], "reason": "x"})
    assert (status, missing["error"]["message"]) == (404, "ledger entry not found")
    status, bad = post(ledgers.alice_key, "entries", {**TRANSACTION, "amount": 12.5})
    assert (status, bad["error"]["message"]) == (400, "amount must be a string")


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["entries", "list", "balance", "reverse", "upcoming", "complete"])
def test_a_body_of_json_null_is_refused_not_read_as_an_empty_object(ledgers: Ledgers, path: str) -> None:
    status, refused = post(ledgers.alice_key, path, "null")
    assert (status, refused["error"]["message"]) == (400, "the request body must be a JSON object")


def test_mcp_and_rest_give_the_same_answers_and_error_texts(live_server: LiveServer, ledgers: Ledgers) -> None:
    def rest(key: str, path: str, body: Any) -> httpx.Response:
        return httpx.post(f"{live_server}/api/v1/ledger/{path}", json=body,
                          headers={"Authorization": f"Bearer {key}"}, timeout=10.0)  # fmt: skip

    is_error, recorded = mcp_call(live_server, ledgers.alice_key, "ledger_record", TRANSACTION)
    assert not is_error, recorded
    assert isinstance(recorded, dict)
    assert rest(ledgers.alice_key, "entries", TRANSACTION).json()["entry"] == recorded["entry"]
    cases = [
        ("ledger_record", "entries", ledgers.alice_memory_key, TRANSACTION),
        ("ledger_list", "list", ledgers.alice_memory_key, {}),
        ("ledger_record", "entries", ledgers.alice_key, {**TRANSACTION, "amount": "1.5", "currency": "JPY"}),
        ("ledger_record", "entries", ledgers.alice_key, {**TRANSACTION, "amount": "-1240.00"}),
        ("ledger_reverse", "reverse", ledgers.charlie_key, {"entry_id": recorded["entry"]["id"], "reason": "x"}),
        ("ledger_upcoming", "upcoming", ledgers.alice_key, {"until": "2001-01-01T00:00:00Z"}),
    ]
    for tool, path, key, body in cases:
        message = rest(key, path, body).json()["error"]["message"]
        assert mcp_call(live_server, key, tool, body) == (True, f"Error executing tool {tool}: {message}"), tool


def test_oauth_tokens_need_the_ledger_scope_of_each_ledger_tool() -> None:
    from interfaces.mcp_server.tools import scope_of_tool

    scopes = scope_of_tool()
    assert {t: scopes[t] for t in scopes if t.startswith("ledger_")} == {
        "ledger_record": "ledger:write",
        "ledger_reverse": "ledger:write",
        "ledger_complete": "ledger:write",
        "ledger_list": "ledger:read",
        "ledger_balance": "ledger:read",
        "ledger_upcoming": "ledger:read",
    }
    assert (scopes["remember"], scopes["search"]) == ("memory:write", "memory:read")
