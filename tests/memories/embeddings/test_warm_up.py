"""The web process warms the embedding model up at start (mmw/asgi.py): it must load the
configured backend, and a failing model must never raise out of the background thread."""

from __future__ import annotations

from typing import Any

import pytest

from memories import vectors
from memories.embeddings import EmbeddingError


class Recorder:
    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.calls: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        if self.fail:
            raise EmbeddingError("model files missing")
        return [1.0]


@pytest.mark.parametrize("fail", [False, True])
def test_warm_up_embeds_once_and_never_raises(monkeypatch: pytest.MonkeyPatch, fail: bool, caplog: Any) -> None:
    backend = Recorder(fail)
    monkeypatch.setattr(vectors, "current", lambda: backend)
    vectors.warm_up()
    assert backend.calls == ["warm up"]
    assert ("warming up the embedding model failed" in caplog.text) is fail
