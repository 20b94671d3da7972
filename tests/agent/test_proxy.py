"""``mmw-agent`` as a stdio MCP server in front of a real MMW server, driven by the official MCP
client over stdio (``mcp.client.stdio.stdio_client``): the same tools, answers and error texts as
the server, plus ``mmw_sync_status``; writes queued while the server is down and replayed exactly
once when it is back — also after the agent was killed."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import anyio
import psutil
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent

from accounts.models import ALL_SCOPES
from memories.models import Memory
from tests.agent.conftest import AGENT_CMD
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import ThreadedServer, mcp_call, mcp_list_tools

pytestmark = pytest.mark.slow

T = TypeVar("T")


def run_agent(env: dict[str, str], log: Path, action: Callable[[Client], Awaitable[T]]) -> T:
    params = StdioServerParameters(command=AGENT_CMD[0], args=AGENT_CMD[1:], env=env)

    async def main() -> T:
        with open(log, "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                return await action(client)

    return anyio.run(main)


def text(result: CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def call(env: dict[str, str], log: Path, tool: str, args: dict[str, Any] | None = None) -> CallToolResult:
    async def action(client: Client) -> CallToolResult:
        return await client.call_tool(tool, args)

    return run_agent(env, log, action)


def search_contents(url: str, key: str, query: str) -> list[str]:
    is_error, answer = mcp_call(url, key, "search", {"query": query})
    assert not is_error, answer
    assert isinstance(answer, dict)
    return [r["content"] for r in answer["results"]]


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.2)


def test_lists_the_servers_tools_with_their_schemas_plus_sync_status(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str], tmp_path: Path
) -> None:
    direct = {t.name: t for t in mcp_list_tools(mmw_server.url, tenancy.alice.key)}

    async def action(client: Client) -> Any:
        return (await client.list_tools()).tools

    proxied = {t.name: t for t in run_agent(agent_env, tmp_path / "agent.log", action)}
    assert set(proxied) == {*direct, "mmw_sync_status"}
    for name, tool in direct.items():
        assert proxied[name].input_schema == tool.input_schema, name
        assert proxied[name].description == tool.description, name
        assert proxied[name].annotations == tool.annotations, name


def test_offline_the_cached_listing_is_served_only_for_the_key_it_was_fetched_with(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str], tmp_path: Path
) -> None:
    """The server lists each key the tools its scopes allow, so a listing cached for one key is
    no listing for another (a key with the ledger scopes, then a default key, say)."""
    log = tmp_path / "agent.log"
    every_scope = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES)

    async def names(client: Client) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    assert "ledger_record" in run_agent({**agent_env, "MMW_API_KEY": every_scope}, log, names)
    mmw_server.stop()
    assert run_agent(agent_env, log, names) == {"mmw_sync_status"}  # never listed for this key
    assert "ledger_record" in run_agent({**agent_env, "MMW_API_KEY": every_scope}, log, names)


def test_remember_search_forget_answer_exactly_as_the_server(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "agent.log"
    url, key = mmw_server.url, tenancy.alice.key
    stored = call(agent_env, log, "remember", {"content": "the deploy key lives in vault path ops/deploy"})
    assert not stored.is_error, text(stored)
    record = json.loads(text(stored))
    assert Memory.objects.filter(pk=record["id"]).count() == 1
    assert record["version"] == 1

    via_agent = call(agent_env, log, "search", {"query": "vault deploy key"})
    is_error, direct = mcp_call(url, key, "search", {"query": "vault deploy key"})
    assert not via_agent.is_error
    assert not is_error
    assert json.loads(text(via_agent)) == direct

    # Error texts come through unchanged, isError included.
    bad = call(agent_env, log, "remember", {"content": "   "})
    is_error, direct_text = mcp_call(url, key, "remember", {"content": "   "})
    assert bad.is_error
    assert is_error
    assert text(bad) == direct_text == "Error executing tool remember: content must not be empty"
    both = call(agent_env, log, "forget", {"memory_id": record["id"], "source_id": "x"})
    is_error, direct_text = mcp_call(url, key, "forget", {"memory_id": record["id"], "source_id": "x"})
    assert both.is_error
    assert text(both) == direct_text

    gone = call(agent_env, log, "forget", {"memory_id": record["id"]})
    assert json.loads(text(gone))["forgotten"] is True
    assert search_contents(url, key, "vault deploy key") == []


def test_server_down_reads_fail_naming_it_writes_queue_and_replay_once(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "agent.log"
    url, key = mmw_server.url, tenancy.alice.key
    kept = json.loads(text(call(agent_env, log, "remember", {"content": "obsolete note about the old CI runner"})))
    mmw_server.stop()

    async def offline(client: Client) -> dict[str, Any]:
        listed = {t.name for t in (await client.list_tools()).tools}
        read = await client.call_tool("search", {"query": "anything"})
        first = await client.call_tool("remember", {"content": "the release train leaves on Thursdays"})
        second = await client.call_tool("forget", {"memory_id": kept["id"]})
        status = await client.call_tool("mmw_sync_status", {})
        return {"listed": listed, "read": read, "first": first, "second": second, "status": status}

    seen = run_agent(agent_env, log, offline)
    # The cached listing keeps remember/forget available offline.
    assert {"remember", "forget", "search", "mmw_sync_status"} <= seen["listed"]
    assert seen["read"].is_error
    assert text(seen["read"]).startswith(f"Error executing tool search: MMW server at {url} is unreachable")
    queued = [json.loads(text(seen[k])) for k in ("first", "second")]
    assert [q["queued"] for q in queued] == [True, True]
    assert queued[1]["local_id"] > queued[0]["local_id"]
    assert f"#{queued[0]['local_id']}" in queued[0]["message"]
    status = seen["status"].structured_content
    assert status is not None
    assert status["reachable"] is False
    assert status["queued_writes"]["pending"] == 2
    assert status["tool_list"]["source"] == "cache"

    mmw_server.start()

    async def online(client: Client) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while True:
            result = await client.call_tool("mmw_sync_status", {})
            assert result.structured_content is not None
            if result.structured_content["queued_writes"]["pending"] == 0 or time.monotonic() > deadline:
                return dict(result.structured_content)
            await anyio.sleep(0.2)

    after = run_agent(agent_env, log, online)
    assert after["queued_writes"] == {"pending": 0, "done": 2, "failed": 0}
    assert search_contents(url, key, "release train Thursdays") == ["the release train leaves on Thursdays"]
    assert Memory.objects.filter(content="the release train leaves on Thursdays").count() == 1
    assert Memory.objects.get(pk=kept["id"]).forgotten_at is not None


def test_writes_queued_before_the_agent_is_killed_are_replayed_after_restart(
    mmw_server: ThreadedServer, tenancy: Tenancy, agent_env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "agent.log"
    url, key = mmw_server.url, tenancy.alice.key
    call(agent_env, log, "list_workspaces")  # caches the tool list
    mmw_server.stop()
    contents = [f"runbook step {i}: drain the queue before failover" for i in range(3)]

    async def queue_then_die(client: Client) -> list[dict[str, Any]]:
        answers = [json.loads(text(await client.call_tool("remember", {"content": c}))) for c in contents]
        agents = [p for p in psutil.Process().children(recursive=True) if "mmw_agent" in " ".join(p.cmdline())]
        assert len(agents) == 1
        agents[0].send_signal(signal.SIGKILL)
        agents[0].wait(10)
        return answers

    answers: list[dict[str, Any]] = []

    async def capture(client: Client) -> None:
        answers.extend(await queue_then_die(client))

    with suppress(Exception):
        run_agent(agent_env, log, capture)
    assert [a["queued"] for a in answers] == [True, True, True]
    assert Memory.objects.filter(content__startswith="runbook step").count() == 0

    mmw_server.start()

    def replayed() -> int:
        return Memory.objects.filter(content__startswith="runbook step").count()

    async def idle(client: Client) -> None:
        deadline = time.monotonic() + 30
        while await anyio.to_thread.run_sync(replayed) < 3:
            assert time.monotonic() < deadline, "the queue was not replayed"
            await anyio.sleep(0.2)

    run_agent(agent_env, log, idle)
    assert sorted(search_contents(url, key, "runbook drain queue failover")) == sorted(contents)
    # In order, each once.
    rows = list(Memory.objects.filter(content__startswith="runbook step").order_by("created_at"))
    assert [r.content for r in rows] == contents
