"""How the fusion orders sources (``search.diversified``, ``search.source_strength``): pure
functions, no database."""

from __future__ import annotations

import datetime as dt

import pytest

from memories import search

# Rows 1x of source "a", 2x of source "b" (turn ids are integers).
A1, A2, B1, B2, B3 = 11, 12, 21, 22, 23
SOURCES: dict[search.RowId, str] = {A1: "a", A2: "a", B1: "b", B2: "b", B3: "b"}


# The row of a third source "c", the best of all.
C1 = 31


def test_a_source_with_more_good_rows_comes_before_one_with_a_slightly_better_row() -> None:
    # a: places 1 and 5; b: places 2, 3, 4 — b's three rows say more than a's best alone; c's
    # row is the best of all and keeps its place
    sources = {**SOURCES, C1: "c"}
    assert search.source_strength([2, 3, 4]) > search.source_strength([1, 5])
    assert search.diversified([C1, A1, B1, B2, B3, A2], sources) == [C1, B1, A1, B2, A2, B3]


def test_the_best_row_of_all_stays_first() -> None:
    assert search.diversified([A1, B1, B2, B3, A2], SOURCES) == [A1, B1, A2, B2, B3]


def test_without_support_sources_go_by_their_best_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "SOURCE_SUPPORT", 0.0)
    sources = {**SOURCES, C1: "c"}
    assert search.diversified([C1, A1, B1, B2, B3, A2], sources) == [C1, A1, B1, A2, B2, B3]


def test_with_a_margin_a_clearly_better_further_row_comes_before_a_new_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(search, "SPREAD_MARGIN", 1.0)
    # a's second row is 2.0 above b's best: it stays second; b's second is not 1.0 above c's best
    scores: dict[search.RowId, float] = {A1: 5.0, A2: 4.0, B1: 2.0, B2: 1.5, C1: 1.0}
    sources = {**SOURCES, C1: "c"}
    ordered = [A1, A2, B1, B2, C1]
    assert search.diversified(ordered, sources, scores) == [A1, A2, B1, C1, B2]
    # within the margin of b's best, a's second waits for it; then it is 1.5 above c's best
    close: dict[search.RowId, float] = {**scores, A2: 2.5}
    assert search.diversified(ordered, sources, close) == [A1, B1, A2, C1, B2]
    # the order in which the sources first appear is the spread order's (b by strength before a)
    monkeypatch.setattr(search, "KEEP_BEST_FIRST", True)
    strong: dict[search.RowId, float] = {C1: 6.0, A1: 5.0, B1: 4.9, B2: 4.8, B3: 4.7, A2: 0.0}
    spread = search.diversified([C1, A1, B1, B2, B3, A2], sources, strong)
    assert [r for r in spread if r in (A1, B1, C1)] == [C1, B1, A1]
    assert spread == [C1, B1, A1, B2, A2, B3]  # once every source is shown: round by round


def test_without_a_margin_every_source_s_best_row_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "SPREAD_MARGIN", None)
    scores: dict[search.RowId, float] = {A1: 5.0, A2: 4.0, B1: 2.0, B2: 1.5}
    assert search.diversified([A1, A2, B1, B2], SOURCES, scores) == [A1, B1, A2, B2]


def test_only_the_best_rows_of_a_source_count() -> None:
    assert search.source_strength(list(range(search.SOURCE_ROWS + 5))) == pytest.approx(
        search.source_strength(list(range(search.SOURCE_ROWS)))
    )


def test_the_fusion_spreads_softly_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # a's second row is far above b's and c's best rows: by default (``SPREAD_MARGIN``) it stays
    # second, where the strict spread put every source's best row before it
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    sources = {**SOURCES, C1: "c"}
    scored = [(A1, 10.0), (A2, 9.5), (B1, 1.0), (B2, 0.5), (C1, 0.4)]
    ranking = search.Ranking([search.Candidate(rid, score, when) for rid, score in scored], 1.0)
    assert search.SPREAD_MARGIN is not None
    assert [c.id for c in search.fuse([ranking], 5, sources=sources)] == [A1, A2, B1, C1, B2]
    monkeypatch.setattr(search, "SPREAD_MARGIN", None)
    assert [c.id for c in search.fuse([ranking], 5, sources=sources)] == [A1, B1, C1, A2, B2]
