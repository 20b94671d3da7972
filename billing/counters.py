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
import time

from django.core.cache import BaseCache, caches
from django.core.cache.backends.memcached import PyLibMCCache, PyMemcacheCache
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from django.utils import timezone

from billing.models import RateCounter

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
