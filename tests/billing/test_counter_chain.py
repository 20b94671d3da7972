"""Rate counters in one round trip per call (issue #19): ``counters.hit_chain`` on PostgreSQL (one
statement) and Redis (one EVAL) counts exactly like ``hit`` called step by step, and stops at the
first limit passed, so a call refused per key is counted neither per project nor monthly."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import counters
from billing.models import RateCounter
from tests.billing.conftest import Clock, Plans
from tests.billing.test_limits import redis_cache, set_free
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db
__all__ = ["redis_cache"]  # the fixture, imported to be used here


def chain(tag: str, key_limit: int) -> list[counters.Step]:
    return [
        counters.Step(f"rate:key:{tag}", 120, key_limit),
        counters.Step(f"rate:project:{tag}", 120, 100),
        counters.Step(f"calls:project:{tag}", 3600),
    ]


def check_chain_stops_at_the_first_limit() -> None:
    tag = uuid.uuid4().hex
    assert counters.hit_chain(chain(tag, 2)) == [1, 1, 1]
    assert counters.hit_chain(chain(tag, 2)) == [2, 2, 2]
    assert counters.hit_chain(chain(tag, 2)) == [3]  # refused per key: nothing else counted
    assert [counters.peek(s.bucket) for s in chain(tag, 2)] == [3, 2, 2]
    assert counters.hit_chain([]) == []


def test_the_chain_stops_at_the_first_limit_on_postgres(plans: Plans) -> None:
    check_chain_stops_at_the_first_limit()
    with CaptureQueriesContext(connection) as queries:
        counters.hit_chain(chain(uuid.uuid4().hex, 5))
    assert len(queries) == 1  # three counters, one statement


def test_the_chain_stops_at_the_first_limit_on_redis(redis_cache: None, plans: Plans) -> None:
    check_chain_stops_at_the_first_limit()
    assert not RateCounter.objects.exists()


def test_the_chain_is_exact_under_concurrency_on_redis(redis_cache: None, plans: Plans) -> None:
    tag = uuid.uuid4().hex
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(lambda _: counters.hit_chain(chain(tag, 10)), range(40)))
    assert sum(len(counts) == 3 for counts in runs) == 10  # exactly the limit went through
    assert [counters.peek(s.bucket) for s in chain(tag, 10)] == [40, 10, 10]


def test_redis_chain_keys_expire(redis_cache: None, plans: Plans) -> None:
    cache = caches["default"]
    assert isinstance(cache, RedisCache)
    tag = uuid.uuid4().hex
    counters.hit_chain(chain(tag, 5))
    key = cache.make_and_validate_key(f"mmw:count:rate:key:{tag}")
    ttl = cache._cache.get_client(key).ttl(key)
    assert 0 < ttl <= 120


def rate_statements(queries: CaptureQueriesContext) -> int:
    return sum(RateCounter._meta.db_table in q["sql"] for q in queries.captured_queries)


def test_a_limited_call_counts_its_three_counters_in_one_statement(
    tenancy: Tenancy, plans: Plans, clock: Clock
) -> None:
    set_free(calls_per_minute_per_key=50, calls_per_minute_per_project=100)
    api = Api(tenancy.alice.key)
    api.search(query="warm the key cache")
    with CaptureQueriesContext(connection) as queries:
        api.search(query="one call")
    assert rate_statements(queries) == 1


def test_a_limited_call_is_one_redis_round_trip_for_its_counters(
    tenancy: Tenancy, plans: Plans, clock: Clock, redis_cache: None, monkeypatch: Any
) -> None:
    set_free(calls_per_minute_per_key=50, calls_per_minute_per_project=100)
    api = Api(tenancy.alice.key)
    api.search(query="warm the key cache")
    sent: list[str] = []
    original = redis.Redis.execute_command

    def counted(self: redis.Redis, *args: Any, **options: Any) -> Any:
        sent.append(str(args[0]))
        return original(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counted)
    with CaptureQueriesContext(connection) as queries:
        api.search(query="one call")
    assert rate_statements(queries) == 0
    assert sent.count("EVAL") == 1
    assert [c for c in sent if c != "EVAL" and c.upper() in ("INCR", "ADD", "SET", "EXPIRE")] == []


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_an_unlimited_step_after_an_unlimited_one_stops_with_the_chain(
    request: pytest.FixtureRequest, plans: Plans, backend: str
) -> None:
    """A key's own monthly counter follows the project's (both unlimited): a call refused per key
    counts in neither (on PostgreSQL the step after an unlimited one ran unguarded before)."""
    if backend == "redis":
        request.getfixturevalue("redis_cache")
    tag = uuid.uuid4().hex
    steps = [*chain(tag, 1), counters.Step(f"calls:key:{tag}", 3600)]
    assert counters.hit_chain(steps) == [1, 1, 1, 1]
    assert counters.hit_chain(steps) == [2]
    assert [counters.peek(s.bucket) for s in steps] == [2, 1, 1, 1]


@pytest.mark.django_db(transaction=True)
def test_a_read_call_s_counters_commit_without_waiting_for_the_flush_and_the_setting_ends() -> None:
    """Outside a transaction (a read call) the counter statement commits asynchronously; the
    setting ends with it (the pooled connection's next statement commits synchronously again)."""
    tag = uuid.uuid4().hex
    assert not connection.in_atomic_block
    with CaptureQueriesContext(connection) as captured:
        assert counters.hit_chain(chain(tag, 5)) == [1, 1, 1]
    [sql] = [q["sql"] for q in captured.captured_queries]
    assert sql.startswith(counters.RELAXED_COMMIT)
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)
    assert counters.hit_chain(chain(tag, 5)) == [2, 2, 2]


def test_inside_a_write_s_transaction_the_commit_stays_synchronous() -> None:
    tag = uuid.uuid4().hex
    assert connection.in_atomic_block  # the test's transaction stands for a write's
    with CaptureQueriesContext(connection) as captured:
        assert counters.hit_chain(chain(tag, 5)) == [1, 1, 1]
    [sql] = [q["sql"] for q in captured.captured_queries]
    assert "synchronous_commit" not in sql
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)
