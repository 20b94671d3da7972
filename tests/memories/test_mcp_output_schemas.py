"""Every MCP tool's ``outputSchema`` against its real answers, over real HTTP.

The schemas are generated from the answer ``TypedDict``s (``interfaces.mcp_server.schemas``); here each
tool is called for real — every shape its answer can take (a forgotten stub in a history, both
kinds of ``forget``, stale and fresh records, session hits with context) — and each answer is
validated twice: against its tool's advertised (compact) schema, as a client does, and against
the whole schema of its ``TypedDict`` *closed* (no undeclared keys, nested fields included), so a
presenter that grows or loses a field without its ``TypedDict`` fails. ``structuredContent`` must
be on every answer and say the same as its text.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, TextContent, Tool

from accounts.models import ALL_SCOPES
from interfaces.mcp import registered
from interfaces.mcp_server import schemas
from tests import live
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import LiveServer
from tests.transcripts.test_surfaces import upload

live_server = live.live_server

pytestmark = pytest.mark.slow

SOURCE = {"source_id": "docs/deploy.md", "source_hash": "sha256:aaaa"}


def test_schemas_are_object_rooted_and_closed_schemas_are_valid_json_schema() -> None:
    for spec in registered():
        for schema in (schemas.output_schema(spec.answer), schemas.answer_schema(spec.answer)):
            assert schema["type"] == "object", spec.name
            Draft202012Validator.check_schema(schema)
            Draft202012Validator.check_schema(schemas.closed(schema))


def test_the_advertised_schema_names_every_top_level_field_with_its_type() -> None:
    for spec in registered():
        whole, advertised = schemas.answer_schema(spec.answer), schemas.output_schema(spec.answer)
        shapes = whole.get("anyOf", [whole])
        compact = advertised.get("anyOf", [advertised])
        assert len(shapes) == len(compact), spec.name
        for shape, short in zip(shapes, compact, strict=True):
            shape = whole["$defs"][shape["$ref"].rsplit("/", 1)[1]] if "$ref" in shape else shape
            assert list(short["properties"]) == list(shape["properties"]), spec.name
            assert short.get("required", []) == shape.get("required", []), spec.name
            assert all(field.get("type") for field in short["properties"].values()), spec.name


def test_every_tools_real_answers_match_its_output_schema(live_server: LiveServer, tenancy: Tenancy) -> None:
    key = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES)  # memory and ledger
    upload(live_server, key)
    upload(live_server, key, sid="s-2")

    async def session(client: Client) -> tuple[list[Tool], list[tuple[str, CallToolResult]]]:
        tools = list((await client.list_tools()).tools)
        answers: list[tuple[str, CallToolResult]] = []

        async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(name, args)
            assert not result.is_error, result.content
            answers.append((name, result))
            return dict(result.structured_content or {})

        first = await call("remember", {"content": "staging runs on port 8443", "fact_key": "staging-port", **SOURCE})
        await call("remember", {"content": "staging runs on port 9443", "fact_key": "staging-port"})
        await call("remember", {"content": "the token is sk-live-abcdefghijklmnopqrstuvwx1234", "tags": ["t"]})
        await call("search", {"query": "staging runs on port"})
        await call("get_memory", {"memory_id": first["id"]})
        await call("validate_memory", {"source_id": SOURCE["source_id"], "current_source_hash": "sha256:bbbb"})
        await call("recall_context", {"task": "which port does staging run on"})
        await call("list_workspaces", {})
        await call("forget", {"memory_id": first["id"]})
        await call("memory_history", {"fact_key": "staging-port"})
        await call("forget", {"source_id": "nothing/here"})
        await call("search_sessions", {"query": "pin pgvector in the Dockerfile", "context": 1})
        await call("forget_session", {"client": "claude-code", "session_id": "s-2"})
        paid = await call("ledger_record", {"kind": "transaction", "amount": "-12.50", "currency": "EUR",
                                            "reference": "inv-1", "category": "hosting"})  # fmt: skip
        rent = await call("ledger_record", {"kind": "reminder", "amount": "-900", "currency": "JPY",
                                            "due_at": "2099-01-31T09:00:00Z", "repeat": "FREQ=MONTHLY"})  # fmt: skip
        await call("ledger_complete", {"entry_id": rent["entry"]["id"]})
        await call("ledger_reverse", {"entry_id": paid["entry"]["id"], "reason": "duplicate"})
        await call("ledger_list", {"limit": 1})
        await call("ledger_balance", {"by_category": True, "by_month": True})
        await call("ledger_upcoming", {})
        return tools, answers

    async def run() -> tuple[list[Tool], list[tuple[str, CallToolResult]]]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(f"{live_server}/mcp", http_client=http)) as client:
            return await session(client)

    tools, answers = anyio.run(run)
    advertised = {tool.name: tool.output_schema for tool in tools}
    assert advertised == {spec.name: schemas.output_schema(spec.answer) for spec in registered()}
    assert {name for name, _ in answers} == set(advertised)  # every tool was exercised
    for name, result in answers:
        structured = result.structured_content
        assert structured is not None, name
        text = "".join(block.text for block in result.content if isinstance(block, TextContent))
        assert json.loads(text) == structured, name
        spec = next(spec for spec in registered() if spec.name == name)
        for schema in (advertised[name], schemas.closed(schemas.answer_schema(spec.answer))):
            validator = Draft202012Validator(schema)
            problems = [
                f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(structured)
            ]
            assert not problems, (name, problems)

    shapes = {name: result.structured_content for name, result in answers}
    history = shapes["memory_history"]
    assert history is not None
    assert any(version.get("forgotten") is True for version in history["versions"])  # a stub was validated
    found = shapes["search"]
    assert found is not None
    assert found["results"]  # records were validated, not an empty list
