"""A second pooled connection for one read beside the request's own, if one is free now.

Why: a search runs two independent statements (the keyword ranker and the dense ranker). On
one connection PostgreSQL answers them one after the other; on two they run at once, on two
backends (docs/search.md, step 3 of "The pipeline of one search"; docs/latency.md,
"The hot path of a search").

Contract:
- ``side_pool(alias)`` is asked on the request's thread. It names the pool to borrow from, or
  None when a second connection must not be used: no pool (commands, the Celery worker, tests
  without ``serve``), or the request's connection is inside a transaction (a second connection
  would not see its uncommitted rows, nor hold its locks).
- ``borrowed(pool)`` yields a connection taken from the pool within ``ASIDE_WAIT`` seconds, or
  None: a busy pool is never waited for (the caller then runs the statement on its own
  connection), so a request holding one connection never waits for a second one held by
  another request that waits too. The connection goes back to the pool afterwards, whatever
  happened; a connection broken by an error is discarded by the pool.
- Connections come from Django's own pool, so they are configured as Django's (time zone,
  adapters, client-side binding: ``%s`` parameters, several statements in one query) and in
  autocommit: each ``execute`` is its own transaction.
- Errors of the side connection are the caller's to catch (``psycopg.Error``); the caller falls
  back to its own connection, where an error is raised and reported as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout, TooManyRequests

# Seconds a side borrow may wait for an idle pooled connection before the caller goes on alone.
ASIDE_WAIT = 0.002


def side_pool(alias: str = DEFAULT_DB_ALIAS) -> ConnectionPool[Any] | None:
    """The pool a read may borrow a second connection from, asked on the request's thread (see
    the module's contract): None without a pool or inside a transaction."""
    wrapper = connections[alias]
    if wrapper.in_atomic_block:
        return None
    pool: ConnectionPool[Any] | None = getattr(wrapper, "pool", None)
    return pool


@contextmanager
def borrowed(pool: ConnectionPool[Any], wait: float = ASIDE_WAIT) -> Iterator[Any | None]:
    """A connection of ``pool`` if one is free within ``wait`` seconds, else None; returned to
    the pool on exit."""
    try:
        conn = pool.getconn(timeout=wait)
    except (PoolTimeout, TooManyRequests, PoolClosed):
        yield None
        return
    try:
        yield conn
    finally:
        pool.putconn(conn)
