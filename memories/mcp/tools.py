"""The MCP tools (eight on memories, two on sessions, six on the ledger): each passes its raw arguments to the
service or selector REST also calls.

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
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from starlette.requests import HTTPConnection

from accounts.keys import Principal
from accounts.models import SCOPE_LEDGER_READ, SCOPE_LEDGER_WRITE, SCOPE_READ, SCOPE_WRITE
from ledger import inputs as ledger_inputs
from ledger import presenters as ledger_presenters
from ledger import selectors as ledger_selectors
from ledger import services as ledger_services
from memories import inputs, presenters, selectors, services
from memories.mcp import descriptions, resources, schemas
from memories.mcp.auth import principal_of
from memories.mcp.threads import run_sync
from mmw.boundary import UNAVAILABLE_MESSAGE, is_unavailable, new_request_id, request_state
from mmw.errors import MMWError
from transcripts import inputs as session_inputs
from transcripts import presenters as session_presenters
from transcripts import selectors as session_selectors
from transcripts import services as session_services

logger = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "x-idempotency-key"

# (principal, raw arguments, HTTP request headers) -> the answer
Operation = Callable[[Principal, Any, Mapping[str, str]], Mapping[str, object]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    params: tuple[inputs.Param, ...]
    description: str
    operation: Operation
    annotations: ToolAnnotations
    answer: Any  # the answer's TypedDict (or a union of them): the source of the outputSchema
    linked: Callable[[Mapping[str, Any]], list[presenters.Record]] | None = None  # records to link as resources
    scope: str | None = None  # the scope it needs, when not memory:read / memory:write by its annotations


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


def _list_workspaces(
    principal: Principal, arguments: Any, headers: Mapping[str, str]
) -> session_presenters.WorkspacesAndTurns:
    inputs.parse(inputs.LIST_WORKSPACES, arguments)  # refuses unknown parameters
    return session_selectors.workspaces_and_turns(principal=principal)


def _get(principal: Principal, arguments: Any, headers: Mapping[str, str]) -> presenters.Answer:
    memory_id = inputs.parse(inputs.GET, arguments)["memory_id"]
    return selectors.memory_get(principal=principal, memory_id=memory_id)


def _search_sessions(
    principal: Principal, arguments: Any, headers: Mapping[str, str]
) -> session_presenters.SessionsFound:
    return session_selectors.session_search(principal=principal, payload=arguments)


def _forget_session(
    principal: Principal, arguments: Any, headers: Mapping[str, str]
) -> session_presenters.SessionForgotten:
    return session_services.session_forget(principal=principal, payload=arguments)


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


def _results(answer: Mapping[str, Any]) -> list[presenters.Record]:
    return list(answer["results"])


def _items(answer: Mapping[str, Any]) -> list[presenters.Record]:
    return list(answer["items"])


_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# A write that adds (a record, a ledger entry): repeating it adds again.
_APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# A write that forgets: repeating it changes nothing more.
_ERASE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "remember",
        "Remember a fact",
        inputs.REMEMBER,
        descriptions.REMEMBER,
        _remember,
        _APPEND,
        presenters.Remembered,
    ),
    ToolSpec("search", "Search memory", inputs.SEARCH, descriptions.SEARCH, _search, _READ, presenters.Found, _results),
    ToolSpec(
        "forget",
        "Forget records",
        inputs.FORGET,
        descriptions.FORGET,
        _forget,
        _ERASE,
        presenters.ForgottenOne | presenters.ForgottenSource,
    ),
    ToolSpec(
        "validate_memory",
        "Find stale records",
        inputs.VALIDATE,
        descriptions.VALIDATE_MEMORY,
        _validate,
        _READ,
        presenters.Validation,
    ),
    ToolSpec(
        "memory_history",
        "Versions of a fact",
        inputs.HISTORY,
        descriptions.MEMORY_HISTORY,
        _history,
        _READ,
        presenters.History,
    ),
    ToolSpec(
        "recall_context",
        "Context pack for a task",
        inputs.RECALL,
        descriptions.RECALL_CONTEXT,
        _recall,
        _READ,
        presenters.Recalled,
        _items,
    ),
    ToolSpec(
        "list_workspaces",
        "List workspaces",
        inputs.LIST_WORKSPACES,
        descriptions.LIST_WORKSPACES,
        _list_workspaces,
        _READ,
        session_presenters.WorkspacesAndTurns,
    ),
    ToolSpec("get_memory", "Get one record", inputs.GET, descriptions.GET_MEMORY, _get, _READ, presenters.Got),
    ToolSpec(
        "search_sessions",
        "Search past sessions",
        session_inputs.SEARCH_SESSIONS,
        descriptions.SEARCH_SESSIONS,
        _search_sessions,
        _READ,
        session_presenters.SessionsFound,
    ),
    ToolSpec(
        "forget_session",
        "Forget a session",
        session_inputs.FORGET_SESSION,
        descriptions.FORGET_SESSION,
        _forget_session,
        _ERASE,
        session_presenters.SessionForgotten,
    ),
    ToolSpec(
        "ledger_record",
        "Record a transaction or reminder",
        ledger_inputs.RECORD,
        descriptions.LEDGER_RECORD,
        _ledger_record,
        _APPEND,
        ledger_presenters.Recorded,
        scope=SCOPE_LEDGER_WRITE,
    ),
    ToolSpec(
        "ledger_list",
        "List ledger entries",
        ledger_inputs.LIST,
        descriptions.LEDGER_LIST,
        _ledger_list,
        _READ,
        ledger_presenters.Listed,
        scope=SCOPE_LEDGER_READ,
    ),
    ToolSpec(
        "ledger_balance",
        "Ledger balances",
        ledger_inputs.BALANCE,
        descriptions.LEDGER_BALANCE,
        _ledger_balance,
        _READ,
        ledger_presenters.Balances,
        scope=SCOPE_LEDGER_READ,
    ),
    ToolSpec(
        "ledger_reverse",
        "Reverse a ledger entry",
        ledger_inputs.REVERSE,
        descriptions.LEDGER_REVERSE,
        _ledger_reverse,
        _APPEND,
        ledger_presenters.Recorded,
        scope=SCOPE_LEDGER_WRITE,
    ),
    ToolSpec(
        "ledger_upcoming",
        "Reminders falling due",
        ledger_inputs.UPCOMING,
        descriptions.LEDGER_UPCOMING,
        _ledger_upcoming,
        _READ,
        ledger_presenters.Upcoming,
        scope=SCOPE_LEDGER_READ,
    ),
    ToolSpec(
        "ledger_complete",
        "Complete a reminder",
        ledger_inputs.COMPLETE,
        descriptions.LEDGER_COMPLETE,
        _ledger_complete,
        _APPEND,
        ledger_presenters.Recorded,
        scope=SCOPE_LEDGER_WRITE,
    ),
)


def scope_of_tool() -> dict[str, str]:
    """The scope each tool needs: the ledger tools their own (``ledger:read`` / ``ledger:write``),
    the other read-only tools ``memory:read``, the rest ``memory:write`` (the same split the
    services enforce; used to answer an OAuth token 403 before the call)."""
    return {
        spec.name: spec.scope
        or (SCOPE_READ if spec.annotations is not None and spec.annotations.read_only_hint else SCOPE_WRITE)
        for spec in TOOLS
    }


def tools_for(scopes: Collection[str]) -> frozenset[str]:
    """The tools a caller holding ``scopes`` is listed: those it may call. A tool left out still
    answers when called, with the documented error (``403 Forbidden: key lacks <scope>``) — the
    services decide that, not the listing."""
    return frozenset(name for name, scope in scope_of_tool().items() if scope in scopes)


def build_tools() -> list[Tool]:
    return [_tool(spec) for spec in TOOLS]


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
