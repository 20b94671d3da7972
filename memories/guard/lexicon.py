"""Every word the guard's gates ask about, declared once, and found in one pass per text.

The rules gate their scans on cheap questions about the words of :attr:`Views.fold`: is this a
word (``b"bearer" in views.words``), does some word start with this (``b"igno"[:5] in
views.prefixes``, ``b" akia" in views.vocab``), does some word contain this (``b"secret" in
views.vocab``); and the phrase rules ask where their anchor words stand
(:meth:`Views.word_positions`).  Answering those from Python sets means splitting the text
into every one of its words and hashing them (~1.5-2 ms per 100,000 characters), and finding the
anchors one ``bytes.find`` or one Aho-Corasick pass (~1 ms).

Each module therefore *declares* the words it asks about here, at import time
(:meth:`Lexicon.words`, :meth:`Lexicon.prefixes`, :meth:`Lexicon.parts`,
:meth:`Lexicon.anchors`).  When Hyperscan is installed (wheels for x86-64 and macOS, none for
Linux on ARM; ``MMW_GUARD_HYPERSCAN=0`` turns it off), two compiled multi-literal databases
answer all of them in one scan each of two byte views (:meth:`Lexicon.scan_words`,
:meth:`Lexicon.scan_anchors`); :class:`Views` then serves ``words``, ``prefixes`` and ``vocab``
as the *declared* entries present, which answer every declared question exactly as the full sets
do (``tests/memories/guard/test_lexicon.py`` checks both ways agree and that no rule asks an
undeclared question).  Without Hyperscan, :class:`Views` builds the full sets as before.

How a question becomes a literal in the padded words view (``b" " + fold with every byte that is
not a letter or digit as a space + b" "``, where every word stands between spaces):

- word ``w``: ``b" w "``;
- prefix ``p`` (:attr:`Views.prefixes` holds each word's first five bytes): ``b" p"`` when ``p``
  has five bytes (a word starts with it), ``b" p "`` when shorter (the word is ``p``);
- part ``n`` (``n in views.vocab``, the distinct words joined by single spaces): ``n`` itself; a
  part may start and end with a space but hold none inside (the order of the vocabulary's words
  is arbitrary, so a question spanning two words has no meaning).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


def _hyperscan() -> Any:
    """The ``hyperscan`` module, or None: an optional accelerator (no wheel for Linux on ARM);
    the pure-Python path stays complete without it."""
    try:
        import hyperscan
    except ImportError:  # pragma: no cover - a platform without the wheel
        return None
    return hyperscan


hyperscan = _hyperscan()

_WORD_BYTES = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyz") | frozenset(range(0x80, 0x100))
_LETTER_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz") | frozenset(range(0x80, 0x100))


@dataclass(frozen=True)
class WordHits:
    """The declared questions a text answers yes to, shaped like the views they stand in for."""

    words: frozenset[bytes]
    prefixes: frozenset[bytes]
    vocab: bytes  # the declared parts present, joined by newlines (no part holds one)


def _check(kind: str, literal: bytes, allowed: frozenset[int], *, edges: bool = False) -> None:
    body = literal.strip(b" ") if edges else literal
    if not body or any(b not in allowed for b in body):
        raise ValueError(f"a lexicon {kind} holds only bytes its view can hold: {literal!r}")


class _Database:
    """One compiled Hyperscan database of literals (block mode), id = index in ``literals``."""

    def __init__(self, literals: list[bytes], *, once: bool) -> None:
        self.literals = literals
        self.lengths = [len(lit) for lit in literals]
        self.db: Any = None
        self._local = threading.local()  # a scratch space per thread (see scan)
        if literals:  # Hyperscan refuses an empty database; an empty one finds nothing
            self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            flags = hyperscan.HS_FLAG_SINGLEMATCH if once else 0
            ids = list(range(len(literals)))
            self.db.compile(expressions=literals, ids=ids, elements=len(literals), flags=flags, literal=True)

    def scan(self, haystack: bytes, on_match: Callable[[int, int, int, int, object], None]) -> None:
        """Report every match to ``on_match``, which returns None (a true value would stop the
        scan; ``list.append`` returns None).  Each thread scans with its own scratch space: the
        database's default one is shared, and two threads using it at once get
        ``ScratchInUseError`` (a served process screens writes on several threads)."""
        if self.db is None:
            return
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self.db)
        self.db.scan(haystack, match_event_handler=on_match, scratch=scratch)


@dataclass(frozen=True)
class _Compiled:
    words: _Database  # over the padded words view, each literal reported once
    answers: tuple[tuple[tuple[bytes, int], ...], ...]  # per literal: (declared item, kind) pairs
    anchors: _Database  # over the letters view, every occurrence


_WORD, _PREFIX, _PART = 0, 1, 2


class Lexicon:
    """The declared questions (see the module docstring) and, when Hyperscan is available, their
    compiled databases (rebuilt on first use after a declaration, so a phrase table built later,
    as some tests do, is covered too)."""

    def __init__(self) -> None:
        self._words: set[bytes] = set()
        self._prefixes: set[bytes] = set()
        self._parts: set[bytes] = set()
        self._anchors: set[bytes] = set()
        self._lock = threading.Lock()
        self._compiled: _Compiled | None = None
        self.accelerated = hyperscan is not None and os.environ.get("MMW_GUARD_HYPERSCAN", "1") != "0"

    # --- declarations -----------------------------------------------------------------------

    def words(self, *words: bytes) -> frozenset[bytes]:
        """Declare whole words of :attr:`Views.words`; returns them as a frozenset (for
        ``isdisjoint``)."""
        for word in words:
            _check("word", word, _WORD_BYTES)
        return self._declare(self._words, words)

    def prefixes(self, *prefixes: bytes) -> frozenset[bytes]:
        """Declare members of :attr:`Views.prefixes` (at most five bytes each)."""
        for prefix in prefixes:
            _check("prefix", prefix, _WORD_BYTES)
            if len(prefix) > 5:
                raise ValueError(f"Views.prefixes holds five bytes per word at most: {prefix!r}")
        return self._declare(self._prefixes, prefixes)

    def parts(self, *parts: bytes) -> tuple[bytes, ...]:
        """Declare substrings asked of :attr:`Views.vocab` (``part in views.vocab``)."""
        for part in parts:
            _check("part", part, _WORD_BYTES, edges=True)
        self._declare(self._parts, parts)
        return parts

    def anchors(self, *needles: bytes) -> None:
        """Declare needles of :meth:`Views.word_positions` over :attr:`Views.letters`
        (``b" word "``, or ``b" stem"``)."""
        for needle in needles:
            _check("anchor", needle, _LETTER_BYTES, edges=True)
        self._declare(self._anchors, needles)

    def _declare(self, into: set[bytes], items: tuple[bytes, ...]) -> frozenset[bytes]:
        new = set(items) - into
        if new:
            with self._lock:
                into.update(new)
                self._compiled = None
        return frozenset(items)

    @contextmanager
    def accelerated_as(self, on: bool) -> Iterator[None]:
        """Use Hyperscan (``on``) or the pure-Python sets within the block (tests and benches)."""
        if on and hyperscan is None:
            raise RuntimeError("Hyperscan is not installed")
        before, self.accelerated = self.accelerated, on
        try:
            yield
        finally:
            self.accelerated = before

    def declared_anchor(self, needle: bytes) -> bool:
        return needle in self._anchors

    def declared(self) -> tuple[frozenset[bytes], frozenset[bytes], frozenset[bytes]]:
        """(words, prefixes, parts) declared so far (the tests' completeness check)."""
        return frozenset(self._words), frozenset(self._prefixes), frozenset(self._parts)

    # --- the two scans (Hyperscan only) -----------------------------------------------------

    def _databases(self) -> _Compiled:
        compiled = self._compiled
        if compiled is not None:
            return compiled
        with self._lock:
            compiled = self._compiled  # another thread may have compiled while this one waited
            if compiled is None:
                needles: dict[bytes, list[tuple[bytes, int]]] = {}
                for word in self._words:
                    needles.setdefault(b" " + word + b" ", []).append((word, _WORD))
                for prefix in self._prefixes:
                    literal = b" " + prefix + (b"" if len(prefix) == 5 else b" ")
                    needles.setdefault(literal, []).append((prefix, _PREFIX))
                for part in self._parts:
                    needles.setdefault(part, []).append((part, _PART))
                literals = sorted(needles)
                compiled = self._compiled = _Compiled(
                    _Database(literals, once=True),
                    tuple(tuple(needles[literal]) for literal in literals),
                    _Database(sorted(self._anchors), once=False),
                )
        return compiled

    def scan_words(self, padded: bytes) -> WordHits:
        """The declared words, prefixes and parts present in ``padded`` (the padded words view)."""
        compiled = self._databases()
        hit_ids: list[int] = []
        compiled.words.scan(padded, lambda i, _start, _end, _flags, _ctx: hit_ids.append(i))
        found: tuple[list[bytes], list[bytes], list[bytes]] = ([], [], [])
        answers = compiled.answers
        for i in hit_ids:
            for item, kind in answers[i]:
                found[kind].append(item)
        return WordHits(frozenset(found[_WORD]), frozenset(found[_PREFIX]), b"\n".join(found[_PART]))

    def scan_anchors(self, letters: bytes) -> dict[bytes, tuple[int, ...]]:
        """The offsets in ``letters`` of each declared anchor needle present (overlapping ones
        included, in order), as :func:`textviews.find_all` gives them; a declared needle absent
        from the result does not occur."""
        anchors = self._databases().anchors
        lengths = anchors.lengths
        hits: list[tuple[int, int]] = []
        anchors.scan(letters, lambda i, _start, end, _flags, _ctx: hits.append((i, end - lengths[i])))
        offsets: dict[int, list[int]] = {}
        for i, at in hits:
            offsets.setdefault(i, []).append(at)
        return {anchors.literals[i]: tuple(found) for i, found in offsets.items()}


LEXICON = Lexicon()
