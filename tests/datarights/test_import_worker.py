"""A member's large import on a real Celery worker and broker: queued by the request, run on the
``imports`` queue, followed through ``GET /api/v1/import/<id>``, its records found afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from accounts import services as account_services
from billing.models import Plan
from billing.seeds import DEFAULT_PLANS
from memories import tasks
from memories.models import Memory
from tests import worker
from tests.conftest import Tenancy
from tests.datarights.test_import_door import file_of, memory
from tests.worker import CeleryWorker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
celery_worker = worker.celery_worker


@pytest.fixture(autouse=True)
def _plans(transactional_db: None) -> Iterator[None]:
    if not Plan.objects.exists():
        Plan.objects.bulk_create([Plan(**row) for row in DEFAULT_PLANS])
    tasks.publish_breaker.reset()
    yield
    tasks.publish_breaker.reset()


def test_a_queued_import_runs_on_the_imports_worker_and_is_followed_to_its_end(
    tenancy: Tenancy, celery_worker: CeleryWorker
) -> None:
    project = account_services.project_create(account=tenancy.alice.account, actor=tenancy.alice.user, name="r")
    key = account_services.api_key_create(user=tenancy.alice.user, project=project, name="k", device_label="d").raw
    records = [memory(content=f"imported fact number {i} about service zq{i:04d}") for i in range(300)]
    client = Client()
    answer = client.post("/api/v1/import", data=file_of(*records), content_type="application/gzip",
                         HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_PREFER="respond-async")  # fmt: skip
    assert answer.status_code == 202, answer.content
    url = answer.headers["Location"]

    def status() -> str:
        return str(client.get(url, HTTP_AUTHORIZATION=f"Bearer {key}").json()["import"]["status"])

    wait_for(lambda: status() in ("succeeded", "failed"), 120, 0.3, "the import job to finish")
    shown = client.get(url, HTTP_AUTHORIZATION=f"Bearer {key}").json()["import"]
    assert shown["status"] == "succeeded", shown
    assert shown["report"]["created"]["memory"] == 300
    assert shown["progress"]["lines"] == 303
    assert Memory.objects.filter(project=project).count() == 300
    wait_for(
        lambda: Memory.objects.filter(project=project, embedding__isnull=False).count() == 300,
        120,
        0.3,
        "the imported records' vectors",
    )
