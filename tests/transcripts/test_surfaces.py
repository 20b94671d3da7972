"""search_sessions and forget_session over real HTTP: MCP and REST give the same answers, and
Charlie (another account) reaches nothing of Alice's sessions through either."""

from __future__ import annotations

from typing import Any

from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call, rest
from tests.transcripts.test_sessions import CONVERSATION

live_server = live.live_server

API = "/api/v1"


def upload(server: LiveServer, key: str, sid: str = "s-1") -> None:
    assert rest(server, key, "PUT", f"{API}/sessions/claude-code/{sid}", json={"title": "t"}).status_code == 201
    response = rest(server, key, "POST", f"{API}/sessions/claude-code/{sid}/turns", json={"turns": CONVERSATION})
    assert response.json()["created"] == len(CONVERSATION)


def ok(server: LiveServer, key: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    is_error, answer = mcp_call(server, key, tool, args)
    assert not is_error, answer
    assert isinstance(answer, dict)
    return answer


def test_search_sessions_gives_the_same_answer_with_context_on_both_surfaces(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    key = tenancy.alice.key
    upload(live_server, key)
    query = {"query": "pin pgvector in the Dockerfile", "limit": 3, "context": 1}
    via_mcp = ok(live_server, key, "search_sessions", query)
    via_rest = rest(live_server, key, "POST", f"{API}/sessions/search", json=query).json()
    assert via_mcp == via_rest
    best = via_rest["results"][0]
    assert best["turn"]["position"] == 2
    assert [t["position"] for t in best["context_before"]] == [1]
    assert [t["position"] for t in best["context_after"]] == [3]


def test_forget_session_through_mcp_and_charlie_reaches_nothing(live_server: LiveServer, tenancy: Tenancy) -> None:
    alice, charlie = tenancy.alice.key, tenancy.charlie.key
    upload(live_server, alice)
    query = {"query": "pgvector Dockerfile"}
    assert ok(live_server, charlie, "search_sessions", query)["results"] == []
    answer = ok(live_server, charlie, "forget_session", {"client": "claude-code", "session_id": "s-1"})
    assert {k: v for k, v in answer.items() if k != "at"} == {
        "api_version": "1.0",
        "tenant_id": tenancy.charlie.account.tenant_id,
        "project_id": str(tenancy.charlie.project.id),
        "client": "claude-code",
        "session_id": "s-1",
        "forgotten": False,
    }
    for method, path in (("GET", "/sessions/claude-code/s-1"), ("POST", "/sessions/claude-code/s-1/turns")):
        response = rest(live_server, charlie, method, API + path, json={"turns": CONVERSATION[:1]})
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "session not found"
    assert rest(live_server, charlie, "GET", f"{API}/sessions").json()["total"] == 0
    assert ok(live_server, alice, "search_sessions", query)["results"]
    answer = ok(live_server, alice, "forget_session", {"client": "claude-code", "session_id": "s-1"})
    assert answer["forgotten"] is True
    assert ok(live_server, alice, "search_sessions", query)["results"] == []
