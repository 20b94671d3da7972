"""The tool list's budget (``interfaces.mcp_server.budget``, issue #36), measured on the server's own
listing: what a default key's agent reads before its first question stays small, and the long
reference is one resource away (``mmw://docs/<tool>``) rather than pasted into each tool."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp_types import ListToolsResult

from accounts.models import ALL_SCOPES, DEFAULT_KEY_SCOPES, LEDGER_SCOPES, SCOPE_READ
from interfaces import reference
from interfaces.mcp_server.budget import BUDGET, measure
from interfaces.mcp_server.endpoint import build_server
from memories import inputs

KINDS = {
    "default": DEFAULT_KEY_SCOPES,
    "read-only": (SCOPE_READ,),
    "ledger only": LEDGER_SCOPES,
    "all scopes": ALL_SCOPES,
}


def listing(scopes: tuple[str, ...]) -> dict[str, Any]:
    tools = anyio.run(build_server().list_tools_for, scopes)
    answer: dict[str, Any] = ListToolsResult(tools=tools).model_dump(mode="json", by_alias=True, exclude_none=True)
    return answer


def test_a_default_keys_tool_list_is_within_the_budget() -> None:
    sizes = measure(listing(DEFAULT_KEY_SCOPES))
    assert sizes.over(BUDGET) == [], sizes


@pytest.mark.parametrize("kind", KINDS)
def test_no_key_is_listed_a_description_over_the_budgets_characters(kind: str) -> None:
    for tool in listing(KINDS[kind])["tools"]:
        assert len(tool["description"]) <= BUDGET.description_chars, tool["name"]


def test_every_tool_names_its_reference_page_as_a_resource() -> None:
    for tool in listing(ALL_SCOPES)["tools"]:
        assert f"mmw://docs/{tool['name']}" in tool["description"], tool["name"]


def test_the_advertised_input_schema_keeps_what_a_caller_must_know_of_the_whole_one() -> None:
    """Types, allowed values, defaults, numeric ranges (short of a column's limit), what is
    required and that nothing else is taken: only lengths, list sizes, character rules and null
    are left to the reference page."""
    for tool, params in reference.TOOLS.items():
        whole, advertised = inputs.json_schema(params), inputs.tool_schema(params)
        assert list(advertised["properties"]) == list(whole["properties"]), tool
        assert advertised.get("required", []) == whole["required"], tool
        assert advertised["additionalProperties"] is False
        for param in params:
            field = advertised["properties"][param.name]
            full = next(s for s in whole["properties"][param.name].get("anyOf", [whole["properties"][param.name]]))
            assert field["type"] == full["type"], (tool, param.name)
            assert field.get("enum") == (full.get("enum") or full.get("items", {}).get("enum")), (tool, param.name)
            assert field.get("default") == param.default, (tool, param.name)
            assert field.get("minimum") == param.minimum, (tool, param.name)
            assert field.get("maximum") == (param.maximum if (param.maximum or 0) < inputs.MAX_INT else None)
            # A parameter whose name, type and default say it all carries no description there.
            assert field.get("description") == (None if param.named else param.description), (tool, param.name)
            assert param.meaning.startswith(param.description)
