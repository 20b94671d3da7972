"""Records as MCP resources: ``mmw://memories/<id>``, registered with the one ``/mcp`` server
(``interfaces.mcp.register_resources``; the reference pages, ``mmw://docs/<page>``, are the
server's own: ``interfaces.mcp_server.docs``).

``resources/list`` pages through the caller's readable live records one workspace at a time
(workspaces by name, records newest first, ``PAGE_SIZE`` a page; the cursor names the workspace
and the page). ``resources/read`` answers exactly what ``get_memory`` answers, through the same
selector, so the same visibility rule decides: a record the caller cannot read is "memory not
found", like one that does not exist. ``search`` and ``recall_context`` link each record they
return (``resource_link`` content blocks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from mcp_types import Resource, ResourceLink, ResourceTemplate

from accounts.keys import Principal
from interfaces.mcp import Listing, Resources, register_resources
from memories import presenters, selectors
from mmw.errors import InvalidInput

PREFIX = "mmw://memories/"
MIME_TYPE = "application/json"
PAGE_SIZE = 50
CURSOR_CHARS = 300
SNIPPET_CHARS = 80

TEMPLATE = ResourceTemplate(
    uri_template=PREFIX + "{memory_id}",
    name="memory",
    title="A memory record",
    description="One record, as get_memory answers it (JSON), if you can read it.",
    mime_type=MIME_TYPE,
)


def uri(memory_id: str) -> str:
    return PREFIX + memory_id


def _title(record: presenters.Record) -> str:
    text = " ".join(record["content"].split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _resource(record: presenters.Record) -> Resource:
    return Resource(
        uri=uri(record["id"]),
        name=record["id"],
        title=_title(record),
        description=f"workspace {record['workspace']}, {record['scope']}, created {record['created_at']}",
        mime_type=MIME_TYPE,
    )


def links(records: Iterable[presenters.Record]) -> list[ResourceLink]:
    """A ``resource_link`` block for each record a tool returns."""
    return [ResourceLink(**_resource(r).model_dump(exclude={"type"})) for r in records]


def _parse_cursor(cursor: str | None) -> tuple[str | None, int]:
    """``<page> <workspace>`` (the workspace name may contain spaces; the page never does)."""
    if cursor is None:
        return None, 1
    page, _, workspace = cursor[:CURSOR_CHARS].partition(" ")
    if not page.isdigit() or int(page) < 1 or not workspace:
        raise InvalidInput("invalid cursor")
    return workspace, int(page)


def list_page(principal: Principal, cursor: str | None) -> Listing:
    """One page of one workspace's records; the cursor goes on to the next page, then to the next
    workspace that has records, then ends."""
    workspace, page = _parse_cursor(cursor)
    names = [row["name"] for row in selectors.workspace_list(principal=principal)["workspaces"] if row["memory_count"]]
    if workspace is None:
        if not names:
            return Listing([], None)
        workspace = names[0]
    listed = selectors.memory_list(principal=principal, payload={"workspace": workspace}, page=page, per_page=PAGE_SIZE)
    if listed.page.number != page:  # past the last page (Django's paginator would repeat it)
        return Listing([], None)
    resources = [_resource(r) for r in listed.results]
    if listed.page.has_next():
        return Listing(resources, f"{page + 1} {workspace}")
    later = names[names.index(workspace) + 1 :] if workspace in names else []
    return Listing(resources, f"1 {later[0]}" if later else None)


def read(principal: Principal, resource_uri: str) -> str:
    """The record at ``resource_uri`` as ``get_memory``'s JSON answer (``NotFound`` otherwise)."""
    memory_id = resource_uri[len(PREFIX) :] if resource_uri.startswith(PREFIX) else ""
    answer: Mapping[str, object] = selectors.memory_get(principal=principal, memory_id=memory_id)
    return json.dumps(answer, ensure_ascii=False)


register_resources("memories", Resources(PREFIX, TEMPLATE, MIME_TYPE, list_page, read))
