"""Settings for one statement, in the same round trip: ``execute_after``.

``SET LOCAL`` statements and the statement they are for go as one simple query. Outside an
``atomic`` block PostgreSQL runs a multi-statement query as one implicit transaction, so the
settings hold for the statement and end with it (a pooled connection never keeps them); inside
one, they end with that transaction. This needs Django's default client-side parameter binding
(psycopg's ``ClientCursor``, simple query protocol): with ``OPTIONS["server_side_binding"] = True``
PostgreSQL refuses several statements in one prepared query
(tests/memories/test_nearest_round_trip.py). Used by the dense ranker (HNSW settings) and the
rate counters (asynchronous commit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def execute_after(cursor: Any, prelude: str, sql: str, params: Sequence[object]) -> None:
    """Run ``prelude`` (``SET LOCAL …;`` statements, no parameters) then ``sql`` with ``params`` in
    one round trip, and leave ``cursor`` on ``sql``'s rows (Django's cursor or a psycopg one)."""
    cursor.execute(prelude + sql, params)
    while cursor.description is None and cursor.nextset():
        pass  # past the SETs' results to the statement's rows
