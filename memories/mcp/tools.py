"""The memory tools (eight): each passes its raw arguments to the service or selector REST also
calls. Sessions' and the ledger's tools are declared in ``transcripts.mcp`` and ``ledger.mcp``;
every app's tools reach the one ``/mcp`` server (``interfaces.mcp_server``) through one registry
(``interfaces.mcp``). Input schemas come from ``memories.inputs``; ``search`` and
``recall_context`` add a ``resource_link`` (``mmw://memories/<id>``) for each record they return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import ResourceLink

from accounts.keys import Principal
from interfaces.mcp import APPEND, ERASE, READ, ToolSpec, register
from memories import inputs, presenters, selectors, services
from memories.mcp import descriptions, resources

IDEMPOTENCY_HEADER = "x-idempotency-key"


# Services and selectors are looked up when called (not bound here), so tests can replace them.
def _remember(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    return services.memory_remember(
        principal=principal, payload=arguments, idempotency_key=headers.get(IDEMPOTENCY_HEADER)
    )


def _search(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    return selectors.memory_search(principal=principal, payload=arguments)


def _forget(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    return services.memory_forget(principal=principal, payload=arguments)


def _validate(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    return selectors.memory_validate(principal=principal, payload=arguments)


def _history(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    return selectors.memory_history(principal=principal, payload=arguments)


def _recall(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    return selectors.recall_context(principal=principal, payload=arguments)


def _list_workspaces(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Workspaces:
    inputs.parse(inputs.LIST_WORKSPACES, arguments)  # refuses unknown parameters
    return selectors.workspace_list(principal=principal)


def _get(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    memory_id = inputs.parse(inputs.GET, arguments)["memory_id"]
    return selectors.memory_get(principal=principal, memory_id=memory_id)


def _results(answer: Mapping[str, Any]) -> list[ResourceLink]:
    return resources.links(answer["results"])


def _items(answer: Mapping[str, Any]) -> list[ResourceLink]:
    return resources.links(answer["items"])


MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "remember",
        "Remember a fact",
        inputs.REMEMBER,
        descriptions.REMEMBER,
        _remember,
        APPEND,
        presenters.Remembered,
    ),
    ToolSpec("search", "Search memory", inputs.SEARCH, descriptions.SEARCH, _search, READ, presenters.Found, _results),
    ToolSpec(
        "forget",
        "Forget records",
        inputs.FORGET,
        descriptions.FORGET,
        _forget,
        ERASE,
        presenters.ForgottenOne | presenters.ForgottenSource,
    ),
    ToolSpec(
        "validate_memory",
        "Find stale records",
        inputs.VALIDATE,
        descriptions.VALIDATE_MEMORY,
        _validate,
        READ,
        presenters.Validation,
    ),
    ToolSpec(
        "memory_history",
        "Versions of a fact",
        inputs.HISTORY,
        descriptions.MEMORY_HISTORY,
        _history,
        READ,
        presenters.History,
    ),
    ToolSpec(
        "recall_context",
        "Context pack for a task",
        inputs.RECALL,
        descriptions.RECALL_CONTEXT,
        _recall,
        READ,
        presenters.Recalled,
        _items,
    ),
    ToolSpec(
        "list_workspaces",
        "List workspaces",
        inputs.LIST_WORKSPACES,
        descriptions.LIST_WORKSPACES,
        _list_workspaces,
        READ,
        presenters.Workspaces,
    ),
    ToolSpec("get_memory", "Get one record", inputs.GET, descriptions.GET_MEMORY, _get, READ, presenters.Got),
)
register("memories", *MEMORY_TOOLS)
