"""docs/reliability.md, "Input bounds": every class of bad input, over REST and MCP, gets its exact 4xx text.

Bodies are sent as raw JSON text (lone surrogates can only be written as ``\\ud800`` escapes), to a
real served application. After the whole table, the same workspace still serves remember, search,
get, forget and the dashboard's pages: no bad input may leave something behind that breaks reads.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import mcp_types
import pytest
from django.db import connection
from django.test import Client

from billing.models import Plan
from interfaces import reference
from memories.models import Memory
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call, rest

live_server = live.live_server

API = "/api/v1"
OK = {"content": "an ordinary fact"}
NUL = "a\x00b"
SURROGATE = "a\ud800b"
LONE = "must not contain NUL or unpaired surrogate characters"
BIDI_NAME = "prod\u202eshadow"

# (tool, arguments, REST path, expected HTTP status, expected message)
Case = tuple[str, dict[str, Any], str, int, str]


def _text_field_cases() -> list[Case]:
    cases: list[Case] = []
    for field in ("content", "workspace", "scope", "source", "source_id", "source_revision", "fact_key", "reason"):
        for bad in (NUL, SURROGATE):
            cases.append(("remember", {**OK, field: bad}, "/memories", 400, f"{field} {LONE}"))
    cases.append(("remember", {**OK, "source_id": "s", "source_hash": NUL}, "/memories", 400, f"source_hash {LONE}"))
    cases.append(("remember", {**OK, "tags": ["ok", NUL]}, "/memories", 400, f"tags[1] {LONE}"))
    cases.append(("remember", {**OK, "tags": [SURROGATE]}, "/memories", 400, f"tags[0] {LONE}"))
    cases.append(("remember", {**OK, "expires_at": NUL}, "/memories", 400, f"expires_at {LONE}"))
    for field in ("query", "workspace", "scope", "fact_key", "source_id"):
        cases.append(("search", {"query": "q", field: NUL}, "/memories/search", 400, f"{field} {LONE}"))
    cases.append(("search", {"query": SURROGATE}, "/memories/search", 400, f"query {LONE}"))
    cases.append(("search", {"query": "q", "tags": [NUL]}, "/memories/search", 400, f"tags[0] {LONE}"))
    cases.append(("forget", {"source_id": NUL}, "/memories/forget", 400, f"source_id {LONE}"))
    cases.append(("forget", {"memory_id": NUL}, "/memories/forget", 400, f"memory_id {LONE}"))
    cases.append(("validate_memory", {"source_id": NUL, "current_source_hash": "h"}, "/memories/validate", 400,
                  f"source_id {LONE}"))  # fmt: skip
    cases.append(("recall_context", {"task": NUL}, "/recall-context", 400, f"task {LONE}"))
    return cases


def _length_cases() -> list[Case]:
    cases: list[Case] = []
    for field in ("workspace", "scope", "source"):
        cases.append(("remember", {**OK, field: "w" * 201}, "/memories", 400, f"{field} exceeds maximum length of 200"))
    for field in ("source_id", "source_revision", "fact_key"):
        cases.append(
            ("remember", {**OK, field: "k" * 1001}, "/memories", 400, f"{field} exceeds maximum length of 1000")
        )
    cases += [
        ("remember", {**OK, "source_id": "s", "source_hash": "h" * 1001}, "/memories", 400,
         "source_hash exceeds maximum length of 1000"),
        ("remember", {**OK, "reason": "r" * 10_001}, "/memories", 400, "reason exceeds maximum length of 10000"),
        ("remember", {**OK, "tags": ["t" * 201]}, "/memories", 400, "tags[0] exceeds maximum length of 200"),
        ("remember", {**OK, "tags": [f"t{i}" for i in range(65)]}, "/memories", 400, "tags accepts at most 64 items"),
        ("remember", {"content": "x" * 100_001}, "/memories", 413, "content exceeds maximum allowed length"),
        ("search", {"query": "q" * 10_001}, "/memories/search", 400, "query exceeds maximum length of 10000"),
        ("search", {"query": "q", "workspace": "w" * 201}, "/memories/search", 400,
         "workspace exceeds maximum length of 200"),
        ("search", {"query": "q", "tags": ["t"] * 65}, "/memories/search", 400, "tags accepts at most 64 items"),
        ("forget", {"source_id": "s" * 1001}, "/memories/forget", 400, "source_id exceeds maximum length of 1000"),
        ("recall_context", {"task": "t", "workspace": "w" * 201}, "/recall-context", 400,
         "workspace exceeds maximum length of 200"),
    ]  # fmt: skip
    return cases


def _value_cases() -> list[Case]:
    return [
        # names a write would create
        ("remember", {**OK, "workspace": "*"}, "/memories", 400, "workspace must not contain '*'"),
        ("remember", {**OK, "workspace": "team*"}, "/memories", 400, "workspace must not contain '*'"),
        ("remember", {**OK, "workspace": BIDI_NAME}, "/memories", 400,
         "workspace must be printable text without control or bidi characters"),
        ("remember", {**OK, "workspace": "line\nbreak"}, "/memories", 400,
         "workspace must be printable text without control or bidi characters"),
        ("remember", {**OK, "workspace": "zero\u200bwidth"}, "/memories", 400,
         "workspace must be printable text without control or bidi characters"),
        # times: in the future, at most 100 years ahead, never overflowing
        ("remember", {**OK, "expires_at": "9999-12-31T23:59:59-14:00"}, "/memories", 400,
         "expires_at must be at most 100 years ahead"),
        ("remember", {**OK, "expires_at": "999999w"}, "/memories", 400, "expires_at must be at most 100 years ahead"),
        ("remember", {**OK, "expires_at": "999999d"}, "/memories", 400, "expires_at must be at most 100 years ahead"),
        ("remember", {**OK, "expires_at": "0001-01-01T00:00:00+14:00"}, "/memories", 400,
         "expires_at must lie in the future"),
        ("remember", {**OK, "expires_at": "2026-13-45T00:00:00Z"}, "/memories", 400,
         'expires_at must be an RFC 3339 time or a duration like "72h"'),
        # numbers: finite, in range
        ("remember", {**OK, "expected_version": 0, "fact_key": "k"}, "/memories", 400,
         "expected_version must be between 1 and 2147483647"),
        ("remember", {**OK, "confidence": 1e308 * 10}, "/memories", 400, "confidence must be a finite number"),
        ("search", {"query": "q", "min_confidence": -1e308 * 10}, "/memories/search", 400,
         "min_confidence must be a finite number"),
        ("search", {"query": "q", "limit": 10**30}, "/memories/search", 400, "limit must be between 1 and 100"),
        ("recall_context", {"task": "t", "token_budget": -(10**30)}, "/recall-context", 400,
         "token_budget must be between 100 and 32000"),
    ]  # fmt: skip


TABLE = _text_field_cases() + _length_cases() + _value_cases()


@pytest.fixture(autouse=True)
def _unlimited_calls(db: None) -> None:
    """Hundreds of calls in a minute here: the plans' per-minute limits are not under test."""
    Plan.objects.update(calls_per_minute_per_key=None, calls_per_minute_per_project=None)


def raw_rest(server: LiveServer, key: str, path: str, arguments: dict[str, Any]) -> httpx.Response:
    """POST ``arguments`` as JSON text, escapes kept (``json.dumps`` writes lone surrogates and
    infinities as ``\\ud800`` and ``Infinity``; the latter is not JSON, so it goes as 1e999)."""
    body = json.dumps(arguments).replace("-Infinity", "-1e999").replace("Infinity", "1e999")
    return httpx.post(
        f"{server}{API}{path}",
        content=body.encode("ascii"),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=30,
    )


def raw_mcp(server: LiveServer, key: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """A ``tools/call`` as raw JSON-RPC over the streamable-HTTP transport (stateless, JSON answers),
    so the arguments reach the server exactly as written."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": arguments, "_meta": meta}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    body = json.dumps(call).replace("-Infinity", "-1e999").replace("Infinity", "1e999")
    response = httpx.post(
        f"{server}/mcp",
        content=body.encode("ascii"),
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": mcp_types.LATEST_PROTOCOL_VERSION,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        },
        timeout=30,
    )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return bool(result.get("isError")), "".join(block.get("text", "") for block in result["content"])


@pytest.mark.slow
def test_every_bad_input_gets_its_exact_4xx_on_both_surfaces_and_the_workspace_keeps_working(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    key = tenancy.alice.key
    failures = []
    for tool, arguments, path, status, message in TABLE:
        response = raw_rest(live_server, key, path, arguments)
        got_rest = (response.status_code, _rest_message(response))
        if got_rest != (status, message):
            failures.append(("REST", path, _short(arguments), got_rest))
        got_mcp = raw_mcp(live_server, key, tool, arguments)
        if got_mcp != (True, f"Error executing tool {tool}: {message}"):
            failures.append(("MCP", tool, _short(arguments), got_mcp))
    assert not failures, "\n".join(map(str, failures))
    assert Memory.objects.count() == 0
    _assert_workspace_serves(live_server, tenancy)


def _assert_workspace_serves(server: LiveServer, tenancy: Tenancy) -> None:
    key = tenancy.alice.key
    made = rest(server, key, "POST", f"{API}/memories", json={"content": "the deploy runs on Fridays", "tags": ["ok"]})
    assert made.status_code == 201, made.text
    memory_id = made.json()["id"]
    found = rest(server, key, "POST", f"{API}/memories/search", json={"query": "deploy Fridays"})
    assert [r["id"] for r in found.json()["results"]] == [memory_id]
    assert rest(server, key, "GET", f"{API}/memories/{memory_id}").status_code == 200
    is_error, answer = mcp_call(server, key, "search", {"query": "deploy Fridays"})
    assert not is_error
    assert isinstance(answer, dict)
    assert [r["id"] for r in answer["results"]] == [memory_id]
    browser = Client()
    browser.force_login(tenancy.alice.user)
    project = tenancy.alice.project.pk
    assert browser.get(f"/p/{project}/").status_code == 200
    assert browser.get(f"/p/{project}/memories/{memory_id}/").status_code == 200
    forgotten = rest(server, key, "DELETE", f"{API}/memories/{memory_id}")
    assert forgotten.json()["forgotten"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        (f"{API}/memories/history?fact_key=a%00b", 400, f"fact_key {LONE}"),
        (f"{API}/memories/history?fact_key={'k' * 1001}", 400, "fact_key exceeds maximum length of 1000"),
        (f"{API}/memories/history?fact_key=k&workspace=w%00", 400, f"workspace {LONE}"),
        (f"{API}/memories/{uuid.UUID(int=7)}/history", 404, "memory not found"),
        (f"{API}/memories/a%00b", 404, "memory not found"),
    ],
)
def test_query_string_and_path_parameters_are_bounded_too(
    live_server: LiveServer, tenancy: Tenancy, path: str, status: int, message: str
) -> None:
    response = rest(live_server, tenancy.alice.key, "GET", path)
    assert (response.status_code, _rest_message(response)) == (status, message)


@pytest.mark.slow
def test_delete_with_a_nul_in_the_workspace_parameter_is_a_clear_400(live_server: LiveServer, tenancy: Tenancy) -> None:
    response = rest(live_server, tenancy.alice.key, "DELETE", f"{API}/memories/{uuid.uuid4()}?workspace=a%00")
    assert (response.status_code, _rest_message(response)) == (400, f"workspace {LONE}")


def test_a_stored_expiry_past_year_9999_is_repaired_and_reads_work_again(tenancy: Tenancy) -> None:
    """Rows written before the bound existed: migration 0006 brings them back into range."""
    from tests.memories.rest import Api

    api = Api(tenancy.alice.key)
    memory_id = api.ok_remember(content="kept for ever, as the old server allowed")["id"]
    with connection.cursor() as cursor:  # what the old server stored for "9999-12-31T23:59:59-14:00"
        cursor.execute("UPDATE memories_memory SET expires_at = '9999-12-31 23:59:59-14' WHERE id = %s", [memory_id])
    with pytest.raises(Exception, match="year"):  # the damage: this row cannot be loaded
        list(Memory.objects.filter(id=memory_id))
    _run_repair()
    record = Memory.objects.get(id=memory_id)
    assert record.expires_at is not None
    assert (record.expires_at - record.created_at).days == 36524
    assert [r["id"] for r in api.search(query="kept for ever")["results"]] == [memory_id]


def test_workspace_names_a_write_may_no_longer_create_are_renamed_with_their_records(tenancy: Tenancy) -> None:
    from accounts.models import Workspace
    from tests.memories.rest import Api

    api = Api(tenancy.alice.key)
    project = tenancy.alice.project
    star = Workspace.objects.create(project=project, name="*")
    bidi = Workspace.objects.create(project=project, name=BIDI_NAME)
    Workspace.objects.create(project=project, name="team_")
    clash = Workspace.objects.create(project=project, name="team*")
    _run_repair()
    names = {w.public_id: w.name for w in Workspace.objects.filter(project=project)}
    assert names[star.public_id] == "_"
    assert names[bidi.public_id] == "prod_shadow"
    assert names[clash.public_id] == f"team_-{clash.public_id.hex[:8]}"
    assert api.ok_remember(content="still writable by id", workspace=str(star.public_id))["workspace"] == "_"


def _run_repair() -> None:
    from importlib import import_module

    from django.apps import apps

    module = import_module("memories.migrations.0006_repair_out_of_bounds_values")
    with connection.cursor() as cursor:
        cursor.execute(module.REPAIR_EXPIRY)
    module.repair_workspace_names(apps, None)


def _rest_message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"<not JSON: {response.text[:200]!r}>"


def _short(arguments: dict[str, Any]) -> str:
    return json.dumps({k: (v[:20] + "…" if isinstance(v, str) and len(v) > 20 else v) for k, v in arguments.items()})[
        :200
    ]


# --- every parameter of every operation, generated from the one table ------------------------

# tool: (a valid base payload, its REST path; None: MCP only here); parameters from reference.TOOLS
OPERATIONS: dict[str, tuple[dict[str, Any], str | None]] = {
    "remember": ({"content": "x"}, "/memories"),
    "search": ({"query": "q"}, "/memories/search"),
    "forget": ({}, "/memories/forget"),
    "validate_memory": ({"source_id": "s", "current_source_hash": "h"}, "/memories/validate"),
    "recall_context": ({"task": "t"}, "/recall-context"),
    "memory_history": ({"fact_key": "k"}, None),
    "get_memory": ({"memory_id": str(uuid.uuid4())}, None),
    "search_sessions": ({"query": "q"}, "/sessions/search"),
    "forget_session": ({"client": "c", "session_id": "s"}, None),
}


def _generated_cases() -> list[Case]:
    """For each parameter: NUL, an unpaired surrogate, one character over its length, one item
    over its count, a non-finite number — each expected to be refused with the generic text."""
    cases: list[Case] = []
    for tool, (base, path) in OPERATIONS.items():
        for p in reference.TOOLS[tool]:
            bad_values: list[tuple[Any, str]]
            if p.kind == "string":
                bad_values = [(NUL, f"{p.name} {LONE}"), (SURROGATE, f"{p.name} {LONE}")]
                if p.max_length is not None:
                    message = p.too_long or f"{p.name} exceeds maximum length of {p.max_length}"
                    bad_values.append(("y" * (p.max_length + 1), message))
            elif p.kind == "string[]":
                bad_values = [([NUL], f"{p.name}[0] {LONE}")]
                if p.max_items is not None:
                    too_many = p.too_many or f"{p.name} accepts at most {p.max_items} items"
                    bad_values.append(([str(uuid.uuid4()) for _ in range(p.max_items + 1)], too_many))
            elif p.kind == "number":
                bad_values = [(float("inf"), f"{p.name} must be a finite number")]
            else:
                continue
            for value, message in bad_values:
                status = 413 if p.too_long and isinstance(value, str) and len(value) > (p.max_length or 0) else 400
                cases.append((tool, {**base, p.name: value}, path or "", status, message))
    return cases


GENERATED = _generated_cases()


@pytest.mark.slow
def test_every_parameter_of_every_operation_is_bounded_on_both_surfaces(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    key = tenancy.alice.key
    failures: list[tuple[Any, ...]] = []
    for tool, arguments, path, status, message in GENERATED:
        if path:
            response = raw_rest(live_server, key, path, arguments)
            if (response.status_code, _rest_message(response)) != (status, message):
                failures.append(("REST", tool, _short(arguments), response.status_code, _rest_message(response)))
        got = raw_mcp(live_server, key, tool, arguments)
        if got != (True, f"Error executing tool {tool}: {message}"):
            failures.append(("MCP", tool, _short(arguments), got))
    assert len(GENERATED) > 90  # 95 today: every bounded parameter of the eight operations
    assert not failures, "\n".join(map(str, failures))
    assert Memory.objects.count() == 0
