"""``tools/list`` per key over real HTTP with the official client, under both eras of the protocol
(2026-07-28, where every request carries its key, and 2025-11-25, after the initialize handshake):
a key is listed only the tools its scopes let it call, the same list on every call; a tool left
out of the listing still answers its documented error when called."""

from __future__ import annotations

import pytest

from accounts.models import ALL_SCOPES, LEDGER_SCOPES, SCOPE_LEDGER_READ, SCOPE_READ
from interfaces import reference
from tests import live
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import LiveServer, mcp_call, mcp_list_tools

live_server = live.live_server

pytestmark = pytest.mark.slow

# the official client's modes: "auto" speaks 2026-07-28 to MMW, "legacy" the initialize handshake
BOTH_REVISIONS = pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "2025-11-25"])

LEDGER_READS = {"ledger_list", "ledger_balance", "ledger_upcoming"}
LEDGER_WRITES = {"ledger_record", "ledger_reverse", "ledger_complete"}
MEMORY_READS = {
    "search",
    "get_memory",
    "validate_memory",
    "memory_history",
    "recall_context",
    "list_workspaces",
    "search_sessions",
}
MEMORY_WRITES = {"remember", "forget", "forget_session"}


def listed(url: str, key: str, mode: str) -> list[str]:
    return [tool.name for tool in mcp_list_tools(url, key, mode=mode)]


@BOTH_REVISIONS
def test_a_key_is_listed_only_the_tools_its_scopes_allow(live_server: LiveServer, tenancy: Tenancy, mode: str) -> None:
    alice, project = tenancy.alice.user, tenancy.alice.project
    assert set(MEMORY_READS | MEMORY_WRITES | LEDGER_READS | LEDGER_WRITES) == set(reference.TOOLS)
    expected = {
        tenancy.alice.key: MEMORY_READS | MEMORY_WRITES,  # a default key: the memory scopes
        issue_key(alice, project, scopes=[SCOPE_READ]): MEMORY_READS,
        issue_key(alice, project, scopes=LEDGER_SCOPES): LEDGER_READS | LEDGER_WRITES,
        issue_key(alice, project, scopes=[SCOPE_READ, SCOPE_LEDGER_READ]): MEMORY_READS | LEDGER_READS,
        issue_key(alice, project, scopes=ALL_SCOPES): set(reference.TOOLS),
    }
    for key, tools in expected.items():
        names = listed(live_server, key, mode)
        assert set(names) == tools
        assert listed(live_server, key, mode) == names  # stable: clients cache the listing
        assert names == [name for name in reference.TOOLS if name in tools]  # in one order for every key


@BOTH_REVISIONS
def test_calling_a_tool_left_out_of_the_listing_answers_its_documented_error(
    live_server: LiveServer, tenancy: Tenancy, mode: str
) -> None:
    alice, project = tenancy.alice.user, tenancy.alice.project
    read_only = issue_key(alice, project, scopes=[SCOPE_READ])
    ledger_only = issue_key(alice, project, scopes=LEDGER_SCOPES)
    entry = {"kind": "transaction", "amount": "-12.50", "currency": "EUR"}
    cases = [
        (tenancy.alice.key, "ledger_record", entry, "403 Forbidden: key lacks ledger:write"),
        (tenancy.alice.key, "ledger_balance", {}, "403 Forbidden: key lacks ledger:read"),
        (read_only, "remember", {"content": "x"}, "403 Forbidden: key lacks memory:write"),
        (read_only, "forget_session", {"client": "c", "session_id": "s"}, "403 Forbidden: key lacks memory:write"),
        (ledger_only, "search", {"query": "x"}, "403 Forbidden: key lacks memory:read"),
    ]
    for key, tool, args, message in cases:
        assert tool not in listed(live_server, key, mode)
        assert mcp_call(live_server, key, tool, args, mode=mode) == (True, f"Error executing tool {tool}: {message}")
