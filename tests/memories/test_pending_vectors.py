"""Saying when a memory is findable by meaning (issue #37): the batch and upload answers count what
they queued for vectors, search / recall_context / search_sessions carry ``pending_vectors`` for the
scope they searched, and list_workspaces (and the dashboard) show each workspace's records, and the
project's readable turns, still waiting. Counted through the rule of who reads what, up to
``PENDING_COUNT_MAX``. (Both surfaces over real HTTP: test_pending_vectors_live.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memories import selectors, vectors
from memories.models import Memory
from tests.conftest import Tenancy
from tests.memories.rest import Api
from tests.transcripts.test_sessions import CONVERSATION
from transcripts import indexing
from transcripts.models import Session, Turn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}


def ok(api: Api, method: str, path: str, body: Any = None) -> dict[str, Any]:
    status, answer = api.call(method, path, body)
    assert status == 200, answer
    assert isinstance(answer, dict)
    return answer


def listed(api: Api) -> tuple[dict[str, tuple[int, int]], int]:
    answer = ok(api, "GET", "/workspaces")
    return {w["name"]: (w["memory_count"], w["pending_vectors"]) for w in answer["workspaces"]}, answer["pending_turns"]


def test_records_queued_by_a_batch_are_counted_until_the_worker_embeds_them(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    alice.ok_remember(content="the release train leaves on Thursdays", workspace="w1")  # embedded in the request
    answer = ok(alice, "POST", "/memories/batch", {"records": [
        {"content": "staging runs Postgres 18", "workspace": "w1"},
        {"content": "   ", "workspace": "w1"},  # refused: not queued
        {"content": "the Thursday train is frozen in December", "workspace": "w1"},
        {"content": "ops keeps the on-call rota", "workspace": "w2"},
    ]})  # fmt: skip
    assert answer["queued_for_vectors"] == 3
    drafts = ok(bob, "POST", "/memories/batch", {"records": [{"content": "bob's Thursday draft", "workspace": "w1",
                                                              "visibility": "author"}]})  # fmt: skip
    assert drafts["queued_for_vectors"] == 1
    assert listed(alice) == ({"w1": (3, 2), "w2": (1, 1)}, 0)  # bob's draft is not alice's to count
    assert listed(bob) == ({"w1": (4, 3), "w2": (1, 1)}, 0)
    assert ok(alice, "POST", "/memories/search", {"query": "Thursday train", "workspace": "w1"})["pending_vectors"] == 2
    assert ok(bob, "POST", "/memories/search", {"query": "Thursday train", "workspace": "w1"})["pending_vectors"] == 3
    assert ok(alice, "POST", "/memories/search", {"query": "Thursday", "workspace": "*"})["pending_vectors"] == 3
    filtered = {"query": "Thursday", "workspace": "w1", "tags": ["none"]}
    assert ok(alice, "POST", "/memories/search", filtered)["pending_vectors"] == 0  # the scope searched
    assert ok(alice, "POST", "/recall-context", {"task": "the train", "workspace": "w1"})["pending_vectors"] == 2
    assert ok(alice, "POST", "/memories/search", {"query": "x", "workspace": "nowhere"})["pending_vectors"] == 0

    assert vectors.embed_records(list(Memory.objects.values_list("id", flat=True))) == 4
    assert listed(bob) == ({"w1": (4, 0), "w2": (1, 0)}, 0)
    assert ok(bob, "POST", "/memories/search", {"query": "Thursday train", "workspace": "w1"})["pending_vectors"] == 0


def test_a_replayed_batch_queues_nothing_and_forgotten_records_are_not_pending(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    records = [{"content": f"note {i}", "workspace": "w1", "idempotency_key": f"k{i}"} for i in range(3)]
    assert ok(alice, "POST", "/memories/batch", {"records": records})["queued_for_vectors"] == 3
    assert ok(alice, "POST", "/memories/batch", {"records": records})["queued_for_vectors"] == 0
    first = Memory.objects.order_by("created_at", "id").first()
    assert first is not None
    assert alice.forget(memory_id=str(first.id), workspace="w1")[0] == 200
    assert listed(alice)[0] == {"w1": (2, 2)}
    assert ok(alice, "POST", "/memories/search", {"query": "note", "workspace": "w1"})["pending_vectors"] == 2


def test_the_count_stops_at_its_bound(tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selectors, "PENDING_COUNT_MAX", 2)
    alice = Api(tenancy.alice.key)
    ok(alice, "POST", "/memories/batch", {"records": [{"content": f"note {i}", "workspace": "w1"} for i in range(5)]})
    assert ok(alice, "POST", "/memories/search", {"query": "note", "workspace": "w1"})["pending_vectors"] == 2
    assert listed(alice)[0] == {"w1": (5, 2)}


def test_turns_waiting_for_vectors_are_counted_per_upload_search_and_project(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    ok_put = alice.call("PUT", "/sessions/codex/s", {})
    assert ok_put[0] == 201, ok_put
    uploaded = ok(alice, "POST", "/sessions/codex/s/turns", {"turns": CONVERSATION[:4]})
    assert uploaded["queued_for_vectors"] == 4
    assert ok(alice, "POST", "/sessions/codex/s/turns", {"turns": CONVERSATION[:4]})["queued_for_vectors"] == 4
    search = {"query": "pgvector Dockerfile", "context": 0}
    assert ok(alice, "POST", "/sessions/search", search)["pending_vectors"] == 4
    assert listed(alice)[1] == 4
    assert ok(bob, "POST", "/sessions/search", search)["pending_vectors"] == 0  # not shared with him
    assert listed(bob)[1] == 0
    session = Session.objects.get()
    assert indexing.embed_pending(session.pk) == 4
    assert ok(alice, "POST", "/sessions/search", search)["pending_vectors"] == 0
    # A turn added later: it, and none of the embedded ones, waits.
    assert ok(alice, "POST", "/sessions/codex/s/turns", {"turns": CONVERSATION[4:5]})["queued_for_vectors"] == 1
    assert listed(alice)[1] == 1
    Turn.objects.filter(position=4).update(is_stub=True)  # a stub is never embedded, so never pending
    assert listed(alice)[1] == 0
    assert ok(alice, "POST", "/sessions/search", {**search, "client": "other"})["pending_vectors"] == 0


def test_the_dashboard_shows_records_awaiting_vectors(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    ok(alice, "POST", "/memories/batch", {"records": [{"content": f"note {i}", "workspace": "w1"} for i in range(3)]})
    client = Client()
    client.force_login(tenancy.alice.user)
    page = client.get(f"/p/{tenancy.alice.project.pk}/workspaces/").content.decode()
    assert 'data-testid="pending-w1">3<' in page
    browse = client.get(f"/p/{tenancy.alice.project.pk}/").content.decode()
    assert "w1 (3, 3 awaiting vectors)" in browse


def test_a_search_pays_one_bounded_statement_for_the_count(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    ok(alice, "POST", "/memories/batch", {"records": [{"content": f"note {i}", "workspace": "w1"} for i in range(3)]})
    with CaptureQueriesContext(connection) as captured:
        ok(alice, "POST", "/memories/search", {"query": "note", "workspace": "w1"})
    counts = [q["sql"] for q in captured.captured_queries if 'embedding_model" IS NULL' in q["sql"]]
    assert len(counts) == 1, counts
    assert "LIMIT" in counts[0]
