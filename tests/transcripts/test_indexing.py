"""How turns are indexed: the previous turn's words as context (kept whole when turns arrive out
of order), and vectors filled in the background in batches, after which dense search finds turns."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Tenancy
from tests.memories.rest import Api
from tests.transcripts.test_sessions import CONVERSATION
from transcripts import indexing, tasks
from transcripts.models import Session, Turn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}


def post(api: Api, turns: list[dict[str, Any]]) -> None:
    status, answer = api.call("POST", "/sessions/codex/s/turns", {"turns": turns})
    assert status == 200, answer


def test_a_turns_context_is_its_previous_turn_even_when_it_arrives_later(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.call("PUT", "/sessions/codex/s", {})
    post(api, [CONVERSATION[0], CONVERSATION[2]])
    tasks.embed_session_turns(str(Session.objects.get().pk))
    assert Turn.objects.filter(embedding_model__isnull=True).count() == 0
    post(api, [CONVERSATION[1]])  # the gap is filled: turn 2's context changes
    contexts = {p: str(d) for p, d in Turn.objects.values_list("position", "context_document")}
    assert contexts[0] == "None"
    assert "migrat" in contexts[1]  # turn 0's words
    assert "need" in contexts[2]  # now turn 1's words ("No, that's not needed."), not turn 0's
    assert "migrat" not in contexts[2]
    # Turns whose context changed lose their vector, to be embedded again with the new neighbour.
    assert set(Turn.objects.filter(embedding_model__isnull=True).values_list("position", flat=True)) == {1, 2}


def test_the_background_task_embeds_in_batches_and_dense_search_then_finds_turns(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.call("PUT", "/sessions/codex/s", {})
    post(api, CONVERSATION)
    session_id = Session.objects.get().pk
    assert indexing.embed_pending(session_id, batch=4) == 6
    assert indexing.embed_pending(session_id, batch=4) == 0  # idempotent
    assert Turn.objects.filter(embedding__isnull=True).count() == 0
    # A query sharing no whole word with any turn is found by its vector alone.
    status, answer = api.call("POST", "/sessions/search", {"query": "stagin systemd-unit", "limit": 1, "context": 0})
    assert status == 200
    assert answer["results"][0]["turn"]["position"] == 5


def test_each_turn_gets_the_vector_of_its_own_text(tenancy: Tenancy) -> None:
    """The vectors are written in one statement keyed by the turns' ids: none lands on another."""
    from memories import vectors

    api = Api(tenancy.alice.key)
    api.call("PUT", "/sessions/codex/s", {})
    post(api, CONVERSATION)
    assert indexing.embed_pending(Session.objects.get().pk, batch=4) == 6
    backend = vectors.current()
    rows = list(Turn.objects.order_by("position").values_list("content", "embedding", "embedding_model"))
    previous = None
    for content, embedding, model_id in rows:
        assert model_id == backend.model_id
        expected = backend.embed_documents([indexing.embedding_text(content, previous)])[0]
        assert embedding is not None
        assert list(embedding) == pytest.approx(expected, abs=1e-6)
        previous = content


def test_the_embedding_text_carries_the_previous_turns_tail() -> None:
    assert indexing.embedding_text("No.", "Should we retry?", contextual=True) == "Should we retry?\nNo."
    assert indexing.embedding_text("No.", "Should we retry?", contextual=False) == "No."
    assert indexing.embedding_text("No.", None, contextual=True) == "No."
