"""The MCP transport and protocol rules MMW must keep beyond what the SDK does by default.

Each test names a rule of the MCP specification (transport "Security Warning", tools "Error
Handling", lifecycle "Capability Negotiation", the ``MCP-Protocol-Version`` header) that a probe
found broken, over real HTTP against the live server.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, LATEST_PROTOCOL_VERSION, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer

live_server = live.live_server

pytestmark = pytest.mark.slow

JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, key: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    auth = {"Authorization": f"Bearer {key}"}
    return httpx.post(f"{url}/mcp", json=body, headers={**JSON_RPC, **auth, **(headers or {})}, timeout=10.0)


TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}


def test_a_present_foreign_origin_is_refused_with_403(live_server: LiveServer, tenancy: Tenancy) -> None:
    """Transport spec: a present, invalid Origin MUST get 403 (DNS rebinding from a web page)."""
    for origin in ("http://evil.example.com", "null", "https://127.0.0.1.evil.example"):
        response = post(live_server, tenancy.alice.key, TOOLS_LIST, {"Origin": origin})
        assert response.status_code == 403, origin
        assert response.json()["error"]["message"] == f"Origin not allowed: {origin!r}"
    # No Origin (server-side clients) and the server's own origin are served.
    assert post(live_server, tenancy.alice.key, TOOLS_LIST).status_code == 200
    assert post(live_server, tenancy.alice.key, TOOLS_LIST, {"Origin": live_server.url}).status_code == 200


def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(live_server: LiveServer, tenancy: Tenancy) -> None:
    async def call() -> MCPError | None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {tenancy.alice.key}"})
        async with http, Client(streamable_http_client(f"{live_server}/mcp", http_client=http)) as client:
            try:
                await client.call_tool("no_such_tool", {})
            except MCPError as exc:
                return exc
        return None

    error = anyio.run(call)
    assert error is not None, "an unknown tool must not be answered with a tool result"
    assert error.code == INVALID_PARAMS
    assert "no_such_tool" in error.error.message


def test_only_capabilities_with_something_behind_them_are_advertised(live_server: LiveServer, tenancy: Tenancy) -> None:
    capabilities = post(live_server, tenancy.alice.key, INITIALIZE).json()["result"]["capabilities"]
    assert "tools" in capabilities
    assert "resources" in capabilities  # records: tests/memories/test_mcp_resources.py
    assert "prompts" not in capabilities
    prompts = post(live_server, tenancy.alice.key, {"jsonrpc": "2.0", "id": 2, "method": "prompts/list"}).json()
    assert prompts["error"]["code"] == -32601  # method not found: nothing is served there


def test_an_unsupported_protocol_version_header_is_refused_naming_the_header(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    response = post(live_server, tenancy.alice.key, TOOLS_LIST, {"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "MCP-Protocol-Version" in message
    assert "1999-01-01" in message
    assert "_meta" not in message
    assert post(live_server, tenancy.alice.key, TOOLS_LIST, {"MCP-Protocol-Version": "2025-06-18"}).status_code == 200


def stateless(url: str, key: str, method: str, params: dict[str, Any] | None = None, **options: Any) -> httpx.Response:
    """One 2026-07-28 request: its version and capabilities in ``params._meta``, mirrored in headers."""
    version, request_id = options.get("version", LATEST_MODERN_VERSION), options.get("request_id", 1)
    meta = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": meta}}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    named = {"tools/call": "name", "resources/read": "uri"}.get(method)
    if named is not None and params is not None:
        headers["Mcp-Name"] = params[named]
    return post(url, key, body, headers)


def discover(url: str, key: str, version: str) -> httpx.Response:
    return stateless(url, key, "server/discover", version=version)


def negotiated(url: str, key: str, mode: str) -> str:
    async def connect() -> str:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
            return client.protocol_version

    return anyio.run(connect)


def test_the_sdk_client_negotiates_the_newest_revision_not_the_fallback(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    """Issue #18: serve the newest revision the SDK supports and the previous one. The SDK client's
    default ``mode="auto"`` probes ``server/discover`` and silently falls back to the initialize
    handshake when that fails; the version it ends on says which happened."""
    newest = discover(live_server, tenancy.alice.key, LATEST_MODERN_VERSION)
    assert newest.status_code == 200, newest.text
    supported = newest.json()["result"]["supportedVersions"]
    assert max(supported) == LATEST_PROTOCOL_VERSION == "2026-07-28"
    assert negotiated(live_server, tenancy.alice.key, "auto") == max(supported)
    # the previous revision, by the initialize handshake (what pre-2026 clients do)
    assert negotiated(live_server, tenancy.alice.key, "legacy") == LATEST_HANDSHAKE_VERSION == "2025-11-25"
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
    answer = post(live_server, tenancy.alice.key, INITIALIZE | {"params": params})
    assert answer.json()["result"]["protocolVersion"] == "2025-11-25"


def initialize(url: str, key: str, version: str) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
    answer: dict[str, Any] = post(url, key, INITIALIZE | {"params": params}).json()
    return answer


def test_a_refused_version_is_answered_with_the_request_id_and_the_versions_really_served(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    """The refusal (UnsupportedProtocolVersionError, HTTP 400) carries the request's id and lists
    what ``server/discover`` lists, and every version listed is served: the stateless one per
    request, the others by the initialize handshake (and then in the header)."""
    key = tenancy.alice.key
    served = discover(live_server, key, LATEST_MODERN_VERSION).json()["result"]["supportedVersions"]
    assert served == ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    for version in served[1:]:
        assert initialize(live_server, key, version)["result"]["protocolVersion"] == version
        listed = post(live_server, key, TOOLS_LIST, {"MCP-Protocol-Version": version})
        assert listed.status_code == 200, version
        assert listed.json()["result"]["tools"], version
    refusals = {
        7: post(live_server, key, TOOLS_LIST | {"id": 7}, {"MCP-Protocol-Version": "1999-01-01"}),
        "probe-1": stateless(live_server, key, "server/discover", version="1999-01-01", request_id="probe-1"),
        None: post(live_server, key, {"jsonrpc": "2.0", "method": "ping"}, {"MCP-Protocol-Version": "1999-01-01"}),
    }
    for request_id, response in refusals.items():
        assert response.status_code == 400
        answer = response.json()
        assert "id" in answer  # null when the request has none, never left out
        assert answer["id"] == request_id
        assert answer["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION
        assert answer["error"]["data"] == {"supported": served, "requested": "1999-01-01"}


def test_initialize_and_discover_report_the_same_capabilities(live_server: LiveServer, tenancy: Tenancy) -> None:
    """Nothing is ever pushed to a client (no list-changed notice, no resource updates), so neither
    revision advertises it, and ``subscriptions/listen`` (the 2026-07-28 way to receive those) is
    not served."""
    key = tenancy.alice.key
    handshake = initialize(live_server, key, LATEST_HANDSHAKE_VERSION)["result"]["capabilities"]
    discovered = discover(live_server, key, LATEST_MODERN_VERSION).json()["result"]["capabilities"]
    assert (
        handshake
        == discovered
        == {
            "tools": {"listChanged": False},
            "resources": {"subscribe": False, "listChanged": False},
        }
    )
    listen = stateless(live_server, key, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert listen.status_code == 404
    assert listen.json()["error"]["code"] == METHOD_NOT_FOUND


def test_cacheable_results_say_how_long_and_with_whom_they_may_be_cached(
    live_server: LiveServer, tenancy: Tenancy
) -> None:
    """2026-07-28 caching hints: what is the same for every caller may be shared for five minutes;
    the tool listing depends on the caller's scopes (private); records change at any moment."""
    key = tenancy.alice.key
    requests: dict[str, dict[str, Any]] = {
        "server/discover": {},
        "resources/templates/list": {},
        "tools/list": {},
        "resources/list": {},
        "resources/read": {"uri": "mmw://docs/README"},
    }
    hints = {
        method: (answer["result"]["cacheScope"], answer["result"]["ttlMs"])
        for method, params in requests.items()
        for answer in [stateless(live_server, key, method, params).json()]
    }
    assert hints == {
        "server/discover": ("public", 300_000),
        "resources/templates/list": ("public", 300_000),
        "tools/list": ("private", 300_000),
        "resources/list": ("private", 0),
        "resources/read": ("private", 0),
    }
    # the handshake revisions' answers carry no hints (their schema has none)
    legacy = post(live_server, key, TOOLS_LIST, {"MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION}).json()["result"]
    assert "cacheScope" not in legacy
    assert "ttlMs" not in legacy
