"""A search says why it returned what it returned (``explain``), reads time in the question
(``now``, ``time_window``) and can spread its results over sources (``diversify``)."""

from __future__ import annotations

from typing import Any

import pytest

from memories import search
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call
from tests.memories.rest import Api

NOW = "2026-06-20T12:00:00Z"
live_server = live.live_server


def fill(api: Api) -> dict[str, str]:
    rows = {
        "lamp_may": ("I bought a brass desk lamp for the study", "2026-05-12T10:00:00Z"),
        "lamp_old": ("I bought a brass floor lamp for the hall", "2025-02-03T10:00:00Z"),
        "deploy": ("Staging is deployed with make deploy-staging from the release branch", "2026-06-01T10:00:00Z"),
        "coffee": ("The coffee machine is on the second floor", "2026-06-10T10:00:00Z"),
    }
    return {k: api.ok_remember(content=text, occurred_at=when)["id"] for k, (text, when) in rows.items()}


@pytest.mark.django_db
def test_a_relative_time_in_the_question_ranks_what_happened_then_first(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = fill(api)
    found = api.search(query="which lamp did I buy last month", now=NOW, min_score=0)
    assert found["time_window"] == {"start": "2026-05-01T00:00:00+00:00", "end": "2026-06-01T00:00:00+00:00",
                                    "phrase": "last month"}  # fmt: skip
    assert found["results"][0]["id"] == ids["lamp_may"]
    a_year_on = api.search(query="which lamp did I buy last month", now="2025-03-10T12:00:00Z", min_score=0)
    assert a_year_on["results"][0]["id"] == ids["lamp_old"]  # asked in March 2025, "last month" is February
    plain = api.search(query="which lamp did I buy", min_score=0)
    assert plain["time_window"] is None


@pytest.mark.django_db
def test_now_is_checked_like_any_time(tenancy: Tenancy) -> None:
    status, body = Api(tenancy.alice.key).call("POST", "/memories/search", {"query": "lamp", "now": "tomorrow"})
    assert status == 400
    assert body["error"]["message"].startswith("now must be an RFC 3339 time")


def _fused(entry: dict[str, Any]) -> float:
    """A result's fused score recomputed from its trace: the sum of weight × (z + tie-break)."""
    return float(sum(r["weight"] * (r["z"] + r["tie_break"]) for r in entry["rankings"].values()))


@pytest.mark.django_db
def test_explain_gives_the_numbers_that_ranked(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    fill(api)
    found = api.search(query="how do we deploy staging", explain=True, min_score=0)
    first = found["results"][0]
    entry = first["explain"]
    assert set(entry["rankings"]) == {"keyword", "vector"}
    assert entry["fused"] == pytest.approx(_fused(entry), abs=1e-5)
    fused = [r["explain"]["fused"] for r in found["results"]]
    assert fused == sorted(fused, reverse=True)  # the order is the fused score's
    assert "staging:*" in entry["matched_terms"] or any("stag" in t for t in entry["matched_terms"])
    assert entry["score"] == first["score"]
    assert found["explain"]["floor"]["rule"] == "min_score"
    assert found["explain"]["rankings"] == ["keyword", "vector"]
    assert "explain" not in api.search(query="how do we deploy staging")["results"][0]


@pytest.mark.django_db
def test_explain_names_what_the_floor_cut_and_why(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    fill(api)
    found = api.search(query="how do we deploy staging", explain=True)
    shown = {r["id"] for r in found["results"]}
    assert found["explain"]["floor"]["rule"] == "joint"
    assert found["explain"]["cut_count"] == 4 - len(shown)
    assert all(c["id"] not in shown for c in found["explain"]["cut"])
    assert all(c["reason"] for c in found["explain"]["cut"])
    nothing = api.search(query="what is the lbw rule in cricket", explain=True)
    assert nothing["results"] == []
    assert nothing["explain"]["floor"]["answered"] is False
    assert nothing["explain"]["cut"][0]["reason"].startswith("query not answered: evidence")


@pytest.mark.django_db
def test_diversify_spreads_the_results_over_sources(tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "SPREAD_MARGIN", None)  # the strict spread (the soft one: test_source_order)
    api = Api(tenancy.alice.key)
    for i in range(4):
        api.ok_remember(content=f"deploy note {i}: staging deploys need the release branch", source_id="runbook")
    other = api.ok_remember(content="staging deploy checklist from the wiki", source_id="wiki")["id"]
    plain = api.search(query="staging deploy", min_score=0, limit=3)
    spread = api.search(query="staging deploy", min_score=0, limit=3, diversify=True)
    assert [r["source_id"] for r in spread["results"]][:2] in (["runbook", "wiki"], ["wiki", "runbook"])
    assert other in {r["id"] for r in spread["results"]}
    assert len({r["source_id"] for r in plain["results"]}) <= len({r["source_id"] for r in spread["results"]})


@pytest.mark.django_db
def test_recall_context_explains_and_reads_time_too(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = fill(api)
    status, pack = api.call("POST", "/recall-context", {"task": "the lamp I bought last month", "now": NOW,
                                                        "explain": True})  # fmt: skip
    assert status == 200, pack
    assert pack["time_window"]["phrase"] == "last month"
    assert pack["items"][0]["id"] == ids["lamp_may"]
    assert "rankings" in pack["items"][0]["explain"]
    assert "floor" in pack["explain"]


@pytest.mark.slow
def test_mcp_search_explains_with_the_same_numbers(tenancy: Tenancy, live_server: LiveServer) -> None:
    api = Api(tenancy.alice.key)
    fill(api)
    args = {"query": "how do we deploy staging", "explain": True, "min_score": 0}
    is_error, answer = mcp_call(live_server, tenancy.alice.key, "search", args)
    assert not is_error, answer
    assert isinstance(answer, dict)
    rest = api.search(**args)
    assert [r["id"] for r in answer["results"]] == [r["id"] for r in rest["results"]]
    first = answer["results"][0]["explain"]
    assert first["fused"] == pytest.approx(_fused(first), abs=1e-5)
    assert first["fused"] == rest["results"][0]["explain"]["fused"]
