"""Webhook deliveries run by the real Celery worker (two processes, as ``serve`` runs it) on the
real broker: while one account's receiver drips its answers and deliveries for it keep being
asked for, another account's test event still leaves at once, and the slow account's deliveries
go one at a time, each cut at the deadline (docs/reference/webhooks.md).

The worker reads its settings from the environment at start: this module's worker is started
with the allowances that let it reach the local receivers and a 1.5 s deadline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from tests.conftest import Tenancy
from tests.webhooks.drip import DripServer
from tests.webhooks.test_webhooks import Receiver
from tests.worker import CeleryWorker, wait_for
from webhooks import services as webhooks
from webhooks import tasks
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
TASK = "webhooks.tasks.deliver_webhooks"
DEADLINE = 1.5
WORKER_ENV = {
    "MMW_WEBHOOK_ALLOW_HTTP": "1",
    "MMW_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
    "MMW_WEBHOOK_TIMEOUT": str(DEADLINE),
}


@pytest.fixture(scope="module")
def celery_worker(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorker]:
    redis.Redis.from_url(str(django_settings.CELERY_BROKER_URL)).flushdb()
    worker = CeleryWorker(tmp_path_factory.mktemp("celery"), str(connection.settings_dict["NAME"]))
    with pytest.MonkeyPatch.context() as env:
        for name, value in WORKER_ENV.items():
            env.setenv(name, value)
        worker.start()
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def receivers(settings: Any) -> Iterator[tuple[DripServer, Receiver]]:
    settings.MMW_WEBHOOK_ALLOW_HTTP = True
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    slow, quick = DripServer(interval=0.1), Receiver()
    yield slow, quick
    slow.close()
    quick.close()


def hook(actor: Any, url: str) -> WebhookEndpoint:
    return webhooks.endpoint_create(
        project=actor.project, actor=actor.user, url=url, events=["memory.created"], include_content=False
    )


def send_tests(actor: Any, endpoint: WebhookEndpoint, count: int) -> None:
    for _ in range(count):
        webhooks.endpoint_send_test(project=actor.project, actor=actor.user, endpoint_id=endpoint.pk)


def test_one_accounts_dripping_receiver_does_not_hold_another_accounts_test_event(
    tenancy: Tenancy, receivers: tuple[DripServer, Receiver], celery_worker: CeleryWorker
) -> None:
    slow, quick = receivers
    alices = hook(tenancy.alice, slow.url)
    send_tests(tenancy.alice, alices, 3)
    tasks.deliver_webhooks.delay()
    wait_for(lambda: slow.connections >= 1, 15, what="the worker to reach Alice's receiver")
    send_tests(tenancy.alice, alices, 3)  # more work for the slow account, and a second run asking for it
    before = len(celery_worker.succeeded(TASK))
    tasks.deliver_webhooks.delay()
    wait_for(lambda: len(celery_worker.succeeded(TASK)) > before or slow.connections >= 2, 10, what="the second run")

    charlies = hook(tenancy.charlie, quick.url)
    send_tests(tenancy.charlie, charlies, 1)
    tasks.deliver_webhooks.delay()  # what the dashboard's Send test event button queues
    wait_for(lambda: quick.arrived, 10, 0.02, "Charlie's test event")

    alice_deliveries = WebhookDelivery.objects.filter(endpoint=alices)
    wait_for(lambda: all(d.attempts for d in alice_deliveries.all()), 30, what="Alice's six deliveries")
    errors = set(alice_deliveries.values_list("last_error", flat=True))
    assert errors == {f"timed out: the answer took longer than {DEADLINE:g} s"}
    gaps = [b - a for a, b in zip(slow.started, slow.started[1:], strict=False)]
    assert len(slow.started) == 6
    # Charlie's event was not held behind Alice's queue: it arrived before her last delivery began
    # (an order of events, not a duration).
    assert quick.arrived[0] < slow.started[-1]
    assert min(gaps) > DEADLINE - 0.2  # one at a time: never two of Alice's deliveries in flight
    assert WebhookDelivery.objects.get(endpoint=charlies).status == "succeeded"
