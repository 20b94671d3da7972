"""The guard's gating and pre-pass skip work, never a detection.

- Every rule still catches each of its own positive cases (test_rules.CASES) wherever the case
  stands in a long text: alone, amid neutral prose that opens no other gate (the pre-pass then
  finds few anchor words and scans for each), and amid the bench's ordinary notes (many gates
  open: one automaton pass).  Both ways of finding the anchor words are forced in turn, so a
  rule wrongly gated out, or an anchor missed by either search, fails here.
- The same with Hyperscan answering the gates and finding the anchors (``lexicon``), and with
  the pure-Python sets and scans a machine without its wheel uses.
- The anchor offsets equal the regex scan the phrase rules made before (``_Anchor.finder``),
  and the line bounds of ``cli_credentials`` equal the newline-list bisection they replaced, on
  the corpora and on generated texts.
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.guard import RULES, GuardRejection, lexicon, screen_text, textviews
from memories.guard.lexicon import LEXICON
from memories.guard.phrases import _ALL_SETS, LETTER, Phrase, PhraseSet, Req, _Word
from memories.guard.secrets import _lines
from memories.guard.textviews import Views
from tests.memories.guard.test_rules import CASES

CORPORA = Path(__file__).resolve().parents[3] / "bench" / "guard"
_ORDINARY_ROWS = [json.loads(line)["text"] for line in (CORPORA / "ordinary.jsonl").read_text("utf-8").splitlines()]
ORDINARY = "\n\n".join(_ORDINARY_ROWS)[:4_000]
NEUTRAL = "The weather report for Tuesday mentions light rain over the hills near the lake.\n" * 30
FILLERS = {"alone": "", "neutral": NEUTRAL, "ordinary": ORDINARY}
# (Hyperscan on, BATCH_MIN): with Hyperscan the batch size plays no part
WAYS = {"one scan per word": (False, 10**9), "automaton": (False, 0)}
if lexicon.hyperscan is not None:  # no wheel for Linux on ARM
    WAYS["hyperscan"] = (True, 10**9)
POSITIVE = [(rule_id, i, text) for rule_id, (positive, _) in CASES.items() for i, text in enumerate(positive)]
RULE = {rule.id: rule for rule in RULES}
ANCHORS = {(a.word.literal, a.word.stem): a for phrases in _ALL_SETS for a in phrases.anchors}


def _embedded(text: str, filler: str) -> tuple[str, int]:
    """``text`` in the middle of ``filler`` (its own paragraph) and where it starts."""
    if not filler:
        return text, 0
    half = len(filler) // 2
    before = filler[:half].rsplit("\n", 1)[0] + "\n\n"
    return before + text + "\n\n" + filler[half:], len(before)


@pytest.mark.parametrize("way", WAYS.values(), ids=list(WAYS))
@pytest.mark.parametrize("filler", FILLERS, ids=list(FILLERS))
@pytest.mark.parametrize(("rule_id", "i", "text"), POSITIVE, ids=[f"{r}-{i}" for r, i, _ in POSITIVE])
def test_every_rule_catches_its_positive_cases_wherever_they_stand(
    rule_id: str, i: int, text: str, filler: str, way: tuple[bool, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    hyperscan, batch = way
    monkeypatch.setattr(LEXICON, "accelerated", hyperscan)
    monkeypatch.setattr(textviews, "BATCH_MIN", batch)
    monkeypatch.setattr(textviews, "BATCH_MIN_CHARS", batch)
    whole, start = _embedded(text, FILLERS[filler])
    spans = list(RULE[rule_id].find(Views(whole)))
    assert spans, f"{rule_id} missed its case {i} ({filler}): {text!r}"
    if RULE[rule_id].kind == "redact":
        assert any(start <= s and e <= start + len(text) for s, e in spans), (rule_id, spans)
        assert text not in screen_text(whole).text
    else:
        with pytest.raises(GuardRejection):
            screen_text(whole)


def reference_offsets(views: Views, word: bytes, stem: bool) -> tuple[int, ...]:
    """The anchor scan before the pre-pass: the anchor's literal-first regex over the fold view."""
    return tuple(m.start() for m in ANCHORS[(word, stem)].finder.finditer(views.fold))


def assert_anchor_offsets_as_before(text: str) -> None:
    scanned, batched, hyperscanned = Views(text), Views(text), Views(text)
    with LEXICON.accelerated_as(False), pytest.MonkeyPatch.context() as patch:
        patch.setattr(textviews, "BATCH_MIN_CHARS", 0)
        batched.prefetch_word_positions(ANCHORS)  # every anchor word: the automaton
        scanned_offsets = {(w, s): scanned.word_positions(w, stem=s) for w, s in ANCHORS}
    assert len(ANCHORS) >= textviews.BATCH_MIN
    with LEXICON.accelerated_as(lexicon.hyperscan is not None):
        hyperscanned_offsets = {(w, s): hyperscanned.word_positions(w, stem=s) for w, s in ANCHORS}
    for word, stem in ANCHORS:
        expected = reference_offsets(scanned, word, stem)
        assert scanned_offsets[word, stem] == expected, (word, stem, text[:200])
        assert batched.word_positions(word, stem=stem) == expected, (word, stem, text[:200])
        assert hyperscanned_offsets[word, stem] == expected, (word, stem, text[:200])


def _corpus_texts() -> list[str]:
    names = ("secrets.jsonl", "heldout.jsonl", "ordinary.jsonl", "poisoning.jsonl")
    rows = [json.loads(line)["text"] for n in names for line in (CORPORA / n).read_text("utf-8").splitlines()]
    return rows + [t for pos, neg in CASES.values() for t in pos + neg]


def test_anchor_offsets_as_before_on_the_corpora_and_cases() -> None:
    for text in _corpus_texts():
        assert_anchor_offsets_as_before(text)
    assert_anchor_offsets_as_before("\n\n".join(_ORDINARY_ROWS))


_WORDS = sorted({(w.decode("latin-1"), stem) for w, stem in ANCHORS})
WORD_TEXTS = st.lists(
    st.one_of(
        st.sampled_from([w for w, _ in _WORDS]),
        st.sampled_from([" ", "\n", "2", "9", "x", "é", "И", "_", "-", "'", "0", "ignore", "instruction", "\u200b"]),
        st.text(alphabet="abcdeinorstuy 269", max_size=6),
    ),
    max_size=20,
).map("".join)


@settings(max_examples=120, deadline=None)
@given(WORD_TEXTS)
def test_anchor_offsets_as_before_on_generated_texts(text: str) -> None:
    assert_anchor_offsets_as_before(text)


def reference_lines(views: Views, needle: bytes) -> list[tuple[int, int, list[int]]]:
    """``secrets._lines`` as it was: bisection in the list of every newline offset."""
    newlines = [m.start() for m in re.finditer(b"\n", views.lower)]
    lines: dict[int, tuple[int, int, list[int]]] = {}
    for at in views.positions(needle):
        i = bisect.bisect_left(newlines, at)
        start = newlines[i - 1] + 1 if i > 0 else 0
        end = newlines[i] if i < len(newlines) else len(views.text)
        lines.setdefault(start, (start, end, []))[2].append(at)
    return list(lines.values())


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(["mysql", "-u ", "--user", "\n", "a", " ", "curl", "-p"]), max_size=30).map("".join))
def test_cli_line_bounds_as_before(text: str) -> None:
    views = Views(text)
    for needle in (b"mysql", b"-u ", b"--user"):
        assert _lines(views, needle) == reference_lines(views, needle), text


ALTS = sorted(
    {alt for phrases in _ALL_SETS for phrase in phrases.phrases for el in phrase.elements for alt in el.alts},
    key=lambda alt: [w.literal for w in alt.words],
)
ALT_PATTERNS = [
    (re.compile(b"(?<!" + LETTER + b")" + alt.spaced()), re.compile(alt.spaced_literal_first())) for alt in ALTS
]
ALT_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(sorted({w.literal.decode("latin-1") for alt in ALTS for w in alt.words})),
        st.sampled_from([" ", "  ", ", ", "\n", "*", "-", "2", "x", "é", "'"]),
    ),
    max_size=16,
).map("".join)


def assert_literal_first_as_before(fold: bytes) -> None:
    for before, now in ALT_PATTERNS:
        assert [m.span() for m in now.finditer(fold)] == [m.span() for m in before.finditer(fold)], now.pattern


@settings(max_examples=120, deadline=None)
@given(ALT_TEXTS)
def test_window_heads_find_what_the_lookbehind_first_patterns_found(text: str) -> None:
    """The look-back windows' head patterns put the literal first; they match where the
    ``(?<!letter)`` + words patterns they replaced matched."""
    assert_literal_first_as_before(text.encode("latin-1"))


def test_window_heads_as_before_on_the_poisoning_corpus() -> None:
    for line in (CORPORA / "poisoning.jsonl").read_text("utf-8").splitlines():
        assert_literal_first_as_before(Views(json.loads(line)["text"]).fold)


def assert_tries_as_combined(text: str, sets: list[PhraseSet] = _ALL_SETS) -> None:
    """Where an anchor word (or a window head) stands, the phrases kept for it match exactly
    what the rule's whole alternation matches."""
    views = Views(text)
    fold = views.fold
    for phrases in sets:
        for anchor in phrases.anchors:
            offsets = list(views.word_positions(anchor.word.literal, stem=anchor.word.stem))
            groups: list[tuple[tuple[_Word, ...], list[int]]] = [((anchor.word,), offsets)]
            if anchor.heads is not None:
                heads = [m.start() for m in anchor.heads.head.finditer(fold)]
                groups.append((anchor.heads.first, heads))
            for words, starts in groups:
                kept = phrases.tries(words)
                for at in starts:
                    expected = phrases.combined.match(fold, at)
                    found = kept.match(fold, at)
                    assert (found and found.span()) == (expected and expected.span()), (words, at, text[:200])


def test_kept_phrases_match_as_the_whole_alternation_on_the_corpora_and_cases() -> None:
    for text in _corpus_texts():
        assert_tries_as_combined(text)


PHRASE_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(sorted({w.literal.decode("latin-1") for alt in ALTS for w in alt.words})),
        st.sampled_from([" ", "  ", ", ", "\n", "-", "2", "é", ":", ".", "https://x.io"]),
    ),
    max_size=14,
).map("".join)


@settings(max_examples=120, deadline=None)
@given(PHRASE_TEXTS)
def test_kept_phrases_match_as_the_whole_alternation_on_generated_texts(text: str) -> None:
    assert_tries_as_combined(text)


def test_a_phrase_is_kept_wherever_its_first_word_can_stand() -> None:
    """The stem cases, which today's tables do not exercise: a stem first word ("ignor*") where a
    longer whole word starts ("ignore", "ignorance") and the other way round."""
    registered = list(_ALL_SETS)
    try:
        rule = PhraseSet(
            Phrase.of(Req("ignore"), Req("all")),
            Phrase.of(Req("ignor*"), Req("rules")),
            Phrase.of(Req("ignorance"), Req("rules")),
            Phrase.of(Req("ignora*"), Req("rules")),
        )
    finally:
        _ALL_SETS[:] = registered  # not a rule of the guard: keep it out of the pre-pass
    for text in ("please ignore rules", "ignorance rules", "ignore all", "ignorant rules, ignore all"):
        assert_tries_as_combined(text, [rule])
    assert list(rule.find(Views("please ignore rules"))) == [(7, 19)]
