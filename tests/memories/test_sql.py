"""``memories.sql`` answers exactly what the ORM queries it replaced answered (``bench.common``'s
references), on every kind of scope a search draws on: one workspace, every workspace (a join),
filters, ``latest_only`` (a subquery), each person's visibility (drafts, departments), another
account, and a scope that can hold nothing."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.keys import Principal
from memories import presenters, search, selectors, sql, vectors
from memories import words as query_words
from memories.models import Memory
from tests.memories.orm_reference import orm_keyword_ranked, orm_nearest, orm_presented
from tests.orgs.world import Org, Person, make_org, write

pytestmark = pytest.mark.django_db

WHEN = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)


@dataclass
class World:
    org: Org
    founder: Person
    red: Person  # in department red
    blue: Person  # in department blue
    outsider: Principal  # another account's


@pytest.fixture
def world() -> World:
    org = make_org("sqlco")
    red = org.add("red@sqlco.test", departments=["red"])
    blue = org.add("blue@sqlco.test", departments=["blue"])
    founder = org.founder
    texts: list[tuple[Person, str, str, dict[str, Any]]] = [
        (founder, "project", "Deploy the api to staging on Monday.", {"tags": ["ops"]}),
        (founder, "project", "Deploy notes: staging needs the new certificate.", {"fact_key": "cert", "tags": ["ops"]}),
        (red, "project", "The certificate for staging was renewed in March.", {"fact_key": "cert"}),
        (red, "department", "Red team deploys the billing service on Fridays.", {}),
        (blue, "department", "Blue team keeps the staging database on PostgreSQL 15.", {}),
        (blue, "author", "Draft: deploy staging before production, then check the billing logs.", {}),
        (founder, "org", "The on-call engineer is paged only for customer-facing outages.", {}),
        (founder, "project", "Frontend builds use Vite and deploy on every pull request.", {"workspace": "web"}),
    ]
    for i, (author, visibility, text, extra) in enumerate(texts):
        occurred = (WHEN + dt.timedelta(days=i)).isoformat()
        write(author, visibility, text, occurred_at=occurred, source_id="notes", position=i, **extra)
    expired = write(founder, "project", "Staging deploys are frozen in December.", expires_at="1h")
    Memory.objects.filter(id=expired).update(expires_at=timezone.now() - dt.timedelta(minutes=1))
    forgotten = write(founder, "project", "Deploy staging with the old script.")
    Memory.objects.filter(id=forgotten).update(forgotten_at=timezone.now())
    other = make_org("elsewhere", departments=())
    write(other.founder, "project", "Deploy staging at elsewhere every day.")
    return World(org, founder, red, blue, other.founder.principal())


def scopes(w: World) -> dict[str, QuerySet[Memory]]:
    """Every kind of scope a read draws on, named."""

    def listing(who: Person | Principal, workspace: str = "default", **filters: Any) -> QuerySet[Memory]:
        principal = who.principal() if isinstance(who, Person) else who
        f = selectors.MemoryFilters.of(filters)
        qs = selectors.memory_queryset(principal=principal, workspace=workspace, filters=f)
        assert qs is not None
        return qs

    return {
        "founder, default": listing(w.founder),
        "founder, every workspace": listing(w.founder, "*"),
        "red, every workspace": listing(w.red, "*"),
        "blue, every workspace": listing(w.blue, "*"),
        "blue, tag and confidence": listing(w.blue, "*", tags=["ops"], min_confidence=0.1),
        "red, latest versions only": listing(w.red, "*", latest_only=True),
        "founder, since and until": listing(
            w.founder,
            "*",
            since=(WHEN + dt.timedelta(days=2)).isoformat(),
            until=(WHEN + dt.timedelta(days=5)).isoformat(),
        ),
        "another account": listing(w.outsider, "*"),
    }


def test_a_scope_holds_exactly_the_querysets_rows(world: World) -> None:
    sizes = {}
    for name, qs in scopes(world).items():
        scope = sql.Scope.of(qs)
        assert scope is not None, name
        with connection.cursor() as cursor:
            cursor.execute(scope.rows(scope.column("id")), list(scope.params))
            got = {row[0] for row in cursor.fetchall()}
        assert got == set(qs.values_list("id", flat=True)), name
        sizes[name] = len(got)
    # the scopes differ (the test would prove little if every scope held the same rows)
    assert sizes["blue, every workspace"] != sizes["red, every workspace"]
    assert sizes["founder, default"] < sizes["founder, every workspace"]
    assert 0 < sizes["founder, since and until"] < sizes["founder, every workspace"]


def test_a_scope_that_can_hold_nothing_is_none(world: World) -> None:
    assert sql.Scope.of(Memory.objects.none()) is None
    assert sql.Scope.of(Memory.objects.filter(id__in=[])) is None
    assert search.nearest(Memory.objects.none(), [0.1] * vectors.current().dim, vectors.current().model_id, 5) == []


def _stats(terms: list[str]) -> search.TermStats:
    return search.TermStats(40, [20 if t.startswith("deploy") else 3 for t in terms])


def test_the_keyword_statement_answers_as_the_orm(world: World) -> None:
    """Ordinary queries and the newest-matches cut (``newest``), with and without context."""
    answered = 0
    cases = [
        (name, qs, weight, newest) for name, qs in scopes(world).items() for weight in (0.0, 0.3) for newest in (0, 3)
    ]
    for name, qs, context_weight, newest in cases:
        for query in ("deploy staging", "deploy", "staging certificate deploy", "billing logs", "zebra"):
            asked = search.keyword_query(query, _stats, context_weight)
            assert asked is not None
            asked = sql.KeywordQuery(asked.terms, asked.weights, asked.match, context_weight, newest)
            scope = sql.Scope.of(qs)
            assert scope is not None
            got = sql.keyword_ranked(scope, asked, 4)
            want = orm_keyword_ranked(qs, asked, 4)
            assert [(r[0], r[2]) for r in got] == [(r[0], r[2]) for r in want], (name, query)
            assert [r[1] for r in got] == pytest.approx([r[1] for r in want], abs=1e-9), (name, query)
            assert [r[3:] for r in got] == [pytest.approx(r[3:], abs=1e-9) for r in want], (name, query)
            answered += len(got)
    assert answered > 80


def test_equal_rows_are_cut_by_id_whatever_the_plan(world: World) -> None:
    """Records of one batch share ``created_at``; with equal text they share the rank too. The
    cut among them (the newest-matches cut and the final limit) takes the greatest ids, as the
    ORM reference does, not whatever order the heap or a sort left them in."""
    ids = [uuid.UUID(write(world.founder, "project", "Zeppelin hangar inspection checklist.")) for _ in range(7)]
    Memory.objects.filter(id__in=ids).update(created_at=WHEN)
    qs = scopes(world)["founder, default"]
    scope = sql.Scope.of(qs)
    assert scope is not None
    expected = sorted(ids, reverse=True)
    for newest in (0, 5):
        asked = search.keyword_query("zeppelin hangar", _stats)
        assert asked is not None
        asked = sql.KeywordQuery(asked.terms, asked.weights, asked.match, 0.0, newest)
        got = [r[0] for r in sql.keyword_ranked(scope, asked, 3)]
        assert got == expected[:3], newest
        assert got == [r[0] for r in orm_keyword_ranked(qs, asked, 3)], newest


def test_records_in_context_are_found_by_their_predecessors_words(world: World) -> None:
    """A record whose previous record (same source, next position) holds the query's word: found
    through its ``context_document`` only when ``context_weight`` > 0."""
    qs = scopes(world)["founder, every workspace"]  # the founder's first two records: one sequence
    scope = sql.Scope.of(qs)
    assert scope is not None
    asked = search.keyword_query("Monday", _stats, 0.3)
    assert asked is not None
    contextual = {r[0] for r in sql.keyword_ranked(scope, asked, 10)}
    plain = {
        r[0] for r in sql.keyword_ranked(scope, sql.KeywordQuery(asked.terms, asked.weights, asked.match, 0.0), 10)
    }
    assert plain < contextual


def test_the_dense_statement_answers_as_the_orm(world: World) -> None:
    backend = vectors.current()
    for name, qs in scopes(world).items():
        for query in ("when do we deploy staging", "who gets paged", "база данных"):
            embedded = vectors.embed_query(query)
            assert embedded is not None
            got = search.nearest(qs, embedded[0], backend.model_id, 5)
            want = orm_nearest(qs, embedded[0], backend.model_id, 5)
            assert [(c.id, c.created_at) for c in got] == [(c.id, c.created_at) for c in want], (name, query)
            assert [c.score for c in got] == pytest.approx([c.score for c in want], abs=1e-9)


def test_presented_rows_are_the_orms_and_present_the_same(world: World) -> None:
    """Asked for every record id of both accounts, each scope returns only its own rows, and each
    is presented exactly as the ORM-loaded record is, without another query."""
    every = list(Memory.objects.values_list("id", flat=True))
    for name, qs in scopes(world).items():
        scope = sql.Scope.of(qs)
        assert scope is not None
        got = sql.presented(scope, every)
        want = orm_presented(qs, every)
        assert got.keys() == want.keys(), name
        principal = _principal_of(world, name)
        with CaptureQueriesContext(connection) as captured:
            authors = [presenters.author(got[i]) for i in want]
            names = [got[i].workspace.name for i in want]
        assert captured.captured_queries == [], name
        assert authors == [presenters.author(want[i]) for i in want], name
        assert names == [want[i].workspace.name for i in want], name
        ids = list(want)
        assert selectors.present(principal, [got[i] for i in ids]) == selectors.present(
            principal, [want[i] for i in ids]
        )
        for i in ids:
            for field in sql._PRESENTED_FIELDS:
                assert getattr(got[i], field.attname) == getattr(want[i], field.attname), (name, field.name)
    empty = sql.Scope.of(Memory.objects.all())
    assert empty is not None
    assert sql.presented(empty, []) == {}


def _principal_of(w: World, scope_name: str) -> Principal:
    who: dict[str, Callable[[], Principal]] = {
        "founder": w.founder.principal,
        "red": w.red.principal,
        "blue": w.blue.principal,
        "another": lambda: w.outsider,
    }
    return who[scope_name.split(",")[0].split()[0]]()


def test_a_search_is_four_statements_after_admission(world: World) -> None:
    """The scope is compiled once: term statistics, the keyword ranker, the dense ranker and the
    winners' rows (no side connection in tests: the dense ranker runs on the request's)."""
    qs = scopes(world)["founder, every workspace"]
    with CaptureQueriesContext(connection) as captured:
        hits = search.hybrid_hits(qs, "deploy staging", 5, world.org.project.pk)
    assert hits
    statements = [q["sql"] for q in captured.captured_queries]
    assert len(statements) == 4, statements
    assert "memories_termstat" in statements[0]
    assert "tsquery" in statements[1]
    assert "<=>" in statements[2]
    assert "mmw_author" in statements[3]


def _ids(scope: sql.Scope | None) -> set[Any]:
    assert scope is not None
    with connection.cursor() as cursor:
        cursor.execute(scope.rows(scope.column("id")), list(scope.params))
        return {row[0] for row in cursor.fetchall()}


def test_the_readable_scope_is_the_visibility_rule(world: World) -> None:
    """Each person's kept scope holds what ``visible_to`` (and ``live``) holds; a second ask
    gives the kept one."""
    for person in (world.founder.principal(), world.red.principal(), world.blue.principal(), world.outsider):
        visible = Memory.objects.visible_to(person)
        assert _ids(selectors.readable_scope(person)) == set(visible.live().values_list("id", flat=True))
        assert _ids(selectors.readable_scope(person, live=False)) == set(visible.values_list("id", flat=True))
        assert selectors.readable_scope(person) is selectors.readable_scope(person)


def test_a_kept_scope_reads_now_when_it_runs(world: World) -> None:
    """A record that expires after the scope was kept leaves it: "now" is the statement's."""
    principal = world.founder.principal()
    kept = selectors.readable_scope(principal)
    record = Memory.objects.filter(content__startswith="The on-call engineer").get()
    assert record.id in _ids(kept)
    Memory.objects.filter(id=record.id).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert selectors.readable_scope(principal) is kept
    assert record.id not in _ids(kept)


def test_an_inactive_membership_reads_nothing_through_a_kept_scope(world: World) -> None:
    """A principal built before its membership was deactivated (another process's cached key, at
    most a second old: an inactive membership's key no longer resolves) reads nothing."""
    import dataclasses

    from mmw.errors import NotFound
    from orgs.models import Membership

    red = world.red.principal()
    record_id = next(iter(_ids(selectors.readable_scope(red))))
    membership = Membership.objects.get(pk=red.membership.pk)
    membership.is_active = False
    inactive = dataclasses.replace(red, membership=membership)
    assert selectors.readable_scope(inactive) is None
    with pytest.raises(NotFound):
        selectors.memory_get(principal=inactive, memory_id=str(record_id))
    assert [count for _, count, _ in selectors.workspaces_with_counts(inactive)] == [0, 0]


def test_a_scope_is_never_wider_than_its_queryset(world: World) -> None:
    """Slicing, distinct, grouping and unions are not conditions on a table's rows: refused."""
    from django.db.models import Count

    everything = Memory.objects.all()
    for shaped in (
        everything[:3],
        everything.distinct(),
        everything.annotate(n=Count("workspace__memories")).filter(n__gt=1),
        everything.filter(scope="a").union(everything.filter(scope="b")),
    ):
        with pytest.raises(ValueError, match="a scope is a table's rows"):
            sql.Scope.of(shaped)
    joined = selectors.search_scope(
        principal=world.founder.principal(), workspace="*", filters=selectors.MemoryFilters()
    )
    with pytest.raises(ValueError, match="alone"):
        sql.workspace_counts(world.org.project.pk, joined, 10)


def test_a_changed_department_is_another_readable_scope(world: World) -> None:
    """Leaving a department loses its records at once: the cache is keyed by the departments."""
    from orgs import services as org_services

    reader = world.org.add("reader@sqlco.test", departments=["red"])  # reads red's records, wrote none
    kept = selectors.readable_scope(reader.principal())
    before = _ids(kept)
    org_services.department_member_remove(
        department=world.org.departments["red"], membership=reader.membership, actor=world.founder.user
    )
    assert selectors.readable_scope(reader.principal()) is not kept
    after = _ids(selectors.readable_scope(reader.principal()))
    assert after < before
    assert after == set(Memory.objects.visible_to(reader.principal()).live().values_list("id", flat=True))


SEARCHES: list[tuple[str, dict[str, Any]]] = [
    ("default", {}),
    ("web", {}),
    ("*", {}),
    ("default", {"tags": ["ops"]}),
    ("default", {"latest_only": True}),
    ("*", {"fact_key": "cert"}),
]


def test_the_search_scope_holds_the_listings_rows(world: World) -> None:
    for workspace, filters in SEARCHES:
        for person in (world.founder.principal(), world.red.principal(), world.blue.principal()):
            f = selectors.MemoryFilters.of(filters)
            qs = selectors.memory_queryset(principal=person, workspace=workspace, filters=f)
            assert qs is not None
            got = _ids(selectors.search_scope(principal=person, workspace=workspace, filters=f))
            assert got == set(qs.values_list("id", flat=True)), (workspace, filters)
            assert got or filters


def test_the_search_scope_of_a_workspace_not_created_yet_is_none(world: World) -> None:
    principal = world.founder.principal()
    assert selectors.search_scope(principal=principal, workspace="nowhere", filters=selectors.MemoryFilters()) is None


def test_loaded_rows_keep_their_order_and_condition(world: World) -> None:
    scope = selectors.readable_scope(world.red.principal(), live=False)
    assert scope is not None
    rows = sql.loaded(scope, f"{scope.column('fact_key')} = %s", ["cert"], f"{scope.column('occurred_at')} DESC")
    assert [r.content for r in rows] == [
        "The certificate for staging was renewed in March.",
        "Deploy notes: staging needs the new certificate.",
    ]
    every = list(Memory.objects.values_list("id", flat=True))
    assert sql.ids_among(scope, every) == set(
        Memory.objects.visible_to(world.red.principal()).values_list("id", flat=True)
    )
    assert sql.ids_among(scope, []) == set()


def test_an_unfiltered_search_of_one_workspace_compiles_no_listing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common search narrows the kept readable scope; a filtered one compiles the listing."""
    principal = world.founder.principal()
    listed: list[str] = []
    real = selectors.memory_queryset

    def spy(**kwargs: Any) -> QuerySet[Memory] | None:
        listed.append(kwargs["workspace"])
        return real(**kwargs)

    monkeypatch.setattr(selectors, "memory_queryset", spy)
    found = selectors.memory_search(principal=principal, payload={"query": "deploy staging"})
    assert found["results"]
    assert listed == []
    filtered = selectors.memory_search(principal=principal, payload={"query": "deploy staging", "tags": ["ops"]})
    assert listed[0] == "default"
    assert listed[1:] in ([], ["*"])  # a short answer also looks in the other workspaces, with the filter
    assert filtered["results"]
    assert all("ops" in r["tags"] for r in filtered["results"])


def _given(stats: search.TermStats) -> search.StatsOf:
    return lambda _terms: stats


def test_a_spelled_prefix_finds_exactly_what_the_prefix_finds(world: World) -> None:
    """``term_stats`` spells a prefix (``deploy:*``) as the project's words it covers, taken from
    every live record: shared words, unshared records' words and context documents (``'!'`` rows,
    migration 0013). Every scope must get the same rows, scores and order as with the prefix; a
    spelling from the shared words alone must not (so the ``'!'`` words are what keeps it exact)."""
    project = world.founder.principal().project.pk
    only_context = Memory.objects.filter(fact_key="cert", author=world.red.user).get()  # no "deploy" in it
    with connection.cursor() as cursor:  # a word form found only in one record's context
        cursor.execute(
            "UPDATE memories_memory SET context_document = to_tsvector('simple', 'deployments billing') WHERE id = %s",
            [only_context.id],
        )
    spelled_words: set[str] = set()
    differs = 0
    for query in ("deploy", "deploy staging", "billing deployment", "certificate deploys", "zebra"):
        stats = search.term_stats(project, query_words.keyword_terms(query))
        assert stats.spelled is not None
        spelled_words |= {w for words in stats.spelled if words for w in words}
        plain = search.TermStats(stats.corpus, stats.frequencies)
        shared_only = search.TermStats(
            stats.corpus,
            stats.frequencies,
            [
                tuple(w for w in words if w not in {"deploys", "deployments"}) if words else None
                for words in stats.spelled
            ],
        )
        for name, qs in scopes(world).items():
            scope = sql.Scope.of(qs)
            assert scope is not None
            for context_weight in (0.0, 0.3):
                asked = search.keyword_query(query, _given(stats), context_weight)
                prefixed = search.keyword_query(query, _given(plain), context_weight)
                assert asked is not None
                assert prefixed is not None
                got = sql.keyword_ranked(scope, asked, 10)
                assert got == sql.keyword_ranked(scope, prefixed, 10), (query, name, context_weight)
                partial = search.keyword_query(query, _given(shared_only), context_weight)
                assert partial is not None
                differs += sql.keyword_ranked(scope, partial, 10) != got
    assert {"deploy", "deploys", "deployments"} <= spelled_words, spelled_words
    assert differs, "spelling from the shared words alone should have lost a record somewhere"


def test_a_prefix_with_too_many_words_is_not_spelled(world: World) -> None:
    project = world.founder.principal().project.pk
    many = " ".join(f"zoo{i:03d}" for i in range(search.MAX_SPELLED + 1))
    write(world.founder, "project", many)
    assert search.term_stats(project, ["zoo:*"]).spelled == [None]
    assert search.term_stats(project, ["zoo064:*"]).spelled == [("zoo064",)]
    assert search.term_stats(project, ["(zoo064:* | zoo)"]).spelled == [None]  # an exact alternative
    assert search.term_stats(project, ["absentword:*"]).spelled == [None]


def test_a_word_with_a_shared_and_an_unshared_row_counts_once_toward_the_cap(world: World) -> None:
    """A word often has both a shared row and a '!' row (a draft holding it too): the cap on a
    spelling is on distinct words, so more rows than ``MAX_SPELLED`` but fewer words still spell
    every word (a cap on rows dropped some, and the records holding only those; review of the
    spelled prefixes, stop 32)."""
    project = world.founder.principal().project.pk
    write(world.founder, "project", " ".join(f"deploy{i:02d}" for i in range(40)))
    write(world.blue, "author", " ".join(f"deploy{i:02d}" for i in range(30)))
    last = write(world.founder, "project", "deploy40 happened late")
    stats = search.term_stats(project, ["deploy:*"])
    assert stats.spelled is not None
    words = stats.spelled[0]
    assert words is not None
    assert "deploy40" in words
    qs = scopes(world)["founder, every workspace"]
    scope = sql.Scope.of(qs)
    assert scope is not None
    asked = search.keyword_query("deploy", _given(stats))
    assert asked is not None
    assert isinstance(asked.match[0], sql.Spelled)
    found = [row[0] for row in sql.keyword_ranked(scope, asked, 100)]
    assert uuid.UUID(str(last)) in found
    assert found == [row[0] for row in orm_keyword_ranked(qs, asked, 100)]
