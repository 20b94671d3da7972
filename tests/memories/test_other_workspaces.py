"""A search of one workspace that comes back short says where else the caller's records answer
(``other_workspaces``), on REST, MCP and ``recall_context``; never a workspace of another project,
a deleted one, or one whose matching records the caller cannot read."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp_types import CallToolResult, TextContent

from accounts.keys import resolve_key
from accounts.models import Workspace
from memories import services
from tests import live
from tests.conftest import Tenancy
from tests.memories.rest import Api

MODULES = [f"module m{i} owns the /api/m{i} endpoints and its on-call rota" for i in range(30)]
QUERY = "which module owns the m7 endpoints"


def backend_notes(api: Api, workspace: str = "backend") -> None:
    status, answer = api.call("POST", "/memories/batch", {"records": [
        {"content": text, "workspace": workspace} for text in MODULES]})  # fmt: skip
    assert status == 200, answer


@pytest.mark.django_db
def test_a_short_search_names_the_workspaces_where_the_answer_is(tenancy: Tenancy) -> None:
    """The support ticket "my search returns nothing": the agent searched ``default``."""
    api = Api(tenancy.alice.key)
    backend_notes(api)
    api.ok_remember(content="the coffee machine is on the second floor")
    found = api.search(query=QUERY)
    assert found["workspace"] == "default"
    assert not any("m7" in r["content"] for r in found["results"])
    assert found["other_workspaces"][0]["workspace"] == "backend"
    assert found["other_workspaces"][0]["matches"] >= 1
    assert api.search(query=QUERY, workspace="*")["other_workspaces"] == []  # "*" already reads them all


@pytest.mark.django_db
def test_a_search_of_a_workspace_that_does_not_exist_still_says_where_to_look(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    backend_notes(api)
    found = api.search(query=QUERY, workspace="frontend")
    assert found["results"] == []
    assert [o["workspace"] for o in found["other_workspaces"]] == ["backend"]


@pytest.mark.django_db
def test_a_full_page_looks_nowhere_else(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    backend_notes(api)
    backend_notes(api, "mirror")
    found = api.search(query="module owns endpoints on-call rota", workspace="backend", limit=3)
    assert len(found["results"]) == 3
    assert found["other_workspaces"] == []


@pytest.mark.django_db
def test_ten_results_are_an_answer_and_look_nowhere_else(tenancy: Tenancy) -> None:
    """Short means fewer than 10 (``selectors.is_short``), not fewer than ``limit``: a search asking
    50 that found 10 or more has its answer; one that found fewer still says where else to look."""
    api = Api(tenancy.alice.key)
    backend_notes(api)
    backend_notes(api, "mirror")
    found = api.search(query="module owns endpoints on-call rota", workspace="backend", limit=50)
    assert 10 <= len(found["results"]) < 50
    assert found["other_workspaces"] == []
    api.ok_remember(content="module m7 owns the /api/m7 endpoints", workspace="scratch")
    short = api.search(query=QUERY, workspace="scratch", limit=50)
    assert 1 <= len(short["results"]) < 10
    assert [o["workspace"] for o in short["other_workspaces"]][:2] in (["backend", "mirror"], ["mirror", "backend"])


@pytest.mark.django_db
def test_other_workspaces_are_only_ones_the_caller_reads(tenancy: Tenancy) -> None:
    alice, bob, charlie = Api(tenancy.alice.key), Api(tenancy.bob.key), Api(tenancy.charlie.key)
    backend_notes(charlie, "backend")  # another account's project
    for text in MODULES[:5]:  # Bob's drafts: only Bob reads them
        bob.ok_remember(content=text.replace("module", "draft module"), workspace="drafts", visibility="author")
    backend_notes(alice, "old")
    Workspace.objects.filter(project=tenancy.alice.project, name="old").update(deleted_at="2026-01-01T00:00:00Z")
    found = alice.search(query=QUERY)
    assert found["other_workspaces"] == []
    assert [o["workspace"] for o in bob.search(query=QUERY)["other_workspaces"]] == ["drafts"]
    assert charlie.search(query=QUERY, workspace="elsewhere")["other_workspaces"][0]["workspace"] == "backend"


@pytest.mark.django_db
def test_filters_apply_to_the_other_workspaces_too(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    backend_notes(api)
    api.ok_remember(content=MODULES[7].replace("module", "tagged module"), workspace="ops", tags=["ops"])
    found = api.search(query=QUERY, tags=["ops"])
    assert [o["workspace"] for o in found["other_workspaces"]] == ["ops"]


@pytest.mark.django_db
def test_recall_context_says_where_the_tasks_records_are(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    backend_notes(api)
    status, pack = api.call("POST", "/recall-context", {"task": "fix the m7 endpoints owned by module m7"})
    assert status == 200
    assert pack["items"] == []
    assert [o["workspace"] for o in pack["other_workspaces"]] == ["backend"]


def _raw_call(server: str, key: str, tool: str, args: dict[str, Any]) -> CallToolResult:
    async def action(client: Any) -> CallToolResult:
        called = await client.call_tool(tool, args)
        assert isinstance(called, CallToolResult)
        return called

    result = anyio.run(live._with_client, server, key, None, "auto", action)
    assert isinstance(result, CallToolResult)
    return result


@pytest.mark.slow
def test_the_mcp_answer_says_where_else_in_a_sentence(tenancy: Tenancy, live_server: live.LiveServer) -> None:
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    services.memory_remember(principal=principal, payload={"content": MODULES[7], "workspace": "backend"})
    result = _raw_call(live_server, tenancy.alice.key, "search", {"query": QUERY})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["other_workspaces"] == [{"workspace": "backend", "matches": 1}]
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert any('other workspaces have matches: "backend" (1)' in t for t in texts[1:])


live_server = live.live_server


@pytest.mark.django_db
def test_a_short_search_reads_its_term_statistics_once(tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search and its look at the other workspaces ask the same words: one read of the
    project's statistics serves both (issue #37: ~5 ms each on long records), and the answer is
    the same as with a read per ranking."""
    from memories import search

    api = Api(tenancy.alice.key)
    backend_notes(api)
    api.ok_remember(content="the coffee machine is on the second floor")
    reads: list[list[str]] = []
    original = search.term_stats

    def counted(project_id: Any, terms: list[str]) -> search.TermStats:
        reads.append(list(terms))
        return original(project_id, terms)

    monkeypatch.setattr(search, "term_stats", counted)
    found = api.search(query=QUERY)
    assert found["other_workspaces"][0]["workspace"] == "backend"
    assert len(reads) == 1
    reads.clear()
    status, pack = api.call("POST", "/recall-context", {"task": "fix the m7 endpoints owned by module m7"})
    assert status == 200, pack
    assert pack["other_workspaces"][0]["workspace"] == "backend"
    assert len(reads) == 1
