"""A batch's vectors on a real Celery worker and a real Redis broker: keyword search has every
record when the call returns; the worker embeds them in batches, and dense search finds them then."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from accounts.keys import resolve_key
from billing.models import Plan
from billing.seeds import DEFAULT_PLANS
from memories import selectors, tasks
from memories.models import Memory
from tests import worker
from tests.conftest import Tenancy
from tests.memories.dense import dense_hits
from tests.memories.rest import Api
from tests.worker import CeleryWorker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
celery_worker = worker.celery_worker

RECORDS = 250  # three embedding messages (tasks.EMBED_BATCH = 100), shared by the worker's two processes


@pytest.fixture(autouse=True)
def _plans(transactional_db: None) -> Iterator[None]:
    if not Plan.objects.exists():
        Plan.objects.bulk_create([Plan(**row) for row in DEFAULT_PLANS])
    tasks.publish_breaker.reset()
    yield
    tasks.publish_breaker.reset()


def test_batch_records_are_embedded_by_the_worker_and_then_dense_findable(
    tenancy: Tenancy, celery_worker: CeleryWorker
) -> None:
    api = Api(tenancy.alice.key)
    records = [{"content": f"routine log line {i}: service zx{i:04d} restarted cleanly"} for i in range(RECORDS)]
    records[137] = {"content": "Le chat de la directrice dort toujours sur le serveur de production."}
    status, answer = api.call("POST", "/memories/batch", {"records": records})
    assert status == 200
    ids = [r["id"] for r in answer["results"]]
    # Keyword search: at once, whatever the worker has done.
    assert api.search(query="zx0042")["results"][0]["id"] == ids[42]
    wait_for(
        lambda: Memory.objects.filter(id__in=ids, embedding__isnull=False).count() == RECORDS,
        120,
        0.2,
        "every vector of the batch",
    )
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    qs = selectors.memory_queryset(principal=principal, workspace="default")
    assert qs is not None
    # A question in English shares no word with the French record: only its vector finds it.
    dense = [str(c.id) for c in dense_hits(qs, "the director's cat sleeps on the production server", 5)]
    assert dense[0] == ids[137]
    assert ids[137] in [
        r["id"] for r in api.search(query="the director's cat sleeps on the production server")["results"]
    ]
    # Each record is then archived once (the embedding task queues the archivist).
    wait_for(
        lambda: Memory.objects.filter(id__in=ids, archived_at__isnull=False).count() == RECORDS,
        180,
        0.5,
        "every record archived",
    )
    # Analysed exactly once; a second message (the sweep resends after 30 s on a slow machine) is
    # only ever a skip.
    outcomes = celery_worker.outcomes(ids[0])
    assert outcomes.count("archived") == 1
    assert set(outcomes) <= {"archived", "skipped: already archived"}
