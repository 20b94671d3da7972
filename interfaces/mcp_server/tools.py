"""The one ``/mcp`` server's tool machinery: every app's tools (``interfaces.mcp.registered``) made
SDK tools, the scope each needs, and one call — each tool passes its raw arguments to the service
or selector REST also calls, and its answer goes back both as ``structuredContent`` and as its
JSON text, with ``resource_link`` blocks for what the tool links (``ToolSpec.linked``).

Input schemas come from each tool's parameter table (``memories.inputs``, the same tables the
services parse with), and the SDK does no argument validation of its own: a tool's argument model
is empty, so the services see exactly what the client sent and report problems with the same
texts as REST. Output schemas are generated from each tool's answer ``TypedDict``
(``interfaces.mcp_server.schemas``).
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

from accounts.models import SCOPE_READ, SCOPE_WRITE
from interfaces.mcp import ToolSpec, registered
from interfaces.mcp_server import schemas
from interfaces.mcp_server.auth import principal_of
from interfaces.threads import run_sync
from memories import inputs
from mmw.boundary import UNAVAILABLE_MESSAGE, is_unavailable, new_request_id, request_state
from mmw.errors import MMWError

logger = logging.getLogger(__name__)


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
    links = spec.linked(answer) if spec.linked is not None else []
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
