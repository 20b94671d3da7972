"""``rerank: true``: the cross-encoder's second stage (``memories.rerank``). Its bonuses are the
ones that reordered (recomputed from the trace), it is English only, bounded, and a search never
fails for want of it."""

from __future__ import annotations

import datetime as dt
import statistics
import time
from typing import Any

import pytest

from memories import rerank, search
from memories.dense import RowId
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call
from tests.memories.rest import Api

live_server = live.live_server

CAMPING = {
    "asks": "Caroline: Melanie, where have you camped? Where has Melanie camped, I wonder.",
    "answers": "Melanie: Last summer we camped at the beach with the kids, in a tent by the dunes.",
    "other": "Melanie: I painted a sunrise over the lake last year.",
    "noise": "Caroline: The support group meets on Tuesdays at the community centre.",
}


class Favouring:
    """A stand-in model whose logit is 10 for one text and 0 for the others."""

    def __init__(self, favoured: str) -> None:
        self.favoured = favoured

    def logits(self, query: str, texts: list[str]) -> list[float]:
        return [10.0 if t == self.favoured else 0.0 for t in texts]


def use_model(monkeypatch: pytest.MonkeyPatch, model: Any) -> None:
    """This process's reranker, for one test: ``model`` (None: as if it failed to load)."""
    monkeypatch.setattr(rerank, "_LOADED", [rerank.Loaded(model, time.monotonic())])


def fill(api: Api, rows: dict[str, str]) -> dict[str, str]:
    return {key: api.ok_remember(content=text)["id"] for key, text in rows.items()}


def _fused(entry: dict[str, Any]) -> float:
    """A result's fused score from its trace: weight × (z + tie-break) summed, plus its bonuses."""
    summed = sum(r["weight"] * (r["z"] + r["tie_break"]) for r in entry["rankings"].values())
    return float(summed + entry.get("favoured", 0.0) + entry.get("rerank", {}).get("bonus", 0.0))


def test_the_model_scores_an_answer_above_a_turn_that_merely_shares_its_words() -> None:
    model = rerank._model()
    assert model is not None
    question = "Where has Melanie camped?"
    answer, lookalike = model.logits(
        question,
        ["Melanie: We camped at Big Sur last summer.", "Caroline: Melanie sells camping gear and camp chairs."],
    )
    assert answer > lookalike + 2


@pytest.mark.django_db
def test_rerank_moves_the_favoured_record_first_and_the_trace_recomputes(
    tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = Api(tenancy.alice.key)
    ids = fill(api, CAMPING)
    text_of = {ids[k]: v for k, v in CAMPING.items()}
    query = "Where has Melanie camped?"
    plain = api.search(query=query, min_score=0)
    assert "rerank" not in plain
    last = plain["results"][-1]["id"]  # the fusion's last, favoured by the stand-in model
    use_model(monkeypatch, Favouring(text_of[last]))
    found = api.search(query=query, min_score=0, rerank=True, explain=True)
    assert found["rerank"] == {"applied": True, "reason": None, "candidates": 4, "model": rerank.MODEL_ID}
    assert found["results"][0]["id"] == last
    entries = [r["explain"] for r in found["results"]]
    for entry in entries:
        assert entry["fused"] == pytest.approx(_fused(entry), abs=1e-5)
    fused = [e["fused"] for e in entries]
    assert fused == sorted(fused, reverse=True)  # the order is the fused score's, bonus included
    # Each bonus is WEIGHT × the spread of the fused scores before it × the logit's z-score.
    before = [e["fused"] - e["rerank"]["bonus"] for e in entries]
    logits = [e["rerank"]["logit"] for e in entries]
    spread, mean, sd = statistics.pstdev(before), statistics.fmean(logits), statistics.pstdev(logits)
    for entry, logit in zip(entries, logits, strict=True):
        assert entry["rerank"]["z"] == pytest.approx((logit - mean) / sd, abs=1e-4)
        assert entry["rerank"]["bonus"] == pytest.approx(rerank.WEIGHT * spread * entry["rerank"]["z"], abs=1e-4)


@pytest.mark.django_db
def test_rerank_leaves_a_question_in_another_language_in_the_fusions_order(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    fill(api, CAMPING)
    query = "Где Мелани ходила в поход?"
    plain = api.search(query=query, min_score=0)
    found = api.search(query=query, min_score=0, rerank=True)
    assert found["rerank"]["applied"] is False
    assert found["rerank"]["reason"] == "not English"
    assert [r["id"] for r in found["results"]] == [r["id"] for r in plain["results"]]


@pytest.mark.django_db
def test_a_busy_or_missing_reranker_answers_in_the_fusions_order(
    tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = Api(tenancy.alice.key)
    fill(api, CAMPING)
    query = "Where has Melanie camped?"
    plain = [r["id"] for r in api.search(query=query, min_score=0)["results"]]
    monkeypatch.setattr(rerank, "WAIT_SECONDS", 0.05)
    held = [rerank._SLOTS.acquire(blocking=False) for _ in range(rerank.SLOTS)]
    try:
        assert all(held)
        busy = api.search(query=query, min_score=0, rerank=True)
    finally:
        for _ in held:
            rerank._SLOTS.release()
    assert busy["rerank"]["reason"] == "busy"
    assert [r["id"] for r in busy["results"]] == plain
    use_model(monkeypatch, None)
    missing = api.search(query=query, min_score=0, rerank=True)
    assert (missing["rerank"]["applied"], missing["rerank"]["reason"]) == (False, "reranker unavailable")
    assert [r["id"] for r in missing["results"]] == plain


@pytest.mark.django_db
def test_rerank_must_be_a_boolean(tenancy: Tenancy) -> None:
    status, body = Api(tenancy.alice.key).call("POST", "/memories/search", {"query": "camp", "rerank": "yes"})
    assert status == 400
    assert "rerank" in body["error"]["message"]


def test_a_candidate_in_another_language_keeps_its_fused_score(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    class Counting:
        def logits(self, query: str, texts: list[str]) -> list[float]:
            seen.append(list(texts))
            return [float(len(t)) for t in texts]

    use_model(monkeypatch, Counting())
    request = rerank.Request()
    top = [(i, 10.0 - i, f"We went camping by the lake {'and the hills ' * i}") for i in range(rerank.DEPTH)]
    top[3] = (3, 7.0, "Мы ходили в поход")  # one candidate in another language: kept, bonus 0
    out = request.reorder("where did we camp", top)
    assert request.applied
    assert len(seen[0]) == rerank.DEPTH - 1  # the candidate in another language is not scored
    assert "Мы ходили в поход" not in seen[0]
    assert out[3] == rerank.Reordered(None, None, 0.0)
    zs = [p.z for p in out.values() if p.z is not None]
    assert len(set(zs)) == rerank.DEPTH - 1  # distinct logits, distinct z-scores
    assert sum(zs) == pytest.approx(0.0, abs=1e-9)
    assert out[19].bonus > 0 > out[0].bonus  # the longest text had the highest logit


def _rows(n: int) -> list[search.Candidate]:
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return [search.Candidate(i, float(n - i), start, relevance=0.9 - i / 100) for i in range(n)]


def _fuse(reorder: search.Reorder | None, **kw: Any) -> list[search.Candidate]:
    return search.fuse([search.Ranking(_rows(30), 1.0, "keyword")], 30, reorder=reorder, **kw)


def test_only_the_first_20_are_reordered_and_the_shown_scores_stay_the_fusions() -> None:
    asked: list[list[int]] = []

    def lift_the_20th(top: list[tuple[RowId, float]]) -> dict[RowId, rerank.Reordered]:
        asked.append([int(rid) for rid, _ in top])
        return {rid: rerank.Reordered(1.0, 1.0, 100.0 if rid == 19 else 0.0) for rid, _ in top}

    plain = _fuse(None)
    moved = _fuse(lift_the_20th)
    assert asked == [list(range(rerank.DEPTH))]  # the fusion's first 20, nothing past them
    assert [c.id for c in moved] == [19, *range(19), *range(20, 30)]
    assert [c.confidence for c in moved] == [c.confidence for c in plain]  # place by place


def test_no_bonus_leaves_the_order_as_it_was_even_when_spread_over_sources() -> None:
    # Sources where the spread of the first 20 alone differs from the spread of all 30.
    sources = {i: f"s{digit}" for i, digit in enumerate("322100222231113003303203212110")}
    plain = _fuse(None, sources=sources)
    refused = _fuse(lambda top: {}, sources=sources)  # not English, busy, unavailable, failed
    assert [c.id for c in refused] == [c.id for c in plain]


def test_min_score_cuts_the_fusions_order_before_the_rerank() -> None:
    floor = search.Floor.strict(0.05)

    def lift_the_last(top: list[tuple[RowId, float]]) -> dict[RowId, rerank.Reordered]:
        last = top[-1][0]
        return {rid: rerank.Reordered(1.0, 1.0, 100.0 if rid == last else 0.0) for rid, _ in top}

    plain = search.fuse([search.Ranking(_rows(30), 1.0, "keyword")], 30, floor)
    moved = search.fuse([search.Ranking(_rows(30), 1.0, "keyword")], 30, floor, reorder=lift_the_last)
    assert plain  # the case keeps some and cuts some
    assert len(plain) < 30
    assert {c.id for c in moved} == {c.id for c in plain}
    assert moved[0].id == plain[min(len(plain), rerank.DEPTH) - 1].id
    assert [c.confidence for c in moved] == [c.confidence for c in plain]
    assert all(c.confidence >= 0.05 for c in moved)


@pytest.mark.django_db
def test_a_failing_model_answers_in_the_fusions_order(tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> None:
    class Failing:
        def logits(self, query: str, texts: list[str]) -> list[float]:
            raise RuntimeError("onnxruntime: out of memory")

    api = Api(tenancy.alice.key)
    fill(api, CAMPING)
    query = "Where has Melanie camped?"
    plain = [r["id"] for r in api.search(query=query, min_score=0)["results"]]
    use_model(monkeypatch, Failing())
    failed = api.search(query=query, min_score=0, rerank=True)
    assert (failed["rerank"]["applied"], failed["rerank"]["reason"]) == (False, "reranker failed")
    assert [r["id"] for r in failed["results"]] == plain


def test_a_rerank_past_the_waiting_room_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    use_model(monkeypatch, Favouring("x"))
    monkeypatch.setattr(rerank, "WAIT_SECONDS", 30.0)  # a wait would show
    held = [rerank._GATE.acquire(blocking=False) for _ in range(rerank.SLOTS + rerank.WAITING)]
    try:
        assert all(held)
        request = rerank.Request()
        started = time.monotonic()
        assert request.reorder("where did we camp", [(1, 2.0, "we camped here"), (2, 1.0, "x")]) == {}
        assert time.monotonic() - started < 5
    finally:
        for _ in held:
            rerank._GATE.release()
    assert request.reason == "busy"


def test_english_is_read_from_the_letters_and_the_function_words() -> None:
    for english in (
        "Melanie: We went camping at the beach.",
        "What did Melanie say about La Jolla?",  # "la" alone does not make it French
        "Les Misérables was her favourite show",
        "Melanie camping",  # a few keywords, no mark of another language
    ):
        assert rerank.is_english(english), english
    for other in (
        "Мелани ходила в поход",
        "Où est la tente ?",
        "Wo hat Melanie gezeltet?",
        "¿Dónde acampó Melanie?",
        "Ich habe in München gewohnt",
        "キャンプに行きました",
    ):
        assert not rerank.is_english(other), other
    assert rerank.is_english("We camped by the lake. " * 100 + "Au revoir, mes amis, à la prochaine.")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_mcp_search_reranks_like_rest(tenancy: Tenancy, live_server: LiveServer) -> None:
    api = Api(tenancy.alice.key)
    fill(api, CAMPING)
    args = {"query": "Where has Melanie camped?", "min_score": 0, "rerank": True}
    is_error, answer = mcp_call(live_server, tenancy.alice.key, "search", args)
    assert not is_error, answer
    assert isinstance(answer, dict)
    assert answer["rerank"]["applied"] is True
    assert [r["id"] for r in answer["results"]] == [r["id"] for r in api.search(**args)["results"]]


@pytest.mark.django_db
def test_the_model_reads_each_record_cut_to_its_first_characters(
    tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    class Reading:
        def logits(self, query: str, texts: list[str]) -> list[float]:
            seen.extend(texts)
            return [float(i) for i in range(len(texts))]

    api = Api(tenancy.alice.key)
    fill(api, CAMPING)
    long = "Melanie: we camped at Big Sur, and the tent was by the sea. " * 100  # 6,000 characters
    api.ok_remember(content=long)
    use_model(monkeypatch, Reading())
    found = api.search(query="Where has Melanie camped?", min_score=0, rerank=True)
    assert found["rerank"]["applied"] is True
    assert long[: rerank.MAX_CHARS] in seen
    assert max(len(t) for t in seen) == rerank.MAX_CHARS
