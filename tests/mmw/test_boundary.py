"""The API's exception boundary on a live server (REST and MCP over real HTTP): JSON only.

Faults are injected by replacing a selector (or the key resolver, or a Django middleware) in
this process, which serves the real ASGI app (tests/live.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.db import OperationalError

from interfaces.mcp_server import auth
from memories import selectors
from mmw import health
from mmw.boundary import BULK_BODY_BYTES, MAX_BODY_BYTES, json_too_deep
from tests.conftest import Tenancy
from tests.live import LiveServer, live_server, mcp_call

__all__ = ["live_server"]

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
REQUEST_ID = re.compile(r"internal error \(request ([0-9a-f]{12})\)")


def search_call(query: Any = "anything") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": query}},
    }


def post(url: str, key: str | None, path: str, content: bytes | Iterator[bytes], **headers: str) -> httpx.Response:
    base = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{url}{path}", content=content, headers={**base, **headers}, timeout=30)


def deep(levels: int) -> bytes:
    return b'{"query": ' + b"[" * levels + b"]" * levels + b"}"


def explode(**kwargs: Any) -> dict[str, Any]:
    raise RuntimeError("db password is hunter2")


def database_gone(**kwargs: Any) -> dict[str, Any]:
    raise OperationalError("connection to server at 127.0.0.1 port 5432 failed: Connection refused")


def assert_json_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body: dict[str, Any] = response.json()
    assert body["error"]["code"] == code, body
    return body


# --- unexpected exceptions -----------------------------------------------------------------


def test_rest_unexpected_exception_is_json_500_with_the_request_id_logged_once(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(selectors, "memory_search", explode)
    with caplog.at_level(logging.INFO):
        response = post(live_server, tenancy.alice.key, "/api/v1/memories/search", b'{"query": "x"}', **MCP_HEADERS)
    body = assert_json_error(response, 500, "internal_error")
    match = REQUEST_ID.fullmatch(body["error"]["message"])
    assert match, body
    assert response.headers["x-request-id"] == match.group(1)
    assert "hunter2" not in response.text
    mentions = [
        r for r in caplog.records if "hunter2" in str(r.exc_info and r.exc_info[1]) or "hunter2" in r.getMessage()
    ]
    assert len(mentions) == 1, [r.getMessage() for r in mentions]
    assert match.group(1) in mentions[0].getMessage()
    assert mentions[0].exc_info is not None


def test_rest_exception_outside_the_view_is_json_500(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from django.middleware.common import CommonMiddleware

    def broken(self: Any, request: Any) -> None:
        raise RuntimeError("middleware broke")

    monkeypatch.setattr(CommonMiddleware, "process_request", broken)
    with caplog.at_level(logging.INFO):
        response = httpx.get(
            f"{live_server}/api/v1/workspaces", headers={"Authorization": f"Bearer {tenancy.alice.key}"}
        )
    body = assert_json_error(response, 500, "internal_error")
    request_id = REQUEST_ID.fullmatch(body["error"]["message"])
    assert request_id
    assert response.headers["x-request-id"] == request_id.group(1)
    logged = [r for r in caplog.records if r.exc_info and "middleware broke" in str(r.exc_info[1])]
    assert len(logged) == 1
    assert request_id.group(1) in logged[0].getMessage()


def test_mcp_unexpected_exception_names_the_request_id_also_sent_as_header(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "memory_search", explode)
    response = httpx.post(
        f"{live_server}/mcp",
        json=search_call(),
        headers={**MCP_HEADERS, "Authorization": f"Bearer {tenancy.alice.key}"},
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text == f"Error executing tool search: internal error (request {response.headers['x-request-id']})"


# --- database unavailable ----------------------------------------------------------------------


def test_rest_database_unavailable_is_503_with_retry_after(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "memory_search", database_gone)
    response = post(live_server, tenancy.alice.key, "/api/v1/memories/search", b'{"query": "x"}', **MCP_HEADERS)
    assert_json_error(response, 503, "service_unavailable")
    assert int(response.headers["retry-after"]) >= 1


def test_mcp_tool_meeting_an_unavailable_database_answers_http_503(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "memory_search", database_gone)
    response = httpx.post(
        f"{live_server}/mcp",
        json=search_call(),
        headers={**MCP_HEADERS, "Authorization": f"Bearer {tenancy.alice.key}"},
    )
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert body["id"] == 7
    assert body["error"]["message"].startswith("service unavailable"), body


def test_mcp_key_check_meeting_an_unavailable_database_answers_http_503(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def resolve_key(token: str) -> None:
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(auth, "resolve_key_or_refusal", resolve_key)
    response = httpx.post(
        f"{live_server}/mcp",
        json=search_call(),
        headers={**MCP_HEADERS, "Authorization": f"Bearer {tenancy.alice.key}"},
    )
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/json"
    assert "retry-after" in response.headers


def test_mcp_key_check_crashing_is_json_500_not_plain_text(
    live_server: LiveServer, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def resolve_key(token: str) -> None:
        raise RuntimeError("bug in key lookup")

    monkeypatch.setattr(auth, "resolve_key_or_refusal", resolve_key)
    response = httpx.post(
        f"{live_server}/mcp",
        json=search_call(),
        headers={**MCP_HEADERS, "Authorization": f"Bearer {tenancy.alice.key}"},
    )
    assert response.status_code == 500, response.text
    assert response.json()["error"]["message"] == f"internal error (request {response.headers['x-request-id']})"


# --- bodies: size and depth --------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
def test_rest_body_over_1_mb_is_json_413(live_server: LiveServer, tenancy: Tenancy, streamed: bool) -> None:
    big = b'{"content": "' + b"x" * MAX_BODY_BYTES + b'"}'
    content: bytes | Iterator[bytes] = (
        iter([big[i : i + 65536] for i in range(0, len(big), 65536)]) if streamed else big
    )
    response = post(live_server, tenancy.alice.key, "/api/v1/memories", content, **{"Content-Type": "application/json"})
    body = assert_json_error(response, 413, "payload_too_large")
    assert "1 MB" in body["error"]["message"]


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
def test_mcp_body_over_1_mb_is_413_with_a_json_rpc_error(
    live_server: LiveServer, tenancy: Tenancy, streamed: bool
) -> None:
    big = httpx.Request("POST", "/", json=search_call("x" * MAX_BODY_BYTES)).read()
    content: bytes | Iterator[bytes] = (
        iter([big[i : i + 65536] for i in range(0, len(big), 65536)]) if streamed else big
    )
    response = post(live_server, tenancy.alice.key, "/mcp", content, **MCP_HEADERS)
    assert response.status_code == 413
    assert "1 MB" in response.json()["error"]["message"]


def test_a_body_just_under_the_limit_is_not_refused_for_its_size(live_server: LiveServer, tenancy: Tenancy) -> None:
    body = b'{"query": "' + b"x" * (MAX_BODY_BYTES - 100) + b'"}'
    response = post(live_server, tenancy.alice.key, "/api/v1/memories/search", body, **MCP_HEADERS)
    assert response.status_code != 413


def test_the_batch_route_takes_bodies_over_1_mb_up_to_16_mb(live_server: LiveServer, tenancy: Tenancy) -> None:
    records = [{"content": f"record {i} " + "lorem ipsum " * 8000} for i in range(12)]
    body = json.dumps({"records": records}).encode()
    assert MAX_BODY_BYTES < len(body) < BULK_BODY_BYTES
    response = post(live_server, tenancy.alice.key, "/api/v1/memories/batch", body, **MCP_HEADERS)
    assert response.status_code == 200, response.text
    assert all("id" in r for r in response.json()["results"])
    elsewhere = post(live_server, tenancy.alice.key, "/api/v1/memories", body, **MCP_HEADERS)
    assert_json_error(elsewhere, 413, "payload_too_large")
    huge = b'{"records": [{"content": "' + b"x" * BULK_BODY_BYTES + b'"}]}'
    refused = post(live_server, tenancy.alice.key, "/api/v1/memories/batch", huge, **MCP_HEADERS)
    body_of = assert_json_error(refused, 413, "payload_too_large")
    assert body_of["error"]["message"] == "request body exceeds 16 MB"


def test_json_nested_deeper_than_32_is_400_on_rest_and_mcp(live_server: LiveServer, tenancy: Tenancy) -> None:
    rest = post(live_server, tenancy.alice.key, "/api/v1/memories/search", deep(1000), **MCP_HEADERS)
    assert_json_error(rest, 400, "invalid_input")
    mcp_body = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ' + deep(1000) + b"}"
    mcp = post(live_server, tenancy.alice.key, "/mcp", mcp_body, **MCP_HEADERS)
    assert mcp.status_code == 400
    assert "nested deeper than 32" in mcp.json()["error"]["message"]


def test_json_nested_32_deep_still_reaches_the_api(live_server: LiveServer, tenancy: Tenancy) -> None:
    response = post(live_server, tenancy.alice.key, "/api/v1/memories/search", deep(30), **MCP_HEADERS)
    assert response.status_code == 400
    assert "nested" not in response.text  # refused by the input table, not by the depth check


def test_depth_check_ignores_brackets_inside_strings() -> None:
    assert not json_too_deep(b'{"a": "' + b"[" * 100 + b'"}')
    assert not json_too_deep(b'{"a": "\\"' + b"[" * 100 + b'"}')
    assert json_too_deep(b"[" * 33 + b"]" * 33)
    assert not json_too_deep(b"[" * 32 + b"]" * 32)


# --- no HTML, ever -------------------------------------------------------------------------------


def test_unknown_api_path_is_json_404(live_server: LiveServer, tenancy: Tenancy) -> None:
    response = httpx.get(
        f"{live_server}/api/v1/no-such-thing", headers={"Authorization": f"Bearer {tenancy.alice.key}"}
    )
    assert_json_error(response, 404, "not_found")
    response = httpx.get(f"{live_server}/api/nothing")
    assert_json_error(response, 404, "not_found")


def test_wrong_methods_are_json_405_with_allow(live_server: LiveServer, tenancy: Tenancy) -> None:
    rest = httpx.put(f"{live_server}/api/v1/workspaces", headers={"Authorization": f"Bearer {tenancy.alice.key}"})
    assert_json_error(rest, 405, "method_not_allowed")
    mcp = httpx.get(f"{live_server}/mcp")
    assert mcp.status_code == 405
    assert mcp.headers["allow"] == "POST"
    assert mcp.json()["error"]["message"] == "method not allowed"


def test_mcp_still_works_through_the_boundary(live_server: LiveServer, tenancy: Tenancy) -> None:
    is_error, payload = mcp_call(live_server, tenancy.alice.key, "list_workspaces", {})
    assert not is_error, payload


# --- /healthz -----------------------------------------------------------------------------------


def test_healthz_names_a_dead_broker(live_server: LiveServer, monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"  # the discard port: nothing listens
    response = httpx.get(f"{live_server}/healthz", timeout=5)
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "ok", "broker": "unreachable"}


def test_healthz_answers_at_its_deadline_without_waiting_for_a_hung_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker check that never returns (a hung Redis) is reported unreachable while it is still
    hanging: the report is not waited for it (behaviour, not wall time; the fake gives up after
    30 s, so a regression fails instead of hanging). The real check's client is bounded too."""
    release, returned = threading.Event(), threading.Event()

    def hung() -> None:
        release.wait(30)
        returned.set()

    monkeypatch.setattr(health, "_IN_FLIGHT", {})  # no check of another test in flight
    monkeypatch.setitem(health.CHECKS, "broker", hung)
    monkeypatch.setitem(health.CHECKS, "database", lambda: None)
    try:
        body = asyncio.run(health.report(deadline=0.2))
        assert not returned.is_set(), "the report waited for the broker"
        assert body == {"status": "unavailable", "database": "ok", "broker": "unreachable"}
    finally:
        release.set()
    client = health._redis_client("redis://127.0.0.1:9/0")
    timeouts = {k: client.connection_pool.connection_kwargs[k] for k in ("socket_timeout", "socket_connect_timeout")}
    assert timeouts == {"socket_timeout": health.DEADLINE_SECONDS, "socket_connect_timeout": health.DEADLINE_SECONDS}


@pytest.mark.django_db
def test_an_unknown_api_route_is_a_json_404_naming_it(client: Any) -> None:
    response = client.post("/api/v1/search", data="{}", content_type="application/json")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "no such route: POST /api/v1/search"}}
    assert client.get("/no-such-page").headers["Content-Type"].startswith("text/html")
