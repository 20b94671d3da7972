"""Shared, atomic call counters for rate limits and monthly usage.

With Redis (or memcached) as Django's default cache, a counter is the cache's atomic ``incr``
(``INCR`` in Redis), outside any database transaction. Otherwise (``make run`` without Redis, the
tests) the counters are rows of ``billing_ratecounter`` bumped with one atomic
``INSERT … ON CONFLICT DO UPDATE``: every process sees them, unlike a per-process cache.

Trade-off of the PostgreSQL path, documented in docs/billing.md: an increment made inside a
write's transaction holds that counter row until the write commits (concurrent calls of the
same project wait for it), and a write that fails after counting takes its count back.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from django.core.cache import BaseCache, caches
from django.core.cache.backends.memcached import PyLibMCCache, PyMemcacheCache
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from django.utils import timezone

from billing.models import RateCounter
from mmw.db.prelude import execute_after

ATOMIC_CACHES = (RedisCache, PyMemcacheCache, PyLibMCCache)
# The table name is the model's constant; the values are parameters.
_TABLE = RateCounter._meta.db_table
_UPSERT = (
    f"INSERT INTO {_TABLE} (bucket, count, expires_at) VALUES (%s, 1, %s) "  # noqa: S608
    f"ON CONFLICT (bucket) DO UPDATE SET count = {_TABLE}.count + 1 RETURNING count"
)


def now() -> float:
    """The clock of rate-limit windows (seconds since the epoch); tests move it."""
    return time.time()


def fixed_window(seconds: int, at: float | None = None) -> tuple[int, int]:
    """The clock window of ``seconds`` that ``at`` (default ``now()``) falls in (its number, for
    a bucket name) and the whole seconds until it ends, at least 1 (a ``Retry-After``)."""
    at = now() if at is None else at
    window = int(at // seconds)
    return window, max(1, math.ceil((window + 1) * seconds - at))


def _atomic_cache() -> BaseCache | None:
    cache = caches["default"]
    return cache if isinstance(cache, ATOMIC_CACHES) else None


def hit(bucket: str, *, ttl: int) -> int:
    """Add one to ``bucket`` (created with a lifetime of ``ttl`` seconds); return the new count."""
    cache = _atomic_cache()
    if cache is None:
        expires = timezone.now() + dt.timedelta(seconds=ttl)
        with connection.cursor() as cursor:
            cursor.execute(_UPSERT, [bucket, expires])
            row = cursor.fetchone()
        return int(row[0]) if row else 1
    key = f"mmw:count:{bucket}"
    cache.add(key, 0, timeout=ttl)
    try:
        count = int(cache.incr(key))
    except ValueError:  # expired between add and incr: this is the first hit of a new lifetime
        cache.add(key, 1, timeout=ttl)
        return 1
    if count == 1:  # make sure a key re-created by INCR alone still expires
        cache.touch(key, timeout=ttl)
    return count


class Step(NamedTuple):
    """One counter of a :func:`hit_chain`: add one to ``bucket`` (lifetime ``ttl`` seconds); when
    the new count passes ``limit`` (None: unlimited) the chain stops there."""

    bucket: str
    ttl: int
    limit: int | None = None


# KEYS: the buckets; ARGV: ttl_1, limit_1 (-1: none), ttl_2, limit_2, ...  Returns the counts of
# the steps that ran, in order; the last one is over its limit when the chain stopped early.
_CHAIN_LUA = """
local counts = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  if count == 1 or redis.call('TTL', key) < 0 then
    redis.call('EXPIRE', key, tonumber(ARGV[2 * i - 1]))
  end
  counts[i] = count
  local limit = tonumber(ARGV[2 * i])
  if limit >= 0 and count > limit then
    return counts
  end
end
return counts
"""


def hit_chain(steps: Sequence[Step]) -> list[int]:
    """Count one call in each of ``steps`` in order, stopping after the first whose count passes
    its limit (so a call refused per key is not counted per project or monthly); return the
    counts of the steps that ran. One round trip: a Lua script on Redis (atomic), one statement
    on PostgreSQL (chained upserts). Other atomic caches (memcached) fall back to :func:`hit`
    per step."""
    if not steps:
        return []
    cache = _atomic_cache()
    if cache is None:
        return _chain_sql(steps)
    if isinstance(cache, RedisCache):
        keys = [cache.make_and_validate_key(f"mmw:count:{step.bucket}") for step in steps]
        args: list[int] = []
        for step in steps:
            args += [max(1, step.ttl), -1 if step.limit is None else step.limit]
        client = cache._cache.get_client(keys[0], write=True)  # Django's cache API has no EVAL
        return [int(c) for c in client.eval(_CHAIN_LUA, len(keys), *keys, *args)]
    counts = []
    for step in steps:
        counts.append(hit(step.bucket, ttl=step.ttl))
        if step.limit is not None and counts[-1] > step.limit:
            break
    return counts


# A counter upsert outside a write's transaction (every read call's) commits without waiting for
# its WAL flush: ~0.2 ms p50 and ~1 ms p95 per call here (docs/latency.md). What a PostgreSQL crash
# can lose is the last fraction of a second of counts (a few calls not counted against a limit),
# never a record: a write's own transaction keeps synchronous commit. Same round trip, and the
# setting ends with the statement (``mmw.db.prelude``).
RELAXED_COMMIT = "SET LOCAL synchronous_commit TO off; "


def _chain_sql(steps: Sequence[Step]) -> list[int]:
    """One statement: step i's upsert (a CTE) inserts nothing unless step i-1's new count is
    within its limit, so the chain stops exactly where :func:`hit` called in a loop would."""
    ctes: list[str] = []
    selects: list[str] = []
    params: list[Any] = []
    for i, step in enumerate(steps):
        params += [step.bucket, timezone.now() + dt.timedelta(seconds=step.ttl)]
        guard = ""
        if i and steps[i - 1].limit is not None:
            guard = f" WHERE (SELECT count FROM c{i - 1}) <= %s"  # noqa: S608 - names and %s only
            params.append(steps[i - 1].limit)
        elif i:  # after an unlimited step: only when that step ran (the chain did not stop before)
            guard = f" WHERE EXISTS (SELECT 1 FROM c{i - 1})"  # noqa: S608 - names only
        ctes.append(  # the table name is the model's constant; every value is a parameter
            f"c{i} AS (INSERT INTO {_TABLE} (bucket, count, expires_at) SELECT %s, 1, %s{guard} "
            f"ON CONFLICT (bucket) DO UPDATE SET count = {_TABLE}.count + 1 RETURNING count)"
        )
        selects.append(f"(SELECT count FROM c{i})")  # noqa: S608
    sql = "WITH " + ", ".join(ctes) + " SELECT " + ", ".join(selects)
    with connection.cursor() as cursor:
        if connection.in_atomic_block:  # a write's transaction: its commit stays durable
            cursor.execute(sql, params)
        else:
            execute_after(cursor, RELAXED_COMMIT, sql, params)
        row = cursor.fetchone()
    return [int(count) for count in (row or ()) if count is not None]


def peek(bucket: str) -> int:
    """The current count of ``bucket`` (0 when absent or expired)."""
    cache = _atomic_cache()
    if cache is None:
        row = RateCounter.objects.filter(bucket=bucket, expires_at__gt=timezone.now()).values_list("count").first()
        return int(row[0]) if row else 0
    return int(cache.get(f"mmw:count:{bucket}", 0))


def purge_expired() -> int:
    """Delete expired counter rows (the PostgreSQL path); the cache expires its own keys."""
    deleted, _ = RateCounter.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted
