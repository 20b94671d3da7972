"""The MCP contract over real HTTP: the official SDK client against uvicorn serving the ASGI app."""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx
import pytest

from accounts import services as account_services
from accounts.models import ALL_SCOPES, ApiKey
from interfaces import reference
from memories import inputs, selectors
from memories.models import Memory
from tests import live
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import LiveServer, mcp_call, mcp_list_tools, rest

live_server = live.live_server

pytestmark = pytest.mark.slow

TOOL_INPUTS = reference.TOOLS
# What a default key (the memory scopes) is listed: every tool but the ledger's.
MEMORY_TOOLS = [name for name in TOOL_INPUTS if not name.startswith("ledger_")]
READ_ONLY = {
    "search_sessions",
    "search",
    "validate_memory",
    "memory_history",
    "recall_context",
    "list_workspaces",
    "get_memory",
    "ledger_list",
    "ledger_balance",
    "ledger_upcoming",
}

STAGING = {
    "content": "staging is deployed through the systemd unit app-staging",
    "source": "agent",
    "source_id": "docs/deploy.md",
    "source_hash": "sha256:9f2c4e1a",
    "fact_key": "deploy-staging",
    "confidence": 0.9,
}


def remember(url: str, key: str, args: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    is_error, answer = mcp_call(url, key, "remember", args, headers)
    assert not is_error, answer
    assert isinstance(answer, dict)
    return answer


def ok(url: str, key: str, tool: str, args: dict[str, Any] | None) -> dict[str, Any]:
    is_error, answer = mcp_call(url, key, tool, args)
    assert not is_error, answer
    assert isinstance(answer, dict)
    return answer


def post_mcp(url: str, headers: dict[str, str], path: str = "/mcp") -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return httpx.post(f"{url}{path}", json=body, headers={**accept, **headers}, timeout=10.0)


def test_all_tools_are_listed_with_the_shared_input_schemas(live_server: LiveServer, tenancy: Tenancy) -> None:
    every_scope = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES)
    tools = {t.name: t for t in mcp_list_tools(live_server, every_scope)}
    assert set(tools) == set(TOOL_INPUTS)
    for name, params in TOOL_INPUTS.items():
        assert tools[name].input_schema == inputs.tool_schema(params), name
        assert tools[name].input_schema["additionalProperties"] is False
        assert f"Reference: mmw://docs/{name}" in (tools[name].description or ""), name
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.read_only_hint is (name in READ_ONLY), name
    assert tools["remember"].input_schema["required"] == ["content"]
    forget_annotations = tools["forget"].annotations
    assert forget_annotations is not None
    assert forget_annotations.destructive_hint is True


def test_remembered_record_is_found_by_keyword_search(live_server: LiveServer, tenancy: Tenancy) -> None:
    saved = remember(live_server, tenancy.alice.key, STAGING)
    assert saved["status"] == "unverified"
    assert saved["version"] == 1
    assert saved["tenant_id"] == tenancy.alice.account.tenant_id
    assert saved["project_id"] == str(tenancy.alice.project.id)

    found = ok(live_server, tenancy.alice.key, "search", {"query": "app-staging systemd"})
    assert [r["id"] for r in found["results"]] == [saved["id"]]
    assert found["results"][0]["content"] == STAGING["content"]
    assert found["results"][0]["author"]["device_label"] == "alice-laptop"

    record = ok(live_server, tenancy.alice.key, "get_memory", {"memory_id": saved["id"]})
    assert record["memory"]["fact_key"] == "deploy-staging"


def test_both_surfaces_share_records_and_error_texts(live_server: LiveServer, tenancy: Tenancy) -> None:
    key = tenancy.alice.key
    saved = remember(live_server, key, STAGING)
    response = rest(live_server, key, "GET", f"/api/v1/memories/{saved['id']}")
    assert response.status_code == 200, response.text
    assert response.json()["memory"] == ok(live_server, key, "get_memory", {"memory_id": saved["id"]})["memory"]

    response = rest(live_server, key, "POST", "/api/v1/memories", json={"content": " "})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert mcp_call(live_server, key, "remember", {"content": " "}) == (
        True,
        f"Error executing tool remember: {message}",
    )


def test_legacy_handshake_clients_are_served_statelessly_too(live_server: LiveServer, tenancy: Tenancy) -> None:
    assert [t.name for t in mcp_list_tools(live_server, tenancy.alice.key, mode="legacy")] == MEMORY_TOOLS
    is_error, saved = mcp_call(live_server, tenancy.alice.key, "remember", {"content": "legacy era"}, mode="legacy")
    assert not is_error, saved
    is_error, text = mcp_call(live_server, tenancy.alice.key, "remember", {"content": ""}, mode="legacy")
    assert (is_error, text) == (True, "Error executing tool remember: content must not be empty")


SERVICE_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {"content": "   "}, "content must not be empty"),
    ("remember", {"content": "x", "confidence": 1.5}, "confidence must be between 0 and 1"),
    ("remember", {"content": "x", "source_hash": "h"}, "source_id is required when source_hash is provided"),
    ("remember", {"content": 42}, "content must be a string"),
    ("search", {"query": "x", "bogus": 1}, "unknown parameter(s): bogus"),
    ("search", {}, "query is required"),
    ("forget", {}, "Either memory_id or source_id must be provided"),
    ("get_memory", {"memory_id": "no-such-id"}, "memory not found"),
    ("list_workspaces", {"extra": True}, "unknown parameter(s): extra"),
]


def test_service_errors_come_back_as_tool_errors_with_the_exact_text(live_server: LiveServer, tenancy: Tenancy) -> None:
    # One server for all cases: starting one per case would cost more than the calls.
    for tool, args, message in SERVICE_ERRORS:
        expected = (True, f"Error executing tool {tool}: {message}")
        assert mcp_call(live_server, tenancy.alice.key, tool, args) == expected, (tool, args)


def test_missing_or_invalid_key_is_refused_with_401_and_www_authenticate(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    for headers in ({}, {"Authorization": "Bearer mmw_notAKeyAtAll0000000000"}, {"Authorization": "Basic abc"}):
        response = post_mcp(live_server, headers)
        assert response.status_code == 401, headers
        assert response.headers["WWW-Authenticate"].startswith("Bearer "), headers
    assert post_mcp(live_server, {"Authorization": f"Bearer {tenancy.alice.key}"}).status_code == 200


def test_revoked_key_is_refused_at_once(live_server: LiveServer, tenancy: Tenancy) -> None:
    auth = {"Authorization": f"Bearer {tenancy.alice.key}"}
    assert post_mcp(live_server, auth).status_code == 200
    key = ApiKey.objects.get(user=tenancy.alice.user, project=tenancy.alice.project)
    account_services.api_key_revoke(api_key=key, actor=tenancy.alice.user)
    response = post_mcp(live_server, auth)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


def test_get_is_405_and_the_trailing_slash_needs_no_redirect(live_server: LiveServer, tenancy: Tenancy) -> None:
    for path in ("/mcp", "/mcp/"):
        for headers in ({}, {"Authorization": f"Bearer {tenancy.alice.key}"}):
            response = httpx.get(f"{live_server}{path}", headers={"Accept": "text/event-stream", **headers})
            assert response.status_code == 405
            assert response.headers["Allow"] == "POST"
    response = post_mcp(live_server, {"Authorization": f"Bearer {tenancy.alice.key}"}, path="/mcp/")
    assert response.status_code == 200
    assert [t["name"] for t in response.json()["result"]["tools"]] == MEMORY_TOOLS


def test_unknown_host_header_is_refused_like_django_does(live_server: LiveServer, tenancy: Tenancy) -> None:
    response = post_mcp(live_server, {"Authorization": f"Bearer {tenancy.alice.key}", "Host": "evil.example"})
    assert response.status_code == 400


def test_idempotency_key_header_replays_the_first_answer(live_server: LiveServer, tenancy: Tenancy) -> None:
    headers = {"X-Idempotency-Key": "retry-7f3a"}
    first = remember(live_server, tenancy.alice.key, STAGING, headers)
    again = remember(live_server, tenancy.alice.key, STAGING, headers)
    assert again == first
    assert Memory.objects.filter(fact_key="deploy-staging").count() == 1

    changed = {**STAGING, "content": "staging moved to app-staging-v2"}
    assert mcp_call(live_server, tenancy.alice.key, "remember", changed, headers) == (
        True,
        "Error executing tool remember: 409 Conflict: idempotency key was used with different input",
    )
    assert mcp_call(live_server, tenancy.alice.key, "remember", STAGING, {"X-Idempotency-Key": "k" * 257}) == (
        True,
        "Error executing tool remember: invalid X-Idempotency-Key",
    )


def test_unexpected_exception_is_internal_error_without_details(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(**kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("db password is hunter2")

    monkeypatch.setattr(selectors, "memory_search", explode)
    with caplog.at_level(logging.ERROR, logger="interfaces.mcp_server.tools"):
        answer = mcp_call(live_server, tenancy.alice.key, "search", {"query": "anything"})
    is_error, text = answer
    assert is_error
    match = re.fullmatch(r"Error executing tool search: internal error \(request ([0-9a-f]{12})\)", str(text))
    assert match, text
    logged = [r for r in caplog.records if r.name == "interfaces.mcp_server.tools"]
    assert len(logged) == 1, "logged once"
    assert match.group(1) in logged[0].getMessage()
    assert logged[0].exc_info is not None
    assert "hunter2" in str(logged[0].exc_info[1])


def test_charlie_sees_nothing_of_alices_memory_through_any_tool(live_server: LiveServer, tenancy: Tenancy) -> None:
    saved = remember(live_server, tenancy.alice.key, {**STAGING, "tags": ["kind:pinned"]})
    url, charlie, memory_id = live_server, tenancy.charlie.key, saved["id"]

    for workspace in ("default", "*"):
        assert ok(url, charlie, "search", {"query": "app-staging systemd", "workspace": workspace})["results"] == []
    assert mcp_call(url, charlie, "get_memory", {"memory_id": memory_id}) == (
        True,
        "Error executing tool get_memory: memory not found",
    )
    assert mcp_call(url, charlie, "memory_history", {"memory_id": memory_id}) == (
        True,
        "Error executing tool memory_history: memory not found",
    )
    assert ok(url, charlie, "memory_history", {"fact_key": "deploy-staging"})["versions"] == []
    assert ok(url, charlie, "recall_context", {"task": "deploy staging with systemd"})["items"] == []
    validation = ok(url, charlie, "validate_memory", {"source_id": "docs/deploy.md", "current_source_hash": "new"})
    assert (validation["stale_count"], validation["fresh_count"]) == (0, 0)
    workspaces = ok(url, charlie, "list_workspaces", {})
    assert workspaces["project_id"] == str(tenancy.charlie.project.id)
    assert sum(w["memory_count"] for w in workspaces["workspaces"]) == 0
    assert ok(url, charlie, "forget", {"memory_id": memory_id})["forgotten"] is False
    assert ok(url, charlie, "forget", {"source_id": "docs/deploy.md"})["forgotten_count"] == 0

    # Alice's record is untouched, and Bob (same organisation and project) sees it.
    assert [r["id"] for r in ok(url, tenancy.bob.key, "search", {"query": "app-staging"})["results"]] == [memory_id]
    alice_workspaces = ok(url, tenancy.alice.key, "list_workspaces", {})["workspaces"]
    assert [(w["name"], w["memory_count"]) for w in alice_workspaces] == [("default", 1)]


def test_since_and_until_give_the_same_answers_over_mcp_and_rest(live_server: LiveServer, tenancy: Tenancy) -> None:
    key = tenancy.alice.key
    old = remember(live_server, key, {"content": "the kickoff chose Postgres", "occurred_at": "2023-05-01T09:00:00Z"})
    new = remember(live_server, key, {"content": "the retro kept Postgres", "position": 2, "source_id": "retro"})
    assert (old["occurred_at"], new["position"]) == ("2023-05-01T09:00:00+00:00", 2)
    windows: list[dict[str, Any]] = [{"since": "2024-01-01T00:00:00Z"}, {"until": "2023-12-31T00:00:00+01:00"}]
    for window, expected in zip(windows, [new["id"], old["id"]], strict=True):
        over_mcp = ok(live_server, key, "search", {"query": "Postgres", **window})
        over_rest = rest(live_server, key, "POST", "/api/v1/memories/search", json={"query": "Postgres", **window})
        assert [r["id"] for r in over_mcp["results"]] == [r["id"] for r in over_rest.json()["results"]] == [expected]
        pack = ok(live_server, key, "recall_context", {"task": "Postgres", **window})
        assert [i["id"] for i in pack["items"]] == [expected]
    bad = {"query": "Postgres", "since": "2025-01-02T00:00:00Z", "until": "2025-01-01T00:00:00Z"}
    is_error, text = mcp_call(live_server, key, "search", bad)
    response = rest(live_server, key, "POST", "/api/v1/memories/search", json=bad)
    assert (is_error, text) == (True, f"Error executing tool search: {response.json()['error']['message']}")
    assert response.json()["error"]["message"] == "since must not be later than until"
