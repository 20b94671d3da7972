"""The lexicon (``memories/guard/lexicon.py``): Hyperscan answers the rules' word questions
exactly as the pure-Python sets do, and no rule asks a question nobody declared (with Hyperscan
such a question would get a wrong "no")."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.guard import RULES, GuardRejection, screen_text
from memories.guard import lexicon as lexicon_module
from memories.guard.lexicon import LEXICON, Lexicon
from memories.guard.textviews import Views, find_all
from tests.memories.guard.test_rules import CASES

CORPORA = Path(__file__).resolve().parents[3] / "bench" / "guard"
_NAMES = ("secrets.jsonl", "heldout.jsonl", "ordinary.jsonl", "poisoning.jsonl", "financial.jsonl")
TEXTS = [json.loads(line)["text"] for n in _NAMES for line in (CORPORA / n).read_text("utf-8").splitlines()]
TEXTS += [t for positive, negative in CASES.values() for t in positive + negative]
ORDINARY = "\n\n".join(
    json.loads(line)["text"] for line in (CORPORA / "ordinary.jsonl").read_text("utf-8").splitlines()
)


needs_hyperscan = pytest.mark.skipif(lexicon_module.hyperscan is None, reason="Hyperscan is not installed")


def _outcome(text: str) -> tuple[object, ...]:
    """Every rule's spans on ``text``, and what ``screen_text`` makes of it."""
    views = Views(text)
    spans = tuple(tuple(rule.find(views)) for rule in RULES)
    try:
        result = screen_text(text)
        return spans, result.text, result.redactions
    except GuardRejection as exc:
        return spans, "refused", exc.rule_id


def assert_same_both_ways(text: str) -> None:
    with LEXICON.accelerated_as(True):
        hyperscanned = _outcome(text)
    with LEXICON.accelerated_as(False):
        pure = _outcome(text)
    assert hyperscanned == pure, text[:300]


@needs_hyperscan
def test_both_ways_detect_the_same_on_the_corpora_and_cases() -> None:
    for text in TEXTS:
        assert_same_both_ways(text)
    assert_same_both_ways(ORDINARY)  # long: every gate open at once, many anchors


_DECLARED_WORDS = sorted(w.decode("latin-1") for w in LEXICON.declared()[0] if len(w) > 2)
MIXED = st.lists(
    st.one_of(
        st.sampled_from(_DECLARED_WORDS),
        st.sampled_from([" ", "\n", "_", "-", ":", "=", '"', "2", "é", "AKIA", "sk-", "ghp_", "\u200b", "x" * 24]),
        st.sampled_from(TEXTS).map(lambda t: t[:80]),
    ),
    max_size=24,
).map("".join)


@needs_hyperscan
@settings(max_examples=150, deadline=None)
@given(MIXED)
def test_both_ways_detect_the_same_on_generated_texts(text: str) -> None:
    assert_same_both_ways(text)


@needs_hyperscan
def test_threads_screening_at_once_get_what_one_thread_gets() -> None:
    """A served process screens writes on several threads; Hyperscan's default scratch space is
    one per database, and two scans sharing it fail (``ScratchInUseError``)."""
    texts = [*TEXTS, ORDINARY] * 2
    with LEXICON.accelerated_as(True):
        alone = [_outcome(text) for text in texts]
        with ThreadPoolExecutor(max_workers=8) as pool:
            together = list(pool.map(_outcome, texts))
    assert together == alone


# --- every question is declared ---------------------------------------------------------------


class _AskedSet(frozenset[bytes]):
    """A frozenset that notes every item it is asked about (``in``, ``isdisjoint``)."""

    asked: set[bytes]

    def __contains__(self, item: object) -> bool:
        self.asked.add(item)  # type: ignore[arg-type]
        return super().__contains__(item)

    def isdisjoint(self, other: Iterable[object]) -> bool:
        items = list(other)
        self.asked.update(items)  # type: ignore[arg-type]
        return super().isdisjoint(items)


class _AskedBytes(bytes):
    asked: set[bytes]

    def __contains__(self, item: object) -> bool:
        self.asked.add(item)  # type: ignore[arg-type]
        return super().__contains__(item)  # type: ignore[operator]


def _recording(name: str, asked: set[bytes], wrap: Callable[[Any], object]) -> cached_property[object]:
    original = Views.__dict__[name].func

    def compute(views: Views) -> object:
        value = wrap(original(views))
        value.asked = asked  # type: ignore[attr-defined]
        return value

    prop: cached_property[object] = cached_property(compute)
    prop.__set_name__(Views, name)
    return prop


def test_no_rule_asks_an_undeclared_word_prefix_or_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every rule over the corpora with the pure-Python sets, noting what each gate asks of
    ``words``, ``prefixes`` and ``vocab``: all of it must be declared.  (A gate written as
    ``frozenset.isdisjoint(views.words)`` is not seen here; its frozenset comes from
    ``LEXICON.words`` by convention.)"""
    asked: dict[str, set[bytes]] = {"words": set(), "prefixes": set(), "vocab": set()}
    monkeypatch.setattr(Views, "words", _recording("words", asked["words"], _AskedSet))
    monkeypatch.setattr(Views, "prefixes", _recording("prefixes", asked["prefixes"], _AskedSet))
    monkeypatch.setattr(Views, "vocab", _recording("vocab", asked["vocab"], _AskedBytes))
    with LEXICON.accelerated_as(False):
        for text in [*TEXTS, ORDINARY]:
            _outcome(text)
    words, prefixes, parts = LEXICON.declared()
    assert asked["words"], "the recording saw no question: the test is broken"
    assert asked["vocab"], "the recording saw no question: the test is broken"
    assert asked["words"] <= words, sorted(asked["words"] - words)
    assert asked["prefixes"] <= prefixes, sorted(asked["prefixes"] - prefixes)
    assert asked["vocab"] <= parts, sorted(asked["vocab"] - parts)


# --- the lexicon's own contract ---------------------------------------------------------------


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64", "arm64"), reason="no Hyperscan wheel here")
def test_hyperscan_is_used_where_its_wheel_exists() -> None:
    """requirements.txt installs it on these machines; losing it would only show as lost speed."""
    assert lexicon_module.hyperscan is not None
    assert LEXICON.accelerated == (os.environ.get("MMW_GUARD_HYPERSCAN", "1") != "0")


def _padded(text: bytes) -> bytes:
    return b" " + text + b" "


@pytest.fixture
def lexicon() -> Lexicon:
    if lexicon_module.hyperscan is None:
        pytest.skip("Hyperscan is not installed")
    return Lexicon()


def test_words_prefixes_and_parts_answer_like_the_sets(lexicon: Lexicon) -> None:
    lexicon.words(b"key", b"token", b"ab")
    lexicon.prefixes(b"ignor", b"sk", b"zzzzz")
    lexicon.parts(b" aa", b"secret", b"ret ", b" pwd ")
    hits = lexicon.scan_words(_padded(b"the api key  ignored sk aabb topsecret pwdx"))
    assert hits.words == {b"key"}
    assert hits.prefixes == {b"ignor", b"sk"}  # "sk" is a whole word; "ignored" starts with "ignor"
    assert set(hits.vocab.split(b"\n")) == {b" aa", b"secret", b"ret "}
    assert lexicon.scan_words(_padded(b"skx")).prefixes == frozenset()  # a short prefix is the whole word


def test_anchor_offsets_are_every_occurrence_as_find_all_gives_them(lexicon: Lexicon) -> None:
    lexicon.anchors(b" aa ", b" ignor", b" zz ")
    letters = b" aa aa ignore  ignored aa "
    found = lexicon.scan_anchors(letters)
    assert found == {b" aa ": find_all(letters, b" aa "), b" ignor": find_all(letters, b" ignor")}
    assert found[b" aa "] == (0, 3, 22)  # overlapping occurrences included


def test_a_word_declared_after_a_scan_is_found_by_the_next(lexicon: Lexicon) -> None:
    lexicon.words(b"alpha")
    assert lexicon.scan_words(_padded(b"alpha beta")).words == {b"alpha"}
    lexicon.words(b"beta")
    assert lexicon.scan_words(_padded(b"alpha beta")).words == {b"alpha", b"beta"}


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("words", b"two words"),
        ("words", b"api_key"),
        ("prefixes", b"toolong"),
        ("parts", b"a b"),
        ("anchors", b" 4ny "),
    ],
)
def test_a_question_the_scan_could_answer_wrongly_is_refused(kind: str, value: bytes) -> None:
    with pytest.raises(ValueError, match=r"lexicon|five bytes"):
        getattr(Lexicon(), kind)(value)
