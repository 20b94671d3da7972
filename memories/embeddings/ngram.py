"""Zero-weight fallback backend: signed hashed character n-grams.

No model, no third-party dependency: it works wherever Python does, and its vectors are
identical across processes, machines and Python versions (blake2b, never ``hash()``, which
is salted per process). It captures spelling overlap, not meaning: "car" and "automobile"
are unrelated to it, and so are most translations.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

from mmw.text import strip_marks

from .base import check_texts

__all__ = ["NgramBackend", "ngram_features"]

# Bump when the feature extraction changes: it is part of ``model_id``, so vectors made by
# an older scheme are never compared with new ones.
_SCHEME = "ngram-v1"
_MIN_N = 3
_MAX_N = 5


def _normalise_text(text: str) -> str:
    """NFKC, case-folded, accents removed, whitespace collapsed, padded with one space."""
    folded = strip_marks(unicodedata.normalize("NFKC", text).casefold())
    return " " + " ".join(folded.split()) + " "


def ngram_features(text: str) -> list[str]:
    """The character 3- to 5-grams of the normalised ``text`` (with repeats).

    A text shorter than three characters after normalisation (e.g. the empty string)
    yields its padded self as its only feature, so every text has at least one feature.
    """
    padded = _normalise_text(text)
    grams = [padded[i : i + n] for n in range(_MIN_N, _MAX_N + 1) for i in range(len(padded) - n + 1)]
    return grams or [padded]


@lru_cache(maxsize=1 << 16)  # ~12 MB when full
def _hash64(gram: str) -> int:
    """Stable 64-bit hash of one feature."""
    digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8, person=b"mmw-ngram").digest()
    return int.from_bytes(digest, "little")


class NgramBackend:
    """Hashed character n-grams into ``dim`` buckets with a ±1 sign per feature.

    The sign (top bit of the hash) makes colliding features cancel on average instead of
    piling up, so the dot product of two vectors estimates their shared n-gram count.
    Cheap: ~0.1 ms per short text, so ``local`` is True.
    """

    local = True

    def __init__(self, dim: int = 384) -> None:
        if not isinstance(dim, int) or dim < 8:
            raise ValueError(f"ngram dim must be an int >= 8, got {dim!r}")
        self.dim = dim
        self.model_id = f"{_SCHEME}@{dim}"

    def __repr__(self) -> str:
        return f"NgramBackend(model_id={self.model_id!r})"

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for gram in ngram_features(text):
            h = _hash64(gram)
            vector[h % self.dim] += -1.0 if h >> 63 else 1.0
        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm == 0.0:
            # Every feature cancelled out (possible, very unlikely): fall back to the
            # bucket of the first feature so the contract (unit norm) still holds.
            vector[_hash64(ngram_features(text)[0]) % self.dim] = 1.0
            return vector
        return [x / norm for x in vector]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text; the same text always gives the same vector."""
        return [self._embed(text) for text in check_texts(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Same as a document: the n-gram space is symmetric."""
        return self._embed(check_texts([text])[0])
