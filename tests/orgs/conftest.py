"""Fixtures for the organisation tests.

The visibility tests write and search hundreds of records; they use the dependency-free
``ngram`` embedding backend so that the vector half of hybrid search still runs (and is still
filtered by ``visible_to``) without loading a neural model for every write.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}
