"""The zero-weight n-gram fallback."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from memories.embeddings import get_backend
from memories.embeddings.ngram import NgramBackend, ngram_features


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_ngram_vectors_are_unit_length_and_sized_dim() -> None:
    backend = NgramBackend(dim=128)
    for vector in backend.embed_documents(["", "a", "Hello, world!", "Привет " * 200]):
        assert len(vector) == 128
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-12)
    assert backend.model_id == "ngram-v1@128"
    assert get_backend("ngram").dim == 384


@pytest.mark.slow
def test_ngram_vectors_are_identical_in_another_process() -> None:
    text = "Deploys happen on Tuesdays — à 10 h, по вторникам"
    here = NgramBackend().embed_query(text)
    code = (
        "import json, sys; from memories.embeddings.ngram import NgramBackend; "
        "print(json.dumps(NgramBackend().embed_query(sys.argv[1])))"
    )
    # a different hash seed proves nothing depends on Python's salted hash()
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, check=True, env=env)
    assert json.loads(out.stdout) == here


def test_ngram_known_vector_is_stable_across_releases() -> None:
    # Stored vectors stay comparable only while this holds; change the scheme → bump the id.
    vector = NgramBackend(dim=384).embed_query("The user prefers dark mode.")
    nonzero = [(i, x) for i, x in enumerate(vector) if x][:4]
    assert [i for i, _ in nonzero] == [9, 10, 11, 15]
    assert [x for _, x in nonzero] == pytest.approx([0.119523, -0.119523, 0.119523, -0.119523], abs=1e-6)


def test_ngram_folds_case_accents_and_compatibility_forms() -> None:
    backend = NgramBackend()
    assert backend.embed_query("Café CRÈME") == backend.embed_query("cafe creme")
    assert backend.embed_query("ﬁle") == backend.embed_query("file")  # NFKC ligature
    assert ngram_features("ab") == [" ab", "ab ", " ab "]


def test_ngram_similar_strings_are_closer_than_unrelated_ones() -> None:
    backend = NgramBackend()
    base, typo, other = backend.embed_documents(
        [
            "The production database runs PostgreSQL 16",
            "the production databse runs Postgres 16",
            "Alice is allergic to peanuts",
        ]
    )
    assert cosine(base, typo) > 0.6
    assert cosine(base, other) < 0.25
    assert cosine(base, typo) > cosine(base, other) + 0.4


def test_ngram_rejects_a_bare_string_and_non_strings() -> None:
    backend = NgramBackend()
    with pytest.raises(TypeError):
        backend.embed_documents("not a list")
    with pytest.raises(TypeError):
        backend.embed_documents([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="dim must be an int >= 8"):
        NgramBackend(dim=0)
