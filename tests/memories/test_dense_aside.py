"""The dense ranker beside the keyword ranker (``search._dense_aside``, ``mmw.db.aside``): with a
free pooled connection it runs there, on its own PostgreSQL backend, and the ranking is the same
as on the request's own connection; with no free connection, inside a transaction, or when the
side connection fails, the request's connection runs it, with the same answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from psycopg_pool import ConnectionPool

from memories import search
from mmw.db import aside
from tests.conftest import Tenancy
from tests.memories.test_nearest_round_trip import QUERIES, scoped

pytestmark = pytest.mark.django_db(transaction=True)


def _pool(configure: Any = None) -> ConnectionPool[Any]:
    """A pool of one connection to the test database, configured as Django's pool configures."""
    params = connection.get_connection_params()
    params["autocommit"] = True
    return ConnectionPool(
        kwargs=params,
        min_size=1,
        max_size=1,
        open=True,
        configure=configure or connection._configure_connection,  # type: ignore[attr-defined]
    )


@pytest.fixture
def side() -> Iterator[ConnectionPool[Any]]:
    pool = _pool()
    pool.wait()
    yield pool
    pool.close()


def ranked(qs: Any, query: str, pool: ConnectionPool[Any] | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """The fused ranking of ``query`` with ``pool`` as the side pool, and how many dense-ranker
    statements the request's own connection ran."""
    monkeypatch.setattr(aside, "side_pool", lambda alias="default": pool)
    with CaptureQueriesContext(connection) as captured:
        found = search.hybrid_ranking(qs, query, 5, lambda terms: search.TermStats(0, [0] * len(terms)))
    dense_here = sum("<=>" in q["sql"] for q in captured.captured_queries)
    return [(c.id, round(c.score, 9), round(c.relevance, 9)) for c in found], dense_here


def test_with_a_free_connection_the_dense_ranker_runs_beside_with_the_same_answer(
    tenancy: Tenancy, side: ConnectionPool[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    qs = scoped(tenancy)
    for query in QUERIES:
        beside, here_beside = ranked(qs, query, side, monkeypatch)
        alone, here_alone = ranked(qs, query, None, monkeypatch)
        assert beside, query
        assert beside == alone, query
        assert (here_beside, here_alone) == (0, 1), query
    assert side.get_stats()["pool_available"] == 1  # the side connection went back


def test_a_busy_pool_is_not_waited_for(
    tenancy: Tenancy, side: ConnectionPool[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    qs = scoped(tenancy)
    alone, _ = ranked(qs, QUERIES[0], None, monkeypatch)
    waits: list[float | None] = []
    getconn = side.getconn

    def watched(timeout: float | None = None) -> Any:
        waits.append(timeout)
        return getconn(timeout=timeout)

    with side.connection():  # the pool's only connection is taken
        monkeypatch.setattr(side, "getconn", watched)
        busy, here = ranked(qs, QUERIES[0], side, monkeypatch)
    assert busy == alone
    assert here == 1
    # Asked for ASIDE_WAIT (2 ms) at most, never the pool's timeout (30 s for this pool, 1.0 s in
    # production): behaviour, not wall time.
    assert waits == [aside.ASIDE_WAIT]
    assert aside.ASIDE_WAIT <= 0.01


def test_a_failing_side_connection_falls_back_to_the_request_s(
    tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(conn: Any) -> None:  # every statement on it fails: no table is found
        conn.execute("SET search_path TO pg_catalog")

    pool = _pool(configure=broken)
    pool.wait()
    try:
        qs = scoped(tenancy)
        alone, _ = ranked(qs, QUERIES[1], None, monkeypatch)
        failed, here = ranked(qs, QUERIES[1], pool, monkeypatch)
    finally:
        pool.close()
    assert failed == alone
    assert here == 1


def test_no_side_connection_inside_a_transaction_or_without_a_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    assert aside.side_pool() is None  # the test settings have no pool
    connection.ensure_connection()  # opened without the pretend pool below
    with monkeypatch.context() as patched:
        fake: Any = "the pool"
        patched.setattr(type(connections["default"]), "pool", property(lambda self: fake))
        assert aside.side_pool() is fake
        with transaction.atomic():
            assert aside.side_pool() is None  # a second connection would not see this transaction's rows


def test_the_request_s_connection_runs_the_statement_compiled_for_the_side(
    tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a side connection the dense statement is not compiled a second time."""
    qs = scoped(tenancy)
    compiled: list[str] = []
    of = search.NearestQuery.of.__func__  # type: ignore[attr-defined]

    def counted(cls: Any, *args: Any, **kwargs: Any) -> Any:
        compiled.append(cls.__name__)
        return of(cls, *args, **kwargs)

    monkeypatch.setattr(search.NearestQuery, "of", classmethod(counted))
    found, here = ranked(qs, QUERIES[0], None, monkeypatch)
    assert found
    assert here == 1
    assert compiled == ["NearestQuery"]
