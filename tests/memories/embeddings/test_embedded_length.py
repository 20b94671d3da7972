"""What a vector is computed from (issue #37): a record's or turn's first ``MAX_EMBEDDED_CHARS``
(500) characters — the model's CPU per text is what a memory waits for before it is found by
meaning, and the recall held at 500 (BENCHMARKS.md) — and a query's first ``MAX_QUERY_CHARS``
(2,000)."""

from __future__ import annotations

import pytest

from memories import sequence, vectors
from transcripts import indexing


class Recorder:
    model_id = "recorder@1"
    local = True

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += texts
        return [[1.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [1.0]


def test_a_document_is_embedded_from_its_first_500_characters_and_a_query_from_2000(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (vectors.MAX_EMBEDDED_CHARS, vectors.MAX_QUERY_CHARS) == (500, 2000)
    backend = Recorder()
    monkeypatch.setattr(vectors, "current", lambda: backend)
    long = "".join(f"word{i} " for i in range(1000))
    vectors.embed_for_write(long)
    assert backend.documents == [long[:500]]
    vectors.embed_query(long)
    assert backend.queries == [long[:2000]]


def test_a_turn_keeps_its_predecessors_tail_within_the_cut() -> None:
    previous, own = "p" * 1000, "o" * 1000
    text = indexing.embedding_text(own, previous, contextual=True)
    assert len(text) == 500
    assert text.startswith("p" * sequence.CONTEXT_CHARS + "\n")
