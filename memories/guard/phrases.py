"""A tiny phrase language for the poisoning rules, compiled to linear-time byte regexes.

A phrase is a sequence of elements matched word by word over :attr:`Views.fold`:

- ``Req("ignore", "do not follow", "игнорир*")`` — one of these; ``*`` marks a stem (the word
  may continue: ``игнорир*`` matches игнорируй, игнорируйте…).  Literals are written in natural
  spelling and folded exactly like the text (case, accents, homoglyphs, leetspeak).
- ``Opt(...)`` — optionally one of these.
- ``Gap(n, ...)`` — up to ``n`` words from this list (articles, determiners, pronouns).
- ``Raw(regex, squashed_regex, needles)`` — a hand-written piece (a URL, an e-mail, a colon).

Words are separated by runs of spaces/commas/quotes/markdown emphasis, so extra spaces and
``**bold**`` do not break a match.  Each phrase compiles twice: a *spaced* regex for the fold
view (tried only at offsets where the first element's literal occurs, and only when every
required element has a word present in the text — a set lookup), and a *squashed* regex for
l e t t e r - s p a c e d runs once collapsed (used only when the text shows letter spacing).

Why one module of this length: the phrase language and its compiler to linear-time byte regexes are
one piece; the tables are ``memories.guard.phrasebook``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from memories.guard.lexicon import LEXICON
from memories.guard.textviews import Views, fold_literal, word_needle

LETTER = rb"[a-z\x80-\xff]"
# separators between words, at most one line break (a paragraph break ends a phrase); it may be
# empty because every word is followed by a word boundary
_SEP = rb"[ \t,\"'()*_\-]*+\r?\n?[ \t,\"'()*_\-]*+"
_BOUNDARY = b"(?!" + LETTER + b")"
_SEP_SQ = rb"[,()]*+"
_STEM_MIN = 5
_NEVER = re.compile(b"(?!)")
UNLOCATED = (-1, -1)


@dataclass(frozen=True)
class _Word:
    literal: bytes
    stem: bool

    def spaced(self) -> bytes:
        """The word; a stem swallows the rest of its word.  The right-hand word boundary is
        added once per alternation group by :meth:`Element.group`."""
        return re.escape(self.literal) + (LETTER + b"*+" if self.stem else b"")

    def squashed(self) -> bytes:
        return re.escape(self.literal) + (LETTER + b"{0,8}" if self.stem else b"")

    def __post_init__(self) -> None:
        if self.stem:  # what present() asks
            LEXICON.prefixes(self.literal[:_STEM_MIN])
        else:
            LEXICON.words(self.literal)

    def present(self, views: Views) -> bool:
        if self.stem:
            return self.literal[:_STEM_MIN] in views.prefixes
        return self.literal in views.words


@dataclass(frozen=True)
class _Alt:
    words: tuple[_Word, ...]

    @classmethod
    def parse(cls, text: str) -> _Alt:
        words = []
        for raw in text.split():
            stem = raw.endswith("*")
            literal = fold_literal(raw.rstrip("*"))
            # split on characters the words view treats as separators ("don't" -> don, t)
            parts = [p for p in re.split(rb"[^a-z0-9\x80-\xff]+", literal) if p]
            for i, part in enumerate(parts):
                is_stem = stem and i == len(parts) - 1
                if is_stem and len(part) < _STEM_MIN:
                    raise ValueError(f"stem too short for the prefix gate: {raw!r}")
                words.append(_Word(part, is_stem))
        return cls(tuple(words))

    def spaced(self) -> bytes:
        return (_BOUNDARY + _SEP).join(w.spaced() for w in self.words)

    def squashed(self) -> bytes:
        return _SEP_SQ.join(w.squashed() for w in self.words)

    def spaced_literal_first(self) -> bytes:
        """``(?<!LETTER)`` + :meth:`spaced`, written with the boundary checked right after the
        first word's literal (the same matches): a pattern starting with literals lets ``re``
        skip to them instead of trying the look-behind at every offset of a window."""
        first, literal = self.words[0], re.escape(self.words[0].literal)
        head = literal + b"(?<!" + LETTER + literal + b")" + (LETTER + b"*+" if first.stem else b"")
        return head + b"".join(_BOUNDARY + _SEP + w.spaced() for w in self.words[1:])

    def present(self, views: Views) -> bool:
        return all(w.present(views) for w in self.words)


@dataclass(frozen=True)
class Element:
    """One slot of a phrase; build with :func:`Req`, :func:`Opt`, :func:`Gap` or :func:`Raw`."""

    alts: tuple[_Alt, ...]
    low: int = 1
    high: int = 1
    raw: tuple[bytes, bytes] | None = None
    needles: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        # gate data: single-word alternatives become two frozensets (one C-level isdisjoint each)
        singles = [a.words[0] for a in self.alts if len(a.words) == 1]
        object.__setattr__(self, "_words", frozenset(w.literal for w in singles if not w.stem))
        object.__setattr__(self, "_stems", frozenset(w.literal[:_STEM_MIN] for w in singles if w.stem))
        object.__setattr__(self, "_multi", tuple(a for a in self.alts if len(a.words) > 1))

    @property
    def required(self) -> bool:
        return self.low > 0

    def max_len(self) -> int:
        """Longest span this element can cover, with generous separators (for look-back bounds)."""
        if self.raw is not None:
            return 60
        longest = max(sum(len(w.literal) + 4 for w in a.words) for a in self.alts)
        return longest * self.high

    def group(self, squashed: bool) -> bytes:
        if self.raw is not None:
            return self.raw[1] if squashed else self.raw[0]
        if squashed:
            return b"(?:" + b"|".join(a.squashed() for a in self.alts) + b")"
        return b"(?:" + b"|".join(a.spaced() for a in self.alts) + b")" + _BOUNDARY

    def present(self, views: Views) -> bool:
        """Cheap necessary condition: some alternative's words all occur in the text."""
        cache = views.gate_cache
        if self.raw is not None:
            found = cache.get(self.needles)
            if found is None:
                found = cache[self.needles] = any(n in views.fold for n in self.needles)
            return found
        key = id(self)
        found = cache.get(key)
        if found is None:
            found = cache[key] = (
                not self._words.isdisjoint(views.words)  # type: ignore[attr-defined]
                or not self._stems.isdisjoint(views.prefixes)  # type: ignore[attr-defined]
                or any(a.present(views) for a in self._multi)  # type: ignore[attr-defined]
            )
        return found


def Req(*alts: str) -> Element:
    return Element(tuple(_Alt.parse(a) for a in alts))


def Opt(*alts: str) -> Element:
    return Element(tuple(_Alt.parse(a) for a in alts), low=0)


def Gap(n: int, *alts: str) -> Element:
    return Element(tuple(_Alt.parse(a) for a in alts), low=0, high=n)


def Raw(spaced: bytes, squashed: bytes, *needles: bytes) -> Element:
    return Element((), raw=(spaced, squashed), needles=needles)


@dataclass(frozen=True)
class _Window:
    """Where a phrase anchored on a later word can start: ``head`` (its first words) found in
    the ``back`` bytes before the anchor."""

    head: re.Pattern[bytes]
    back: int
    first: tuple[_Word, ...] = ()  # the first words of the heads: what stands where one matches


@dataclass(frozen=True)
class Phrase:
    """A sequence of elements, compiled to one regex tried at the offsets of its first words."""

    elements: tuple[Element, ...]
    source: bytes  # the spaced regex (compiled lazily: most phrases only run inside the combined one)
    squashed_source: bytes
    anchor: int = 0  # which element's words locate candidates (0: match there; else: window search)

    @cached_property
    def spaced(self) -> re.Pattern[bytes]:
        return re.compile(self.source)

    @cached_property
    def squashed(self) -> re.Pattern[bytes]:
        return re.compile(self.squashed_source)

    @cached_property
    def squashed_heads(self) -> tuple[bytes, ...]:
        """The first five bytes of each first alternative written without separators."""
        return tuple(b"".join(w.literal for w in alt.words)[:5] for alt in self.elements[0].alts)

    def squashed_gate(self, views: Views) -> bool:
        grams = views.run_grams
        return any(head in grams if len(head) == 5 else head in views.spaced_runs for head in self.squashed_heads)

    @classmethod
    def of(cls, *elements: Element, anchor: int = 0) -> Phrase:
        """``anchor``: index of a required element with rarer words than the first one; the phrase
        is then searched in a window around each occurrence of that element's last words."""
        first = elements[0]
        if first.raw is not None or not first.required or first.high != 1:
            raise ValueError("a phrase starts with a Req element (its first words are the anchors)")
        spaced = b"(?<!" + LETTER + b")" + first.group(False) + b"".join(_rest(elements, squashed=False))
        squashed = first.group(True) + b"".join(_rest(elements, squashed=True))
        if anchor and (not elements[anchor].required or elements[anchor].raw is not None):
            raise ValueError("the anchor element must be a required word element")
        return cls(tuple(elements), spaced, squashed, anchor)

    def anchor_words(self) -> Iterator[tuple[_Word, _Window | None]]:
        """(word, how to find the phrase start around it) per alternative of the anchor element.
        ``None``: the phrase starts at the word.  A multi-word first alternative is anchored on
        its longest word ("do not follow" -> "follow"), since short common first words would make
        the scan and the match attempts expensive; a later anchor element looks back over the
        elements before it."""
        first = self.elements[0]
        if self.anchor:
            back = int(sum(el.max_len() for el in self.elements[: self.anchor]) * 1.5)
            heads = b"(?:" + b"|".join(a.spaced_literal_first() for a in first.alts) + b")" + _BOUNDARY
            window = _Window(re.compile(heads), back, tuple(a.words[0] for a in first.alts))
            for alt in self.elements[self.anchor].alts:
                yield alt.words[-1], window
            return
        for alt in first.alts:
            longest = max(alt.words, key=lambda w: len(w.literal))
            if len(alt.words[0].literal) >= len(longest.literal):
                yield alt.words[0], None
                continue
            before = alt.words[: alt.words.index(longest)]
            back = 2 * sum(len(w.literal) + 2 for w in before) + 8
            yield longest, _Window(re.compile(alt.spaced_literal_first() + _BOUNDARY), back, (alt.words[0],))

    def gate(self, views: Views) -> bool:
        """Necessary condition: every required element has an alternative whose words all occur
        (cached per text: several anchors share a phrase)."""
        cache = views.gate_cache
        key = id(self)
        found = cache.get(key)
        if found is None:
            found = cache[key] = all(el.present(views) for el in self.elements if el.low > 0)
        return found


def _rest(elements: tuple[Element, ...], *, squashed: bool) -> Iterator[bytes]:
    sep = _SEP_SQ if squashed else _SEP
    for el in elements[1:]:
        if el.raw is not None:  # grouped: a raw piece may contain a top-level "|"
            yield b"(?:" + (el.raw[1] if squashed else el.raw[0]) + b")"
        elif el.high == 1:
            yield b"(?:" + sep + el.group(squashed) + b")" + (b"" if el.required else b"?")
        else:
            yield b"(?:" + sep + el.group(squashed) + b"){0,%d}" % el.high


@dataclass(frozen=True)
class _Anchor:
    """One word the text is scanned for, and what to try at each of its occurrences: the rule's
    combined regex right there (``direct``), at the starts found by ``heads`` a few bytes before
    (multi-word first alternatives such as "do not follow"), and ``later`` phrases anchored on
    a later element.  The word's offsets come from :meth:`Views.word_positions` (one
    ``bytes.find`` scan); ``finder`` is the regex those offsets are the match starts of (the
    scan made before, kept as the reference the tests compare with)."""

    word: _Word
    phrases: tuple[Phrase, ...]  # for the gate: is any of them possible in this text?
    direct: bool
    heads: _Window | None
    later: tuple[tuple[Phrase, _Window], ...]
    finder: re.Pattern[bytes]


def _anchor(word: _Word, entries: list[tuple[Phrase, _Window | None]]) -> _Anchor:
    if not re.fullmatch(LETTER + b"+", word.literal):
        raise ValueError(f"an anchor word is letters only (Views.word_positions): {word.literal!r}")
    literal = re.escape(word.literal)
    right = LETTER + b"*+" if word.stem else _BOUNDARY
    heads = [w for p, w in entries if w is not None and p.anchor == 0]
    head = None
    if heads:
        pattern = b"|".join(b"(?:" + w.head.pattern + b")" for w in dict.fromkeys(heads))
        firsts = tuple(dict.fromkeys(word for w in heads for word in w.first))
        head = _Window(re.compile(pattern), max(w.back for w in heads), firsts)
    return _Anchor(
        word,
        tuple(dict.fromkeys(p for p, _ in entries)),
        any(w is None for _, w in entries),
        head,
        # deduplicated: a phrase whose anchor element lists several alternatives ending in the
        # same word ("prompt", "system prompt") would otherwise be tried once per alternative
        tuple(dict.fromkeys((p, w) for p, w in entries if w is not None and p.anchor != 0)),
        re.compile(literal + b"(?<!" + LETTER + literal + b")" + right),
    )


def _may_start(first: _Word, word: _Word) -> bool:
    """Can a phrase whose first word is ``first`` match where ``word`` starts (a whole word: the
    run of letters there is ``word``; a stem: the run starts with it)?  The first word of a
    phrase is a whole word (followed by a non-letter) or a stem, so this is a necessary
    condition."""
    if not first.stem and not word.stem:
        return first.literal == word.literal
    if first.stem and not word.stem:
        return word.literal.startswith(first.literal)
    if not first.stem:
        return first.literal.startswith(word.literal)
    return first.literal.startswith(word.literal) or word.literal.startswith(first.literal)


def _starts(window: _Window, fold: bytes, at: int) -> list[int]:
    """Where the phrase's first words occur shortly before ``at`` (its anchor word), nearest first."""
    starts = []
    for head in window.head.finditer(fold, max(0, at - window.back), at + 80):  # may run past the anchor
        if head.start() > at:
            break
        starts.append(head.start())
    return starts[::-1]


def _match_around(pattern: re.Pattern[bytes], window: _Window, fold: bytes, at: int) -> re.Match[bytes] | None:
    for start in _starts(window, fold, at):
        match = pattern.match(fold, start)
        if match is not None and match.end() > at:
            return match
    return None


_ALL_SETS: list[PhraseSet] = []


def _prefetch(views: Views) -> None:
    """The pre-pass, once per views: the anchor words of every phrase rule that can match here
    (the word occurs and one of its phrases passes its gate), found all at once
    (:meth:`Views.prefetch_word_positions`) rather than in one scan per word and rule."""
    if "phrase_anchors" in views.memo:
        return
    views.memo["phrase_anchors"] = True
    views.prefetch_word_positions(
        (anchor.word.literal, anchor.word.stem) for phrases in _ALL_SETS for anchor in phrases.possible(views)
    )


class PhraseSet:
    """The phrases of one rule, indexed by their anchor words.  For each anchor word that occurs
    in the text (a set lookup) and whose phrases pass :meth:`Phrase.gate`, the word's offsets
    are found (by :func:`_prefetch` for all rules at once, cached) and the phrases tried there:
    the directly anchored ones all at once through :attr:`combined`."""

    def __init__(self, *phrases: Phrase) -> None:
        self.phrases = phrases
        index: dict[tuple[bytes, bool], list[tuple[Phrase, _Window | None]]] = {}
        for phrase in phrases:
            for head, window in phrase.anchor_words():
                if len(head.literal) < 2:
                    raise ValueError(f"anchor too short to scan for: {head.literal!r}")
                index.setdefault((head.literal, head.stem), []).append((phrase, window))
        self.anchors = tuple(_anchor(_Word(lit, stem), entries) for (lit, stem), entries in index.items())
        LEXICON.anchors(*(word_needle(a.word.literal, a.word.stem) for a in self.anchors))
        # every phrase matched at its first word, as one alternation: one C call per position
        self._direct = [p for p in phrases if p.anchor == 0]
        self.combined = re.compile(b"|".join(b"(?:" + p.source + b")" for p in self._direct))
        self._tries_by_words: dict[tuple[_Word, ...], re.Pattern[bytes]] = {}
        # anchor indices by word: which anchors occur is one set intersection, not a loop
        self._by_word: dict[bytes, list[int]] = {}
        for i, anchor in enumerate(self.anchors):
            if not anchor.word.stem:
                self._by_word.setdefault(anchor.word.literal, []).append(i)
        self._words = frozenset(self._by_word)
        self._stems = tuple((a.word.literal[:_STEM_MIN], i) for i, a in enumerate(self.anchors) if a.word.stem)
        self._memo_key = f"possible anchors {id(self)}"
        _ALL_SETS.append(self)

    def possible(self, views: Views) -> tuple[_Anchor, ...]:
        """The anchors worth scanning for, in table order (computed once per views): the word
        occurs (:meth:`_Word.present`) and one of its phrases passes its gate."""
        found = views.memo.get(self._memo_key)
        if found is None:
            chosen = [i for word in self._words.intersection(views.words) for i in self._by_word[word]]
            if self._stems:
                prefixes = views.prefixes
                chosen += [i for prefix, i in self._stems if prefix in prefixes]
            anchors = (self.anchors[i] for i in sorted(chosen))
            found = views.memo[self._memo_key] = tuple(a for a in anchors if any(p.gate(views) for p in a.phrases))
        return found  # type: ignore[return-value]

    def find(self, views: Views) -> Iterator[tuple[int, int]]:
        """Spans (fold coordinates) of the phrases; letter-spaced hits come as UNLOCATED."""
        yield from self._find(views)
        despaced = views.despaced
        if despaced is not None:  # spans there are not raw-text offsets
            for _ in self._find(despaced):
                yield UNLOCATED
            runs = views.spaced_runs
            for phrase in self.phrases:
                if phrase.squashed_gate(views) and phrase.squashed.search(runs):
                    yield UNLOCATED

    def tries(self, words: tuple[_Word, ...]) -> re.Pattern[bytes]:
        """:attr:`combined` without the phrases that cannot match where one of ``words`` starts
        (:func:`_may_start`), in the same order: ``match`` at such an offset gives exactly what
        :attr:`combined` gives (the phrases left out fail there), without trying every
        alternative.  Compiled on first use, kept."""
        found = self._tries_by_words.get(words)
        if found is None:
            kept = [
                p
                for p in self._direct
                if any(_may_start(alt.words[0], word) for alt in p.elements[0].alts for word in words)
            ]
            found = re.compile(b"|".join(b"(?:" + p.source + b")" for p in kept)) if kept else _NEVER
            self._tries_by_words[words] = found
        return found

    def _find(self, views: Views) -> Iterator[tuple[int, int]]:
        fold = views.fold
        _prefetch(views)
        for anchor in self.possible(views):
            later = [(p, w) for p, w in anchor.later if p.gate(views)]
            direct = self.tries((anchor.word,)) if anchor.direct else None
            window = anchor.heads
            heads = self.tries(window.first) if window is not None else None
            for at in views.word_positions(anchor.word.literal, stem=anchor.word.stem):
                match = direct.match(fold, at) if direct is not None else None
                if match is None and window is not None and heads is not None:
                    match = _match_around(heads, window, fold, at)
                if match is not None:
                    yield match.span()
                for phrase, window in later:
                    found = _match_around(phrase.spaced, window, fold, at)
                    if found is not None:
                        yield found.span()
