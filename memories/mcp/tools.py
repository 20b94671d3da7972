"""The memory tools (eight) and the one ``/mcp`` server's tool machinery: each tool passes its raw
arguments to the service or selector REST also calls. Sessions' and the ledger's tools are declared
in ``transcripts.mcp`` and ``ledger.mcp``; every app's tools reach the server through one
registry (``interfaces.mcp``).

Input schemas come from ``memories.inputs`` (the same tables the services parse with), and the
SDK does no argument validation of its own: a tool's argument model is empty, so the services
see exactly what the client sent and report problems with the same texts as REST. Output schemas
are generated from each tool's answer ``TypedDict`` (``memories.mcp.schemas``); every answer is
returned both as ``structuredContent`` and as its JSON text, and ``search`` and ``recall_context``
add a ``resource_link`` (``mmw://memories/<id>``) for each record they return.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent
from starlette.requests import HTTPConnection

from accounts.keys import Principal
from accounts.models import SCOPE_READ, SCOPE_WRITE
from interfaces.mcp import APPEND, ERASE, READ, ToolSpec, register, registered
from interfaces.threads import run_sync
from memories import inputs, presenters, selectors, services
from memories.mcp import descriptions, resources, schemas
from memories.mcp.auth import principal_of
from mmw.boundary import UNAVAILABLE_MESSAGE, is_unavailable, new_request_id, request_state
from mmw.errors import MMWError

logger = logging.getLogger(__name__)

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


def _results(answer: Mapping[str, Any]) -> list[presenters.Record]:
    return list(answer["results"])


def _items(answer: Mapping[str, Any]) -> list[presenters.Record]:
    return list(answer["items"])


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


def scope_of_tool() -> dict[str, str]:
    """The scope each tool needs: the ledger tools their own (``ledger:read`` / ``ledger:write``),
    the other read-only tools ``memory:read``, the rest ``memory:write`` (the same split the
    services enforce; used to answer an OAuth token 403 before the call)."""
    return {
        spec.name: spec.scope
        or (SCOPE_READ if spec.annotations is not None and spec.annotations.read_only_hint else SCOPE_WRITE)
        for spec in registered()
    }


def tools_for(scopes: Collection[str]) -> frozenset[str]:
    """The tools a caller holding ``scopes`` is listed: those it may call. A tool left out still
    answers when called, with the documented error (``403 Forbidden: key lacks <scope>``) — the
    services decide that, not the listing."""
    return frozenset(name for name, scope in scope_of_tool().items() if scope in scopes)


def build_tools() -> list[Tool]:
    return [_tool(spec) for spec in registered()]


def _tool(spec: ToolSpec) -> Tool:
    async def run(ctx: Context[Any, Any]) -> CallToolResult:
        return await call(spec, ctx)

    tool = Tool.from_function(
        run,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=spec.annotations,
        structured_output=False,
    )
    # The advertised schemas are ours; the function takes no arguments and declares no output
    # model, so the SDK validates nothing (the answers are typed by their TypedDicts instead).
    metadata = tool.fn_metadata.model_copy(update={"output_schema": schemas.output_schema(spec.answer)})
    return tool.model_copy(update={"parameters": inputs.tool_schema(spec.params), "fn_metadata": metadata})


async def call(spec: ToolSpec, ctx: Context[Any, Any]) -> CallToolResult:
    """Run one tool call; every failure becomes a ``ToolError`` (``isError`` with our text).

    ``MMWError`` keeps its exact message; anything else is logged here with its traceback and
    reaches the client only as ``internal error (request <id>)``.
    """
    request = ctx.request_context.request
    principal = principal_of(request)
    params = ctx.request_context.params or {}
    arguments = params.get("arguments")  # raw, as the client sent them
    headers: Mapping[str, str] = request.headers if isinstance(request, HTTPConnection) else {}
    try:
        answer = await run_sync(spec.operation, principal, arguments, headers)
        text = json.dumps(answer, ensure_ascii=False)
    except MMWError as exc:
        raise ToolError(exc.message) from None
    except Exception as exc:  # noqa: BLE001 - the tool boundary: logged with an id, never shown raw
        raise _unexpected(spec.name, exc, request) from None
    links = resources.links(spec.linked(answer)) if spec.linked is not None else []
    notes = [TextContent(type="text", text=note) for note in _notes(answer)]
    return CallToolResult(
        content=[TextContent(type="text", text=text), *notes, *links], structured_content=dict(answer)
    )


def _notes(answer: Mapping[str, Any]) -> list[str]:
    """Short sentences for the agent beside the JSON: where else a short search has results."""
    other = answer.get("other_workspaces") or []
    if not other:
        return []
    where = ", ".join(f'"{o["workspace"]}" ({o["matches"]})' for o in other)
    return [f"Fewer results here than asked; other workspaces have matches: {where}. "
            'Search again with workspace set to one of them, or "*" for all.']  # fmt: skip


def _unexpected(tool: str, exc: Exception, request: Any) -> ToolError:
    """The tool error for a failure that is not a domain error, logged once with the request id.

    An unavailable database also marks the request (``RequestState.unavailable``): the boundary
    around ``/mcp`` then answers HTTP 503 with ``Retry-After`` instead of this result.
    """
    state = request_state(request.scope if isinstance(request, HTTPConnection) else None)
    request_id = state.request_id if state is not None else new_request_id()
    if is_unavailable(exc):
        if state is not None:
            state.unavailable = True
        logger.warning("MCP tool %s: database unavailable (request %s): %r", tool, request_id, exc)
        return ToolError(UNAVAILABLE_MESSAGE)
    logger.error("MCP tool %s: internal error (request %s)", tool, request_id, exc_info=exc)
    return ToolError(f"internal error (request {request_id})")
