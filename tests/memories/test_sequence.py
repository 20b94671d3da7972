"""Records that form a sequence (same source_id, with a position) are found by their
predecessor's words too ("contextual indexing", memories.sequence), whatever order they arrive
in, never through a record some reader may not see, and not after the predecessor is forgotten."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from memories import sequence, vectors
from memories.models import Memory
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

QUESTION = "Alice: should we pin pgvector to 0.8 in the Dockerfile?"
REPLY = "Bob: No, that's not necessary."


def turn(api: Api, content: str, position: int, **extra: Any) -> str:
    answer = api.ok_remember(content=content, source_id="chat-1", position=position, **extra)
    return str(answer["id"])


def context_of(memory_id: str) -> str | None:
    value = Memory.objects.filter(id=memory_id).values_list("context_document", flat=True).get()
    return None if value is None else str(value)


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="Carol: the staging database runs PostgreSQL 15")
    question = turn(api, QUESTION, 0)
    reply = turn(api, REPLY, 1)
    assert "pgvector" in (context_of(reply) or "")
    assert context_of(question) is None
    found = [r["id"] for r in api.search(query="pin pgvector Dockerfile")["results"]]
    assert found[:2] == [question, reply]


def test_a_record_arriving_before_its_predecessor_is_relinked_and_embedded_again(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    reply = turn(api, REPLY, 1)
    assert context_of(reply) is None
    plain_vector = Memory.objects.get(id=reply).embedding
    Memory.objects.filter(id=reply).update(archived_at=timezone.now())  # the archivist has seen it
    turn(api, QUESTION, 0)
    assert "pgvector" in (context_of(reply) or "")
    assert Memory.objects.get(id=reply).embedding is None  # the old vector knew no predecessor
    # unarchived too: if the embedding message is lost, the archivist's sweep embeds it again
    assert Memory.objects.get(id=reply).archived_at is None
    assert vectors.embed_records([reply]) == 1  # what the worker does after the commit
    contextual = Memory.objects.get(id=reply).embedding
    assert contextual is not None
    assert list(contextual) != list(plain_vector)
    expected = vectors.current().embed_documents([sequence.contextual_text(REPLY, QUESTION, 2000)])[0]
    assert list(contextual) == pytest.approx(expected, abs=1e-5)


def test_a_draft_never_lends_its_words_to_a_shared_record(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    turn(api, QUESTION, 0, visibility="author")
    reply = turn(api, REPLY, 1)
    assert context_of(reply) is None
    assert reply not in [r["id"] for r in Api(tenancy.bob.key).search(query="pin pgvector Dockerfile")["results"]]


def test_forgetting_a_turn_takes_its_words_out_of_the_next_one(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    question = turn(api, QUESTION, 0)
    reply = turn(api, REPLY, 1)
    code, _ = api.forget(memory_id=question)
    assert code == 200
    assert context_of(reply) is None
    assert reply not in [r["id"] for r in api.search(query="pin pgvector Dockerfile")["results"]]


def test_a_batch_links_its_own_records_in_one_call(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    records = [
        {"content": text, "source_id": "chat-2", "position": i}
        for i, text in enumerate([QUESTION, REPLY, "Alice: fine, leaving it unpinned."])
    ]
    code, answer = api.call("POST", "/memories/batch", {"records": records})
    assert code == 200, answer
    ids = [item["id"] for item in answer["results"]]
    assert context_of(ids[0]) is None
    assert "pgvector" in (context_of(ids[1]) or "")
    assert "necessary" in (context_of(ids[2]) or "")


def test_records_without_a_position_are_not_a_sequence(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content=QUESTION, source_id="chat-3")
    plain = api.ok_remember(content=REPLY, source_id="chat-3")["id"]
    assert context_of(plain) is None


def test_a_write_outside_a_sequence_costs_no_sequence_query(tenancy: Tenancy) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api = Api(tenancy.alice.key)
    api.ok_remember(content="warm-up")  # the workspace and the key's first-use writes
    with CaptureQueriesContext(connection) as run:
        api.ok_remember(content=REPLY, source_id="chat-4")
    sequence_sql = ("next_id", '"position" IS NOT NULL')
    assert not [q["sql"] for q in run.captured_queries if any(s in q["sql"] for s in sequence_sql)]
    with CaptureQueriesContext(connection) as run:
        turn(api, REPLY, 0)
    assert [q["sql"] for q in run.captured_queries if "next_id" in q["sql"]]
