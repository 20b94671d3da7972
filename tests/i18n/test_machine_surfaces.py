"""Issue #42: what agents read stays English. REST answers are byte-identical (status, headers
that matter, body) whatever Accept-Language says; MCP answers too (over the live server)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.test import Client

from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer

LANGUAGES = ("en", "ru", "fr-FR,fr;q=0.9")


def answers(client: Client, method: str, path: str, key: str | None, **extra: Any) -> list[tuple[int, bytes, str]]:
    seen = []
    for language in LANGUAGES:
        headers = {"HTTP_ACCEPT_LANGUAGE": language, **extra}
        if key:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
        response = getattr(client, method)(path, **headers)
        assert "Content-Language" not in response
        assert "Accept-Language" not in response.get("Vary", "")
        seen.append((response.status_code, response.content, response.get("Content-Type", "")))
    return seen


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "with_key", "extra"),
    [
        ("get", "/api/v1/workspaces", True, {}),
        ("get", "/api/v1/memories?limit=2", True, {}),
        ("get", "/api/v1/memories?limit=-5", True, {}),  # a refused input
        ("get", "/api/v1/workspaces", False, {}),  # 401: DRF's own text has ru/fr catalogues
        ("delete", "/api/v1/workspaces", True, {}),  # 405: so has this one
        ("post", "/api/v1/memories", True, {"data": "{not json", "content_type": "application/json"}),  # 400
        ("get", "/api/v1/no-such-route", True, {}),  # 404
        ("get", "/healthz", False, {}),
    ],
)
def test_rest_answers_are_identical_in_every_language(
    tenancy: Tenancy, method: str, path: str, with_key: bool, extra: dict[str, Any]
) -> None:
    client = Client()
    seen = answers(client, method, path, tenancy.alice.key if with_key else None, **extra)
    assert seen[0][0] < 500
    assert seen[1] == seen[0], (path, seen[0][1][:200], seen[1][1][:200])
    assert seen[2] == seen[0], (path, seen[0][1][:200], seen[2][1][:200])


live_server = live.live_server

JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_mcp_answers_are_identical_in_every_language(live_server: LiveServer, tenancy: Tenancy) -> None:
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "forget", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
    ]
    for call in calls:
        bodies = []
        for language in LANGUAGES:
            headers = {**JSON_RPC, "Authorization": f"Bearer {tenancy.alice.key}", "Accept-Language": language}
            response = httpx.post(f"{live_server}/mcp", json=call, headers=headers, timeout=10.0)
            assert response.status_code == 200, response.text
            assert "content-language" not in response.headers
            bodies.append(response.content)
        assert len(set(bodies)) == 1, (call["method"], bodies)
    # Without a key: the 401 text is the same too.
    unauthenticated = {
        httpx.post(f"{live_server}/mcp", json=calls[0], headers={**JSON_RPC, "Accept-Language": lang}).content
        for lang in LANGUAGES
    }
    assert len(unauthenticated) == 1
