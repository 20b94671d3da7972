"""``pending_vectors`` / ``pending_turns`` over real HTTP on both surfaces (issue #37): MCP and REST
give the same counts, and the counts are the rows still waiting for their vector."""

from __future__ import annotations

from typing import Any

import pytest

from memories import vectors
from memories.models import Memory
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call, rest
from tests.transcripts.test_sessions import CONVERSATION
from transcripts import indexing
from transcripts.models import Session

live_server = live.live_server

API = "/api/v1"


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}


def both(server: LiveServer, key: str, tool: str, method: str, path: str, args: dict[str, Any]) -> dict[str, Any]:
    """The tool's answer through MCP, checked equal to REST's (``explain``-free answers are)."""
    is_error, via_mcp = mcp_call(server, key, tool, args)
    assert not is_error, via_mcp
    response = rest(server, key, method, API + path, json=args if method == "POST" else None)
    assert response.status_code == 200, response.text
    assert isinstance(via_mcp, dict)
    assert via_mcp == response.json()
    return via_mcp


def test_pending_counts_are_the_same_and_right_on_mcp_and_rest(live_server: LiveServer, tenancy: Tenancy) -> None:
    key = tenancy.alice.key
    records = [{"content": f"the Thursday release train, note {i}", "workspace": "w1"} for i in range(3)]
    answer = rest(live_server, key, "POST", f"{API}/memories/batch", json={"records": records}).json()
    assert answer["queued_for_vectors"] == 3
    assert rest(live_server, key, "PUT", f"{API}/sessions/codex/s", json={}).status_code == 201
    uploaded = rest(live_server, key, "POST", f"{API}/sessions/codex/s/turns", json={"turns": CONVERSATION}).json()
    assert uploaded["queued_for_vectors"] == len(CONVERSATION)

    def counts() -> tuple[int, int, int, list[tuple[str, int, int]], int]:
        search = both(
            live_server, key, "search", "POST", "/memories/search", {"query": "release train", "workspace": "w1"}
        )
        recall = both(
            live_server, key, "recall_context", "POST", "/recall-context", {"task": "train", "workspace": "w1"}
        )
        turns = both(
            live_server, key, "search_sessions", "POST", "/sessions/search", {"query": "pgvector", "context": 0}
        )
        listed = both(live_server, key, "list_workspaces", "GET", "/workspaces", {})
        rows = [(w["name"], w["memory_count"], w["pending_vectors"]) for w in listed["workspaces"]]
        return (
            search["pending_vectors"],
            recall["pending_vectors"],
            turns["pending_vectors"],
            rows,
            listed["pending_turns"],
        )

    unembedded = Memory.objects.filter(embedding_model__isnull=True).count()  # no worker runs in this test
    assert unembedded == 3
    assert counts() == (3, 3, 6, [("w1", 3, 3)], 6)
    vectors.embed_records(list(Memory.objects.values_list("id", flat=True)))
    indexing.embed_pending(Session.objects.get().pk)
    assert counts() == (0, 0, 0, [("w1", 3, 0)], 0)
