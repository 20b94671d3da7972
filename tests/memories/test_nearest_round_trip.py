"""``search.nearest`` (the dense ranker) in one round trip: its answers are those of the ORM ranker
it replaced (the same query in an ``atomic`` block after two ``SET LOCAL``: ``tests.memories.orm_reference.orm_nearest``,
the reference), it sends one statement, and its HNSW settings end with that statement.

It relies on Django's default client-side binding (psycopg's ``ClientCursor`` sends the three
statements as one simple query); ``OPTIONS["server_side_binding"] = True`` would make PostgreSQL
refuse it ("cannot insert multiple commands into a prepared statement")."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.keys import resolve_key
from memories import dense, search, selectors, vectors
from memories.models import Memory
from tests.conftest import Tenancy
from tests.memories.orm_reference import orm_nearest
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

TEXTS = [
    "The staging database is PostgreSQL 15 in eu-west-3, without replicas.",
    "Production backups are kept thirty days on S3.",
    "The on-call engineer is paged only for customer-facing outages.",
    "Frontend builds use Vite and run on every pull request.",
    "Deploys to production happen on Tuesdays and Thursdays after the release review.",
    "Стейджинговая база данных — PostgreSQL 15 в регионе eu-west-3.",
    "Les sauvegardes de la base de production sont conservées trente jours.",
    "The release train leaves every Thursday at noon.",
]
QUERIES = ["when are backups deleted", "which database does staging use", "release schedule", "vite"]


def scoped(tenancy: Tenancy) -> Any:
    api = Api(tenancy.alice.key)
    for text in TEXTS:
        api.ok_remember(content=text)
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    qs = selectors.memory_queryset(principal=principal, workspace="default")
    assert qs is not None
    return qs


def embedded(query: str) -> tuple[list[float], str]:
    result = vectors.embed_query(query)
    assert result is not None
    return result[0], result[1].model_id


def test_same_answers_as_the_orm_ranker(tenancy: Tenancy) -> None:
    qs = scoped(tenancy)
    for query in QUERIES:
        vector, model_id = embedded(query)
        for limit in (1, 3, 50):
            got = search.nearest(qs, vector, model_id, limit)
            want = orm_nearest(qs, vector, model_id, limit)
            assert [(c.id, c.created_at) for c in got] == [(c.id, c.created_at) for c in want]
            assert [c.score for c in got] == pytest.approx([c.score for c in want], abs=1e-9)
            # The approximate index may stop short of every row when the test database's index
            # holds many dead entries from earlier tests (hnsw.max_scan_tuples): both paths then
            # stop at the same row, which the comparisons above hold; a small limit is always met.
            assert len(got) == min(limit, len(TEXTS)) if limit < len(TEXTS) else 0 < len(got) <= len(TEXTS)


def test_one_statement_with_its_settings(tenancy: Tenancy) -> None:
    qs = scoped(tenancy)
    vector, model_id = embedded(QUERIES[0])
    with CaptureQueriesContext(connection) as captured:
        search.nearest(qs, vector, model_id, 10)
    assert len(captured.captured_queries) == 1
    sql = captured.captured_queries[0]["sql"]
    assert sql.startswith(
        f"SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL hnsw.ef_search = {int(dense.EF_SEARCH)}; SELECT"
    )


def test_an_empty_scope_ranks_nothing_without_a_query(tenancy: Tenancy) -> None:
    vector, model_id = embedded(QUERIES[0])
    with CaptureQueriesContext(connection) as captured:
        assert search.nearest(Memory.objects.none(), vector, model_id, 10) == []
    assert len(captured.captured_queries) == 0


@pytest.mark.django_db(transaction=True)
def test_the_settings_end_with_the_statement_outside_a_transaction(tenancy: Tenancy) -> None:
    """In autocommit (a web request), the three statements are one implicit transaction: the
    pooled connection does not keep the HNSW settings for its next query."""
    qs = scoped(tenancy)
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        before = cursor.fetchone()
    assert not connection.in_atomic_block
    vector, model_id = embedded(QUERIES[1])
    assert search.nearest(qs, vector, model_id, 5)
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        assert cursor.fetchone() == before
        cursor.execute("SHOW hnsw.iterative_scan")
        assert cursor.fetchone() == ("off",)


def test_client_side_binding_is_configured() -> None:
    """The single round trip needs it; see the module docstring."""
    assert not settings.DATABASES["default"].get("OPTIONS", {}).get("server_side_binding", False)
