"""The archivist on a real Celery worker and a real Redis broker, with the broker and the worker
failing on purpose: nothing written is lost, nothing is archived twice."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction

from billing.models import Plan
from billing.seeds import DEFAULT_PLANS
from memories import tasks
from memories.models import Memory, MemoryRelation
from mmw.celery import app
from tests import worker
from tests.conftest import Tenancy
from tests.memories.rest import Api
from tests.worker import BrokerProxy, CeleryWorker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
celery_worker = worker.celery_worker
broker_proxy = worker.broker_proxy


@pytest.fixture(autouse=True)
def _closed_breaker() -> Iterator[None]:
    tasks.publish_breaker.reset()
    yield
    tasks.publish_breaker.reset()


@pytest.fixture(autouse=True)
def _plans(transactional_db: None) -> None:
    """The default plans (a flushed test database may have lost them), so writes are allowed."""
    if not Plan.objects.exists():
        Plan.objects.bulk_create([Plan(**row) for row in DEFAULT_PLANS])


@pytest.fixture
def via_proxy(broker_proxy: BrokerProxy, monkeypatch: pytest.MonkeyPatch) -> BrokerProxy:
    """This process publishes through the proxy; the worker keeps its direct connection."""
    monkeypatch.setitem(app.conf, "broker_url", broker_proxy.url)
    return broker_proxy


def _archived(*ids: Any) -> bool:
    return Memory.objects.filter(id__in=ids, archived_at__isnull=False).count() == len(ids)


def _reported(celery: CeleryWorker, *ids: Any) -> dict[str, list[str]]:
    """What the worker reported for each record, once it has reported each: the task's commit
    (what the caller waited for) comes before its outcome line reaches the worker's log."""
    wait_for(lambda: all(celery.outcomes(i) for i in ids), 10, 0.05, "the worker's outcome lines")
    return {str(i): celery.outcomes(i) for i in ids}


def _relations(api: Api, memory_id: str, query: str) -> list[dict[str, Any]]:
    for result in api.search(query=query, limit=20)["results"]:
        if result["id"] == memory_id:
            return list(result["graph_relations"])
    return []


def test_relation_appears_in_search_within_seconds_of_a_write(tenancy: Tenancy, celery_worker: CeleryWorker) -> None:
    api = Api(tenancy.alice.key)
    older = api.ok_remember(content="Staging deploys via the systemd unit app-staging.")["id"]
    started = time.monotonic()
    newer = api.ok_remember(
        content="Staging deploys via the systemd unit app-staging, restarted by deploy.sh with zero downtime."
    )["id"]
    wait_for(lambda: MemoryRelation.objects.filter(from_memory_id=newer).exists(), 10, 0.02, "the relation")
    elapsed = time.monotonic() - started
    edges = _relations(api, newer, "staging systemd")
    assert {"id": older, "relation": "refines", "direction": "out"}.items() <= edges[0].items()
    status, got = api.call("GET", f"/memories/{older}")
    assert status == 200
    assert {"id": newer, "relation": "refines", "direction": "in"}.items() <= got["memory"]["graph_relations"][
        0
    ].items()
    print(f"\nrelation visible in search {elapsed:.2f}s after the write")
    assert _reported(celery_worker, newer) == {newer: ["archived"]}


def test_new_fact_key_version_supersedes_and_contradicts(tenancy: Tenancy, celery_worker: CeleryWorker) -> None:
    api = Api(tenancy.alice.key)
    v1 = api.ok_remember(content="The public API rate limit is 100 requests per minute.", fact_key="rate-limit")["id"]
    v2 = api.ok_remember(content="The public API rate limit is 500 requests per minute.", fact_key="rate-limit")["id"]
    wait_for(lambda: _archived(v1, v2), 10, 0.05, "both versions archived")
    kinds = {(e["id"], e["relation"]) for e in _relations(api, v2, "rate limit")}
    assert kinds == {(v1, "supersedes"), (v1, "contradicts")}


def test_task_sent_twice_archives_once(tenancy: Tenancy, celery_worker: CeleryWorker) -> None:
    api = Api(tenancy.alice.key)
    memory_id = api.ok_remember(content="Логи хранятся 30 дней в Loki.")["id"]
    tasks.archive_memory.delay(memory_id)
    tasks.archive_memory.delay(memory_id)
    wait_for(lambda: len(celery_worker.outcomes(memory_id)) == 3, 10, 0.05, "three runs")
    assert sorted(celery_worker.outcomes(memory_id)) == ["archived"] + ["skipped: already archived"] * 2


class _Watched:
    """Each write and, inside it, the on-commit publish (``tasks.enqueue_archive``): whether it
    was sent, the transport options of the broker connections it opened
    (``tasks._publish_connection``) and the connections the proxy accepted meanwhile."""

    def __init__(self, api: Api, proxy: BrokerProxy, monkeypatch: pytest.MonkeyPatch) -> None:
        self.api = api
        self.proxy = proxy
        self.sent: list[bool] = []
        self.opened: list[dict[str, Any]] = []
        enqueue, publish_connection = tasks.enqueue_archive, tasks._publish_connection

        def watched_enqueue(memory_id: Any) -> bool:
            sent = enqueue(memory_id)
            self.sent.append(sent)
            return sent

        def watched_connection() -> Any:
            connection = publish_connection()
            options = dict(connection.transport_options)
            self.opened.append(options)
            if options.get("socket_timeout") is None:  # it would wait on a hung broker for ever:
                raise ConnectionError("unbounded publish connection")  # not used (asserted below)
            return connection

        monkeypatch.setattr(tasks, "enqueue_archive", watched_enqueue)
        monkeypatch.setattr(tasks, "_publish_connection", watched_connection)

    def write(self, content: str) -> tuple[uuid.UUID, bool, list[dict[str, Any]], int]:
        """The record's id, whether its publish was sent, the connections it opened (their
        transport options) and how many the broker's proxy accepted for it."""
        opened, accepted = len(self.opened), self.proxy.accepted
        memory_id = uuid.UUID(self.api.ok_remember(content=content)["id"])
        return memory_id, self.sent[-1], self.opened[opened:], self.proxy.accepted - accepted


def test_writes_succeed_fast_while_the_broker_is_away_and_the_sweep_archives_each_once(
    tenancy: Tenancy, celery_worker: CeleryWorker, via_proxy: BrokerProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writes answer whatever the broker does (``ok_remember`` checks each): every publish is
    tried with the request's socket timeouts and at most one retry, and none once the breaker is
    open. Behaviour, not wall time (speed is the benchmarks')."""
    api = _Watched(Api(tenancy.alice.key), via_proxy, monkeypatch)
    first, _, _, _ = api.write("Backups run nightly at 02:00 UTC.")
    wait_for(lambda: _archived(first), 10, 0.05, "a write through the proxy to be archived")
    up = api.write("Backups are encrypted with age before upload.")
    assert up[1] is True

    via_proxy.refuse()  # Redis "stopped": connection refused
    refused = []
    for n in range(3):
        tasks.publish_breaker.reset()  # every write's own attempt, not the breaker
        refused.append(api.write(f"Backups run nightly at 0{n + 3}:00 UTC and are kept for 14 days."))
    via_proxy.hang()  # Redis hung or partitioned: accepts, never answers
    hung = []
    for n in range(3):
        tasks.publish_breaker.reset()
        hung.append(api.write(f"Backups are copied to S3 bucket backups-{n} every night."))
    tripped = [api.write("Backups are verified by a restore test every Monday.")]

    attempts = 1 + int(tasks.PUBLISH_RETRY_POLICY["max_retries"])
    for _, sent, opened, accepted in [*refused, *hung]:
        assert sent is False
        assert opened, "the publish was not tried"
        for options in opened:  # every socket operation against the broker is bounded
            assert options["socket_connect_timeout"] == options["socket_timeout"] == tasks.PUBLISH_TIMEOUT
        assert accepted <= attempts
    assert all(accepted >= 1 for _, _, _, accepted in hung), "the hung broker was asked"
    assert tripped[0][1:] == (False, [], 0), "with the breaker open the broker is not asked at all"
    assert tasks.PUBLISH_TIMEOUT <= 0.5
    assert attempts <= 2
    pending = [memory_id for memory_id, _, _, _ in [*refused, *hung, *tripped]]
    time.sleep(1.0)
    assert Memory.objects.filter(id__in=pending, archived_at__isnull=True).count() == len(pending)

    via_proxy.up()  # the broker is back: the beat sweep (run by the worker) re-sends the outbox
    tasks.sweep_unarchived.delay(min_age_seconds=0)
    wait_for(lambda: _archived(*pending), 20, 0.1, "every pending record archived by the sweep")
    assert _reported(celery_worker, *pending) == {str(memory_id): ["archived"] for memory_id in pending}
    assert tasks.sweep_unarchived(min_age_seconds=0) == 0
    edges = MemoryRelation.objects.filter(from_memory_id__in=pending)
    assert edges.count() == len(set(edges.values_list("from_memory_id", "to_memory_id", "relation")))


def test_worker_killed_mid_task_is_redelivered_and_archives_once(
    tenancy: Tenancy, celery_worker: CeleryWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = Api(tenancy.alice.key)
    older = api.ok_remember(content="The staging database runs PostgreSQL 15.")["id"]
    wait_for(lambda: _archived(older), 10, 0.05, "the older record archived")
    with monkeypatch.context() as patched:
        patched.setattr(tasks, "enqueue_archive", lambda memory_id: False)  # no message: we send it below
        newer = api.ok_remember(content="The staging database runs PostgreSQL 16.")["id"]

    with transaction.atomic():
        # Hold the record's row lock: the worker's task blocks inside its transaction, mid-task.
        Memory.objects.select_for_update().get(id=newer)
        tasks.archive_memory.delay(newer)
        wait_for(_a_backend_waits_on_a_lock, 10, 0.05, "the task to block on the record's lock")
        celery_worker.kill()
    assert Memory.objects.get(id=newer).archived_at is None

    celery_worker.start()  # the unacknowledged message comes back after the visibility timeout
    wait_for(lambda: _archived(newer), 30, 0.1, "the redelivered task to archive the record")
    assert _reported(celery_worker, newer) == {newer: ["archived"]}
    edges = set(MemoryRelation.objects.filter(from_memory_id=newer).values_list("to_memory_id", "relation"))
    assert edges == {(uuid.UUID(older), "contradicts")}


def _a_backend_waits_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # the view is frozen per transaction otherwise
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        row = cursor.fetchone()
    return bool(row and row[0])
