"""Records as MCP resources (``mmw://memories/<id>``) over real HTTP with the official client:
listed a workspace at a time, read with get_memory's visibility rule, linked from search; and the
reference pages (``mmw://docs/<page>``) each tool's description names."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ResourceLink, TextResourceContents

from interfaces import reference
from memories.mcp import resources
from tests import live
from tests.conftest import Tenancy
from tests.docs.test_reference import PAGES
from tests.live import LiveServer, mcp_call

live_server = live.live_server

pytestmark = pytest.mark.slow


def session(url: str, key: str, action: Callable[[Client], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            return await action(client)

    return anyio.run(run)


def remember(url: str, key: str, **args: Any) -> str:
    is_error, answer = mcp_call(url, key, "remember", args)
    assert not is_error, answer
    return str(answer["id"])  # type: ignore[index]


def test_resources_are_advertised_with_the_record_template(live_server: LiveServer, tenancy: Tenancy) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {tenancy.alice.key}"}
    capabilities = httpx.post(f"{live_server}/mcp", json=initialize, headers=headers).json()["result"]["capabilities"]
    assert "resources" in capabilities

    async def templates(client: Client) -> list[str]:
        return [t.uri_template for t in (await client.list_resource_templates()).resource_templates]

    assert session(live_server, tenancy.alice.key, templates) == ["mmw://memories/{memory_id}", "mmw://docs/{page}"]


def test_listing_pages_through_each_workspace_and_hides_what_the_caller_cannot_read(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resources, "PAGE_SIZE", 2)
    alice, bob = tenancy.alice.key, tenancy.bob.key
    mine = {remember(live_server, alice, content=f"default note {i}") for i in range(3)}
    mine.add(remember(live_server, alice, content="ops note", workspace="ops"))
    draft = remember(live_server, bob, content="bob's draft", visibility="author")
    charlie = remember(live_server, tenancy.charlie.key, content="charlie's note")

    async def every_page(client: Client) -> list[tuple[list[str], str | None]]:
        pages, cursor = [], None
        while True:
            listed = await client.list_resources(cursor=cursor)
            pages.append(([r.uri for r in listed.resources], listed.next_cursor))
            cursor = listed.next_cursor
            if cursor is None:
                return pages

    pages = session(live_server, alice, every_page)
    assert [len(uris) for uris, _ in pages] == [2, 1, 1]  # default: 2 + 1, then ops
    assert pages[1][1] == "1 ops"
    listed = {uri for uris, _ in pages for uri in uris}
    assert listed == {resources.uri(i) for i in mine}
    assert resources.uri(draft) not in listed
    assert resources.uri(charlie) not in listed


def test_reading_answers_what_get_memory_answers_under_the_same_visibility_rule(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    alice = tenancy.alice.key
    shared = remember(live_server, alice, content="the deploy runs from CI")
    draft = remember(live_server, tenancy.bob.key, content="bob's draft", visibility="author")

    async def read(client: Client) -> tuple[TextResourceContents, list[str]]:
        contents = (await client.read_resource(resources.uri(shared))).contents[0]
        assert isinstance(contents, TextResourceContents)
        refused = []
        for uri in (resources.uri(draft), "mmw://memories/not-an-id", "mmw://other/x"):
            with pytest.raises(MCPError) as error:
                await client.read_resource(uri)
            assert error.value.error.code == INVALID_PARAMS
            refused.append(error.value.error.message)
        return contents, refused

    contents, refused = session(live_server, alice, read)
    assert contents.mime_type == "application/json"
    got = mcp_call(live_server, alice, "get_memory", {"memory_id": shared})[1]
    assert json.loads(contents.text) == got
    assert refused == ["memory not found"] * 3
    # Bob, the author, reads his draft; Charlie (another account) reads nothing of Alice's.
    assert session(live_server, tenancy.bob.key, lambda c: c.read_resource(resources.uri(draft))).contents

    async def charlie_reads(client: Client) -> str:
        with pytest.raises(MCPError) as error:
            await client.read_resource(resources.uri(shared))
        return error.value.error.message

    assert session(live_server, tenancy.charlie.key, charlie_reads) == "memory not found"


def test_search_and_recall_link_each_record_as_a_resource(live_server: LiveServer, tenancy: Tenancy) -> None:
    alice = tenancy.alice.key
    saved = remember(live_server, alice, content="the staging database listens on port 5433")

    async def search(client: Client) -> tuple[list[ResourceLink], list[ResourceLink], str]:
        found = await client.call_tool("search", {"query": "staging database port"})
        recalled = await client.call_tool("recall_context", {"task": "connect to the staging database"})
        links = [b for b in found.content if isinstance(b, ResourceLink)]
        read = (await client.read_resource(links[0].uri)).contents[0]
        assert isinstance(read, TextResourceContents)
        return links, [b for b in recalled.content if isinstance(b, ResourceLink)], read.text

    links, recall_links, text = session(live_server, alice, search)
    assert [link.uri for link in links] == [resources.uri(saved)]
    assert links[0].mime_type == "application/json"
    assert "staging database" in (links[0].title or "")
    assert resources.uri(saved) in [link.uri for link in recall_links]
    assert json.loads(text)["memory"]["id"] == saved


def test_the_previous_protocol_revision_lists_and_reads_resources_and_sees_output_schemas(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    alice = tenancy.alice.key
    saved = remember(live_server, alice, content="legacy clients read records too")

    async def legacy(client: Client) -> tuple[list[str], str, bool]:
        listed = [r.uri for r in (await client.list_resources()).resources]
        contents = (await client.read_resource(resources.uri(saved))).contents[0]
        assert isinstance(contents, TextResourceContents)
        tools = (await client.list_tools()).tools
        return listed, contents.text, all(t.output_schema for t in tools)

    async def run() -> tuple[list[str], str, bool]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {alice}"})
        streams = streamable_http_client(f"{live_server}/mcp", http_client=http)
        async with http, Client(streams, mode="legacy") as client:
            return await legacy(client)

    listed, text, schemas_everywhere = anyio.run(run)
    assert listed == [resources.uri(saved)]
    assert json.loads(text)["memory"]["id"] == saved
    assert schemas_everywhere


def test_every_reference_page_is_a_resource_any_key_reads(live_server: LiveServer, tenancy: Tenancy) -> None:
    """The tools' descriptions name their page (``mmw://docs/<tool>``, tests/memories/test_mcp_budget.py);
    the pages are public, so even a key without the ledger scopes reads the ledger's."""
    names = [*reference.TOOLS, "errors", "rest", "README"]

    async def read_all(client: Client) -> tuple[dict[str, TextResourceContents], list[str]]:
        pages = {}
        for name in names:
            contents = (await client.read_resource(f"mmw://docs/{name}")).contents[0]
            assert isinstance(contents, TextResourceContents)
            pages[name] = contents
        refused = []
        for uri in ("mmw://docs/nope", "mmw://docs/../settings", "mmw://docs/"):
            with pytest.raises(MCPError) as error:
                await client.read_resource(uri)
            assert error.value.error.code == INVALID_PARAMS
            refused.append(error.value.error.message)
        return pages, refused

    pages, refused = session(live_server, tenancy.alice.key, read_all)
    for name, contents in pages.items():
        assert contents.mime_type == "text/markdown"
        assert contents.text == (PAGES / f"{name}.md").read_text(), name
    assert refused == ["reference page not found"] * 3
