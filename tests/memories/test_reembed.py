"""``manage.py reembed`` (a model change): every live record moves to the target model's vectors,
one ``UPDATE`` per batch, resumable, forgotten records left alone."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.embeddings import get_backend
from memories.models import Memory
from memories.vector_index import index_name
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db(transaction=True)  # the command ends with CREATE INDEX


def test_reembed_moves_every_live_record_one_statement_per_batch(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    for i in range(5):
        api.remember(content=f"deploy note number {i} about the staging cluster", workspace="w1")
    Memory.objects.update(embedding=None, embedding_model=None)
    gone = Memory.objects.order_by("id").first()
    assert gone is not None
    Memory.objects.filter(pk=gone.pk).update(forgotten_at=timezone.now())
    target = get_backend("ngram")
    try:
        with CaptureQueriesContext(connection) as captured:
            call_command("reembed", backend="ngram", batch=2, stdout=io.StringIO(), stderr=io.StringIO())
    finally:  # the command ends by indexing the model's vectors: not left for other tests
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {index_name(target.model_id)}")
    updates = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("UPDATE") and "embedding" in q["sql"]]
    assert len(updates) == 2, updates  # 4 live records in batches of 2
    live = Memory.objects.filter(forgotten_at__isnull=True).order_by("id")
    assert set(live.values_list("embedding_model", flat=True)) == {target.model_id}
    for record in live:
        (expected,) = target.embed_documents([record.content])
        assert list(record.embedding) == pytest.approx(expected, abs=1e-6)
    assert Memory.objects.get(pk=gone.pk).embedding_model is None  # a forgotten record is not moved
