"""Concurrency: idempotent replays and expected_version under real parallel transactions."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier
from typing import Any

import pytest
from django.db import connection

from accounts.keys import resolve_key
from memories import services
from memories.models import Memory
from mmw.errors import MMWError
from tests.conftest import Tenancy


def in_parallel(n: int, fn: Callable[[], Any]) -> list[Any]:
    barrier = Barrier(n)

    def run() -> Any:
        try:
            barrier.wait()
            try:
                return fn()
            except MMWError as exc:
                return exc
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=n) as pool:
        return [f.result() for f in [pool.submit(run) for _ in range(n)]]


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_identical_idempotent_requests_store_one_record(tenancy: Tenancy) -> None:
    def call() -> Any:
        principal = resolve_key(tenancy.alice.key)
        assert principal is not None
        return services.memory_remember(
            principal=principal, payload={"content": "the build cache lives on S3"}, idempotency_key="same-request"
        )

    answers = in_parallel(20, call)
    assert not [a for a in answers if isinstance(a, Exception)]
    assert len({a["id"] for a in answers}) == 1
    assert Memory.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_parallel_expected_version_writes_one_wins_one_is_refused(tenancy: Tenancy) -> None:
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    services.memory_remember(principal=principal, payload={"content": "pool size 10", "fact_key": "pool"})
    contents = iter(["pool size 20", "pool size 30"])

    def call() -> Any:
        p = resolve_key(tenancy.alice.key)
        assert p is not None
        return services.memory_remember(
            principal=p, payload={"content": next(contents), "fact_key": "pool", "expected_version": 1}
        )

    answers = in_parallel(2, call)
    wins = [a for a in answers if isinstance(a, dict)]
    losses = [a for a in answers if isinstance(a, MMWError)]
    assert len(wins) == 1
    assert len(losses) == 1
    assert wins[0]["version"] == 2
    assert losses[0].message == "version conflict: expected version 1 but the latest is 2"
    assert Memory.objects.filter(fact_key="pool").count() == 2
