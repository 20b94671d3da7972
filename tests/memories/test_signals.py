"""Signals people can trust: a conflict is a divergence, not an update; staleness comes
from the source's newest known hash; summaries inherit only real problems; a record the caller
cannot see never makes a visible one conflict or stale."""

from __future__ import annotations

from typing import Any

import pytest

from memories.models import Visibility
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

live_server = live.live_server


def statuses(api: Api, query: str = "deploys", **filters: Any) -> dict[str, tuple[str, list[str]]]:
    answer = api.search(query=query, workspace="*", limit=100, **filters)
    return {r["id"]: (r["status"], r["conflicts_with"]) for r in answer["results"]}


def test_an_update_naming_expected_version_supersedes_instead_of_conflicting(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    v1 = alice.ok_remember(content="deploys go out on Tuesdays", fact_key="deploy-day")
    v2 = alice.ok_remember(
        content="deploys go out on Thursdays", fact_key="deploy-day", expected_version=1, reason="moved"
    )
    assert statuses(alice) == {v1["id"]: ("unverified", []), v2["id"]: ("unverified", [])}
    answer = alice.search(query="deploys", workspace="*")
    latest = {r["id"]: r["is_latest"] for r in answer["results"]}
    assert latest == {v1["id"]: False, v2["id"]: True}


def test_a_blind_divergent_write_conflicts_both_ways_until_a_deliberate_version_resolves_it(
    tenancy: Tenancy,
) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    v1 = alice.ok_remember(content="deploys go out on Tuesdays", fact_key="deploy-day")
    v2 = bob.ok_remember(content="deploys go out on Fridays", fact_key="deploy-day")  # did not read v1
    seen = statuses(alice)
    assert seen[v1["id"]] == ("conflict", [v2["id"]])
    assert seen[v2["id"]] == ("conflict", [v1["id"]])
    reason = next(r for r in alice.search(query="deploys")["results"] if r["id"] == v1["id"])["status_reason"]
    assert reason == "another current version of deploy-day says something else"
    # "keep this version": a new version naming the newest one supersedes both
    v3 = alice.ok_remember(content="deploys go out on Fridays", fact_key="deploy-day", expected_version=2)
    assert statuses(alice) == {
        v1["id"]: ("unverified", []),
        v2["id"]: ("unverified", []),
        v3["id"]: ("unverified", []),
    }
    # a blind write after the resolution conflicts with the current head only
    v4 = bob.ok_remember(content="deploys go out on Mondays", fact_key="deploy-day")
    seen = statuses(alice)
    assert seen[v3["id"]] == ("conflict", [v4["id"]])
    assert seen[v4["id"]] == ("conflict", [v3["id"]])
    assert seen[v1["id"]] == seen[v2["id"]] == ("unverified", [])


def test_equal_content_after_whitespace_never_conflicts(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    v1 = alice.ok_remember(content="deploys go out on Tuesdays", fact_key="deploy-day")
    v2 = alice.ok_remember(content="  deploys go out\non   Tuesdays ", fact_key="deploy-day")
    assert statuses(alice) == {v1["id"]: ("unverified", []), v2["id"]: ("unverified", [])}


def test_summaries_inherit_only_real_conflicts(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    v1 = alice.ok_remember(content="deploys go out on Tuesdays", fact_key="deploy-day")
    v2 = alice.ok_remember(content="deploys go out on Thursdays", fact_key="deploy-day", expected_version=1)
    summary = alice.ok_remember(content="release summary: deploys weekly", derived_from=[v1["id"], v2["id"]])
    assert statuses(alice)[summary["id"]] == ("unverified", [])
    blind = alice.ok_remember(content="deploys go out on Saturdays", fact_key="deploy-day")
    seen = statuses(alice)
    assert seen[v2["id"]] == ("conflict", [blind["id"]])
    assert seen[summary["id"]][0] == "conflict"
    assert seen[v1["id"]] == ("unverified", [])  # superseded: in conflict with nothing


def test_a_hidden_draft_neither_conflicts_with_nor_stales_a_visible_record(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    shared = alice.ok_remember(
        content="deploys use the blue pipeline", fact_key="pipeline", source_id="docs/deploy.md", source_hash="h1"
    )
    bob.ok_remember(
        content="deploys use the green pipeline",
        fact_key="pipeline",
        source_id="docs/deploy.md",
        source_hash="h2",
        visibility=Visibility.AUTHOR,
    )
    assert statuses(alice)[shared["id"]] == ("unverified", [])
    # Bob sees both: for him the newer draft makes Alice's record stale and in conflict
    assert statuses(bob)[shared["id"]][0] == "conflict"


def test_a_newer_record_of_the_same_source_makes_older_ones_stale_for_everyone(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    old = alice.ok_remember(content="deploys need two approvals", source_id="docs/deploy.md", source_hash="h1")
    same = alice.ok_remember(content="deploys run from main", source_id="docs/deploy.md", source_hash="h1")
    assert statuses(bob) == {old["id"]: ("unverified", []), same["id"]: ("unverified", [])}
    new = bob.ok_remember(content="deploys need one approval", source_id="docs/deploy.md", source_hash="h2")
    for reader in (alice, bob):
        seen = statuses(reader)
        assert seen[old["id"]][0] == seen[same["id"]][0] == "stale"
        assert seen[new["id"]][0] == "unverified"
    result = next(r for r in alice.search(query="approvals")["results"] if r["id"] == old["id"])
    assert result["status_reason"] == f"a newer record of this source ({new['id']}) has another source_hash"
    # the caller's current hash overrides: with h1 current, the old ones are fresh and the new one stale
    seen = statuses(alice, source_id="docs/deploy.md", current_source_hash="h1")
    assert (seen[old["id"]][0], seen[same["id"]][0], seen[new["id"]][0]) == ("unverified", "unverified", "stale")
    # another workspace's records of the same source are another matter
    other = alice.ok_remember(
        content="deploys are frozen", source_id="docs/deploy.md", source_hash="h1", workspace="ops"
    )
    assert statuses(alice)[other["id"]][0] == "unverified"


def test_get_and_history_show_the_same_signals(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    v1 = alice.ok_remember(content="deploys go out on Tuesdays", fact_key="deploy-day")
    alice.ok_remember(content="deploys go out on Thursdays", fact_key="deploy-day", expected_version=1)
    status, got = alice.call("GET", f"/memories/{v1['id']}")
    assert status == 200
    assert (got["memory"]["status"], got["memory"]["conflicts_with"], got["memory"]["is_latest"]) == (
        "unverified",
        [],
        False,
    )
    status, history = alice.call("GET", "/memories/history?fact_key=deploy-day")
    assert status == 200
    assert [v["status"] for v in history["versions"]] == ["unverified", "unverified"]


def test_mcp_shows_the_same_signals_as_rest(live_server: LiveServer, tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    v1 = alice.ok_remember(content="deploys go out on Tuesdays", fact_key="deploy-day")
    v2 = alice.ok_remember(content="deploys go out on Thursdays", fact_key="deploy-day", expected_version=1)
    v3 = bob.ok_remember(content="deploys go out on Fridays", fact_key="deploy-day")
    is_error, answer = mcp_call(
        live_server.url, tenancy.alice.key, "search", {"query": "deploys", "workspace": "*", "limit": 100}
    )
    assert not is_error
    assert isinstance(answer, dict)
    over_mcp = {r["id"]: (r["status"], r["conflicts_with"]) for r in answer["results"]}
    assert over_mcp == statuses(alice)
    assert over_mcp[v1["id"]] == ("unverified", [])
    assert over_mcp[v2["id"]] == ("conflict", [v3["id"]])


def test_mcp_search_has_the_same_relevance_floor_as_rest(live_server: LiveServer, tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    alice.ok_remember(content="deploys go out on Tuesdays")
    alice.ok_remember(content="the staging database runs PostgreSQL 15")
    unrelated = {"query": "What is the lbw rule in cricket?"}
    for args, expected in ((unrelated, 0), ({**unrelated, "min_score": 0}, 2)):
        is_error, answer = mcp_call(live_server.url, tenancy.alice.key, "search", args)
        assert not is_error
        assert isinstance(answer, dict)
        assert len(answer["results"]) == expected
        assert answer["results"] == alice.search(**args)["results"]
