"""Recency inside the keyword index (``memories.recency``): the buckets Python and PostgreSQL
compute agree, a window is the newest stretch of time, the bucket counts are kept, and a windowed
keyword statement answers exactly what the unwindowed one does (falling back when the window
holds too few), while a window that is not the newest stretch would change the answer (so the
windowed branch is really the one that answers)."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import random
import uuid
from collections.abc import Sequence

import pytest
from django.db import connection
from django.utils import timezone

from memories import recency, search, selectors, sql
from memories.models import Memory
from tests.memories.orm_reference import orm_keyword_ranked
from tests.orgs.world import Org, Person, make_org, write

HOUR = dt.timedelta(hours=1)
NOW = dt.datetime(2026, 12, 3, 19, 30, tzinfo=dt.UTC)


def _span(b: recency.Bucket) -> tuple[int, int]:
    """A bucket's [start, end) in seconds since the epoch."""
    w = recency.width(b.level)
    return b.index * w, (b.index + 1) * w


def _boundary_times() -> list[dt.datetime]:
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    edge = dt.datetime.fromtimestamp(recency.width(5) * 15, tz=dt.UTC)  # a top-level boundary
    rng = random.Random(3)
    return [
        base,
        edge,
        edge - dt.timedelta(microseconds=1),
        edge + dt.timedelta(microseconds=1),
        NOW,
        dt.datetime(1961, 4, 12, 6, 7, 30, 500_000, tzinfo=dt.UTC),  # before the epoch: both round down
        *(base + dt.timedelta(seconds=rng.uniform(0, 3e8)) for _ in range(40)),
    ]


# --- the buckets ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_python_and_postgresql_put_a_time_in_the_same_buckets() -> None:
    with connection.cursor() as cursor:
        for at in _boundary_times():
            cursor.execute("SELECT tsvector_to_array(mmw_recency_document(%s))", [at])
            (stored,) = cursor.fetchone()
            assert sorted(stored) == sorted(recency.lexemes(at)), at


def test_the_reachable_buckets_tile_one_stretch_of_time_from_years_ahead_to_years_back() -> None:
    for now in _boundary_times():
        tiles = recency.reachable(now)
        spans = [_span(t) for t in tiles]
        top = recency.width(recency.LEVELS - 1)
        assert spans[0][1] == (recency.bucket(recency.LEVELS - 1, now) + recency.TOP_REACH + 1) * top, now
        for newer, older in itertools.pairwise(spans):
            assert older[1] == newer[0], (now, newer, older)  # they meet: no gap, no overlap
        assert spans[-1][0] <= now.timestamp() - recency.TOP_REACH * recency.width(recency.LEVELS - 1) + recency.width(
            recency.LEVELS - 1
        )
        assert any(a <= now.timestamp() < b for a, b in spans)
        assert len(tiles) <= 1 + 2 * ((recency.FACTOR - 1) * (recency.LEVELS - 1) + recency.TOP_REACH)


def _present(counts: dict[str, int], lexemes: Sequence[str]) -> dict[str, int]:
    return {x: counts[x] for x in lexemes if counts[x]}


def _lexeme_span(lexeme: str) -> tuple[int, int]:
    level, index = lexeme[1:].split(".")
    return _span(recency.Bucket(int(level), int(index)))


def test_a_window_is_the_newest_stretch_expected_to_hold_what_is_needed() -> None:
    rng = random.Random(7)
    for _ in range(300):
        now = NOW + dt.timedelta(seconds=rng.uniform(0, 3e7))
        counts = {t.lexeme: rng.choice([0, 0, 5, 40, 300, 2_000, 20_000]) for t in recency.reachable(now)}
        corpus = sum(counts.values())
        needed = rng.uniform(1, corpus * 0.6 + 2)
        chosen = recency.window(now, needed, corpus, functools.partial(_present, counts))
        if not chosen:
            assert needed > recency.MAX_SHARE * corpus
            continue
        spans = [_lexeme_span(x) for x in chosen]
        assert spans[0][1] == (recency.bucket(recency.LEVELS - 1, now) + recency.TOP_REACH + 1) * recency.width(
            recency.LEVELS - 1
        )
        for newer, older in itertools.pairwise(spans):
            assert older[1] == newer[0]  # one stretch, newest first
        # What the window is expected to hold: whole reachable buckets by their count, the split
        # one's parts by an even share of its count.
        expected = 0.0
        for span in spans:
            whole = next((c for t, c in counts.items() if _lexeme_span(t) == span), None)
            if whole is not None:
                expected += whole
            else:
                parent = next(t for t in counts if _lexeme_span(t)[0] <= span[0] and span[1] <= _lexeme_span(t)[1])
                share = (span[1] - span[0]) / (_lexeme_span(parent)[1] - _lexeme_span(parent)[0])
                expected += counts[parent] * share
        assert expected >= needed - 1e-6
        assert len(chosen) <= len(recency.reachable(now)) + (recency.FACTOR - 1) * recency.LEVELS


def test_no_window_when_it_would_hold_most_of_the_project_or_more_than_it_has() -> None:
    counts = {t.lexeme: 10 for t in recency.reachable(NOW)[:3]}
    assert recency.window(NOW, 40, 30, lambda lexemes: counts) == []  # more than the project
    assert recency.window(NOW, 16, 30, lambda lexemes: counts) == []  # more than half of it
    assert recency.window(NOW, 12, 1_000, lambda lexemes: counts) != []  # the reachable buckets hold 30
    assert recency.window(NOW, 31, 1_000, lambda lexemes: counts) == []  # they hold fewer
    assert recency.needed(1000, 10_000, 1_000_000) == pytest.approx(recency.MARGIN * 100_000)


# --- the statement ----------------------------------------------------------------------------------


def _org_with_history() -> tuple[Org, Person, list[str]]:
    """An org whose project's records were written over ~2 months, one every 37 hours, newest
    first in the returned ids (but the second is dated ahead); most mention "deploy", some are
    red's drafts."""
    org = make_org("recency")
    red = org.add("red@recency.test", departments=["red"])
    ids = []
    for i in range(48):
        author, visibility = (red, "author") if i % 5 == 0 else (org.founder, "project")
        text = f"Deploy note {i}: the staging service restarts." if i % 3 else f"Release {i} is tagged."
        ids.append(write(author, visibility, text, source_id="history"))
    for i, rid in enumerate(ids):
        Memory.objects.filter(id=rid).update(created_at=timezone.now() - i * 37 * HOUR)
    # One matching record dated two days ahead (another server's clock, a restored file): the
    # newest of all, which a window ending at now would leave out.
    Memory.objects.filter(id=ids[1]).update(created_at=timezone.now() + 50 * HOUR)
    return org, red, ids


def _asked(newest: int, window: Sequence[str]) -> sql.KeywordQuery:
    base = search.keyword_query("deploy restarts", lambda terms: search.TermStats(48, [30, 30]))
    assert base is not None
    return sql.KeywordQuery(base.terms, base.weights, base.match, 0.0, newest, tuple(window))


def _ranked(qs: object, asked: sql.KeywordQuery) -> list[object]:
    scope = sql.Scope.of(qs)  # type: ignore[arg-type]
    assert scope is not None
    return [r[0] for r in sql.keyword_ranked(scope, asked, 50)]


def _hours(ids: Sequence[str]) -> list[str]:
    created = Memory.objects.filter(id__in=ids).values_list("created_at", flat=True)
    return [recency.lexeme(0, recency.bucket(0, at)) for at in created]


@pytest.mark.django_db
def test_a_windowed_statement_answers_as_the_unwindowed_one() -> None:
    org, red, ids = _org_with_history()
    project = org.project.pk
    people = [org.founder.principal(), red.principal()]
    for principal in people:
        qs = selectors.memory_queryset(principal=principal, workspace="*", filters=selectors.MemoryFilters.of({}))
        assert qs is not None
        for newest in (3, 8, 20):
            truth = [r[0] for r in orm_keyword_ranked(qs, _asked(newest, ()), 50)]
            assert truth, newest
            windows = {
                "sized from the counts": search.project_window(project)(newest, 40, 48),
                "the newest few hours (too few: falls back)": _hours(ids[:2]),
                "a bucket of the future (nothing: falls back)": [recency.lexeme(0, 10**9)],
                "every record's hour": _hours(ids),
            }
            for name, window in windows.items():
                assert window or newest == 20, name  # 20 of 40: a window of all 48 records, none
                assert _ranked(qs, _asked(newest, window)) == truth, (principal, newest, name)


@pytest.mark.django_db
def test_the_windowed_branch_answers_when_its_window_holds_enough() -> None:
    """A window that is not the newest stretch (the oldest records' hours) and holds enough
    matches answers from inside it: proof the windowed rows are the ones scored when they suffice
    (``search.project_window`` never builds such a window)."""
    org, _, ids = _org_with_history()
    qs = selectors.memory_queryset(
        principal=org.founder.principal(), workspace="*", filters=selectors.MemoryFilters.of({})
    )
    assert qs is not None
    truth = _ranked(qs, _asked(3, ()))
    oldest = _ranked(qs, _asked(3, _hours(ids[-12:])))
    assert len(oldest) == 3
    assert set(oldest).isdisjoint(truth)
    assert {str(i) for i in oldest} <= set(ids[-12:])


@pytest.mark.django_db
def test_a_search_looks_in_a_window_and_finds_what_it_found_without(monkeypatch: pytest.MonkeyPatch) -> None:
    org, _, _ = _org_with_history()
    project = org.project.pk
    qs = Memory.objects.filter(project_id=project, forgotten_at__isnull=True, visibility="project")
    monkeypatch.setattr(search, "KEYWORD_SCORED_ROWS", 4)
    windows: list[Sequence[str]] = []
    real = search.project_window(project)

    def spying(wanted: int, matches: int, corpus: int) -> Sequence[str]:
        windows.append(real(wanted, matches, corpus))
        return windows[-1]

    for query in ("deploy", "staging restarts", "tagged release"):
        with_window = search.keyword_ranking(
            qs, query, 10, lambda terms: search.term_stats(project, terms), window_of=spying
        )
        without = search.keyword_ranking(qs, query, 10, lambda terms: search.term_stats(project, terms))
        assert [c.id for c in with_window] == [c.id for c in without], query
        assert with_window, query
    assert sum(1 for w in windows if w) >= 2, windows  # "tagged release": a window of most records, none


# --- the counts ---------------------------------------------------------------------------------------


def _bucket_counts(project: uuid.UUID) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT term, docs FROM memories_termstat WHERE project_id = %s AND term LIKE '#%%'", [project])
        return {t: d for t, d in cursor.fetchall() if d}


def _counted(project: uuid.UUID) -> dict[str, int]:
    counts: dict[str, int] = {}
    shared = Memory.objects.filter(project_id=project, forgotten_at__isnull=True, visibility__in=["project", "org"])
    for at in shared.values_list("created_at", flat=True):
        for x in recency.lexemes(at):
            counts[x] = counts.get(x, 0) + 1
    return counts


@pytest.mark.django_db
def test_the_bucket_counts_follow_writes_moves_and_forgetting() -> None:
    org, _, ids = _org_with_history()
    project = org.project.pk
    counts = _bucket_counts(project)
    assert counts == _counted(project)
    assert sum(v for k, v in counts.items() if k.startswith("#0.")) == sum(1 for i in range(48) if i % 5)
    Memory.objects.filter(id__in=ids[1:9]).update(forgotten_at=timezone.now())
    assert _bucket_counts(project) == _counted(project) != counts
    assert search.bucket_counts(project, list(_counted(project))) == _counted(project)
