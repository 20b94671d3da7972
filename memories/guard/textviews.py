"""Cheap, length-preserving byte views of one input text, computed once and shared by every rule.

Why bytes: the guard must stay under a few milliseconds on 100,000 characters, and the slow
part of Unicode folding in CPython is ``str.translate`` with a many-to-one table (per-character
dictionary lookups, ~6 ms per 100k non-ASCII characters).  Instead we encode the text with a
*charmap codec* (C speed, ~0.3 ms) into one byte per character, then fold with
``bytes.translate`` (a 256-entry table, ~0.05 ms).  The codec maps the characters that matter
for detection: ASCII, Cyrillic, the accented letters of French/German/Spanish, Greek letters that
look Latin, typographic punctuation and the invisible/bidi controls.  Every other character
becomes ``?`` (:data:`UNMAPPED`) and sends the text down a slower, still linear, path.

Views (all ``bytes``):

- ``lower`` — aligned 1:1 with the raw text (byte *i* is character *i*), case-folded only.
  Name-based secret rules search it and cut the secret out of the raw text by offset.
- ``fold`` — for poisoning rules: NFKC (only when the text needs it), lower case, Cyrillic and
  Greek homoglyphs to Latin, ``0 1 3 4 5 7`` leetspeak to letters, accents stripped, typographic
  quotes/dashes to ASCII, invisible characters to ``\\x00``.  Aligned with the raw text when the
  text was already NFKC-normalised.
- ``words`` — the set of words of ``fold`` (punctuation split), for O(1) keyword gates.
- ``despaced`` — ``fold`` with l e t t e r - s p a c e d runs collapsed, computed only when the
  word set shows letter spacing.
- ``letters`` — ``fold`` with every non-letter as a space, one space added at each end: a whole
  word is `` word `` there, so the phrase rules' anchor words are found by ``bytes.find`` or, many
  at once, by one Aho-Corasick pass (:meth:`Views.prefetch_word_positions`).
- ``payment_text`` (a ``str``) — for the payment rules: full-width ASCII (``１``, ``Ｄ``, ``：``) and
  mathematical digits (``𝟏``) as ASCII (their NFKC form), space-like separators (NBSP, thin,
  narrow and figure spaces…) as a space and dash-like ones (en dash, minus…) as ``-``; one
  character per character, so its offsets are the raw text's.

Why one module of this length: the views and the codecs behind them are one speed contract (above);
each view is short and they share the cached encodings.
"""

from __future__ import annotations

import codecs
import operator
import re
import unicodedata
from collections.abc import Iterable
from functools import cached_property

import ahocorasick

from memories.guard.lexicon import LEXICON, WordHits

UNMAPPED = b"?"
INVISIBLE = b"\x00"

# --- the codec -----------------------------------------------------------------------------

_INVISIBLE_BMP = (
    [chr(c) for c in range(0x200B, 0x2010)]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2060, 0x2065)]
    + [chr(c) for c in range(0x2066, 0x206A)]
    + ["\ufeff"]
)
_CYRILLIC = [chr(c) for c in range(0x0410, 0x0450)] + list("ЁёіІїЇєЄѕЅјЈ")
_LATIN_LOWER = list("àáâäçèéêëìíîïñòóôöùúûüýÿßœæ")
_LATIN_UPPER = list("ÀÂÇÉÈÊÎÔÖÄÜÑ")
_GREEK = list("αειορνκτυχ")
_PUNCT = list("\u2019\u2018\u201c\u201d\u00ab\u00bb\u2013\u2014\u2026\u2022\u00a0\u201e")

# order matters: invisibles and punctuation take the control-byte slots; letters land on >= 0x80
_NON_ASCII: list[str] = _INVISIBLE_BMP + _PUNCT + _CYRILLIC + _LATIN_LOWER + _GREEK + _LATIN_UPPER
# NUL must map to byte 0, or CPython silently builds a (slow) dict instead of a fast EncodingMap
_FREE_SLOTS = [b for b in range(256) if b not in (0x00, 0x09, 0x0A, 0x0D) and not 0x20 <= b <= 0x7E]
assert len(_NON_ASCII) <= len(_FREE_SLOTS), "charmap overflow"

_DECODING = ["\ufffe"] * 256
for _b in (0x00, 0x09, 0x0A, 0x0D, *range(0x20, 0x7F)):
    _DECODING[_b] = chr(_b)
_SLOT: dict[str, int] = {}
for _ch, _b in zip(_NON_ASCII, _FREE_SLOTS, strict=False):
    _DECODING[_b] = _ch
    _SLOT[_ch] = _b
_ENCODING_MAP = codecs.charmap_build("".join(_DECODING))
assert type(_ENCODING_MAP).__name__ == "EncodingMap", "charmap fell back to a dict"

# --- fold tables ----------------------------------------------------------------------------

_HOMOGLYPH = {
    # Cyrillic (lower case; upper case is lowered first) -> the Latin letter it looks like
    "а": "a",
    "в": "b",
    "г": "r",
    "е": "e",
    "ё": "e",
    "з": "e",
    "и": "u",
    "й": "u",
    "к": "k",
    "м": "m",
    "н": "h",
    "о": "o",
    "п": "n",
    "р": "p",
    "с": "c",
    "т": "t",
    "у": "y",
    "х": "x",
    "ь": "b",
    "і": "i",
    "ї": "i",
    "ј": "j",
    "ѕ": "s",
    "є": "e",
    # Greek
    "α": "a",
    "ε": "e",
    "ι": "i",
    "ο": "o",
    "ρ": "p",
    "ν": "v",
    "κ": "k",
    "τ": "t",
    "υ": "u",
    "χ": "x",
}
_ACCENT = {
    "à": "a",
    "á": "a",
    "â": "a",
    "ä": "a",
    "ç": "c",
    "è": "e",
    "é": "e",
    "ê": "e",
    "ë": "e",
    "ì": "i",
    "í": "i",
    "î": "i",
    "ï": "i",
    "ñ": "n",
    "ò": "o",
    "ó": "o",
    "ô": "o",
    "ö": "o",
    "ù": "u",
    "ú": "u",
    "û": "u",
    "ü": "u",
    "ý": "y",
    "ÿ": "y",
    "ß": "s",
    "œ": "o",
    "æ": "a",
}
_PUNCT_FOLD = {
    "\u2019": "'",
    "\u2018": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u201e": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u2026": ".",
    "\u2022": "*",
    "\u00a0": " ",
}
_LEET = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t"}


def _lower_char(ch: str) -> str:
    low = ch.lower()
    return low if (len(low) == 1 and low in _SLOT) or low.isascii() else ch


def _build_tables() -> tuple[bytes, bytes]:
    lower = bytearray(range(256))
    fold = bytearray(range(256))
    for b in range(0x41, 0x5B):
        lower[b] = fold[b] = b + 0x20
    for digit, letter in _LEET.items():
        fold[ord(digit)] = ord(letter)
    for ch, slot in _SLOT.items():
        low = _lower_char(ch)
        low_byte = ord(low) if low.isascii() else _SLOT[low]
        lower[slot] = ord(_PUNCT_FOLD[ch]) if ch in _PUNCT_FOLD else low_byte
        if ch in _INVISIBLE_BMP:
            fold[slot] = INVISIBLE[0]
            continue
        target = _HOMOGLYPH.get(low) or _ACCENT.get(low) or _PUNCT_FOLD.get(low)
        fold[slot] = ord(target) if target else low_byte
    return bytes(lower), bytes(fold)


LOWER_TABLE, FOLD_TABLE = _build_tables()
# letters view: every byte that is not a letter of the phrase patterns ([a-z\x80-\xff]) -> space
_LETTERS_TABLE = bytes(b if (0x61 <= b <= 0x7A or b >= 0x80) else 0x20 for b in range(256))
# words view: ASCII punctuation -> space (apostrophe included: "l'ia" -> "l ia")
_WORDS_TABLE = bytes(b if (0x30 <= b <= 0x39 or 0x61 <= b <= 0x7A or b >= 0x80) else 0x20 for b in range(256))
# shape view: letters -> "a", whitespace and in-word punctuation (". - _ *") -> " ", else "."
_SHAPE_TABLE = bytes(
    0x61 if (0x61 <= b <= 0x7A or b >= 0x80) else 0x20 if b in b" \t\n\r.-_*" else 0x2E for b in range(256)
)
_COMPAT = re.compile(
    "[\u2070-\u209f\u2100-\u214f\u2460-\u24ff\ufb00-\ufb06\ufe50-\ufe6b\uff01-\uff5e\U0001d400-\U0001d7ff]+"
)
_FIRST_FIVE = operator.itemgetter(slice(None, 5))
_RARE_SINGLE_LETTERS = LEXICON.words(*(bytes([c]) for c in b"bfghkpqrvwz"))
_L = rb"[a-z\x80-\xff]"
_SPACED_RUN = re.compile(rb"(?<!%s)%s(?!%s)(?:[ .\-_*]%s(?!%s))++" % (_L, _L, _L, _L, _L))


# What the payment rules read as another character: every space and dash (NBSP, thin, narrow
# and figure spaces, en dash, minus…) as " " / "-", and full-width ASCII and mathematical digits
# as ASCII (their NFKC form).  The three the codec maps are replaced with str.replace; the others
# are outside the codec, so a text can hold them only when it has unmapped characters.
_PAYMENT_IN_CODEC = (("\u00a0", " "), ("\u2013", "-"), ("\u2014", "-"))
_PAYMENT_SPACES = "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_PAYMENT_DASHES = "\u2010\u2011\u2012\u2015\u2212\ufe58\ufe63"
_PAYMENT_RUN = re.compile(f"[{_PAYMENT_SPACES}{_PAYMENT_DASHES}\uff01-\uff5e\U0001d7ce-\U0001d7ff]+")
_PAYMENT_OUTSIDE_CODEC = frozenset(
    _PAYMENT_SPACES + _PAYMENT_DASHES + "".join(map(chr, [*range(0xFF01, 0xFF5F), *range(0x1D7CE, 0x1D800)]))
)
_PAYMENT_FIND_MAX = 2_000
"""Up to this many characters outside the codec, each is looked at (``bytes.find`` of ``?`` in the
encoded view, ~0.02 ms for 120 of them in 100,000 characters); past it one regex scan of the
text (~0.2-0.6 ms) is cheaper."""


class _PaymentTable(dict[int, str]):
    """``str.translate`` table from a character of :data:`_PAYMENT_RUN` to what the payment
    rules read, filled on first use of each character."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char in _PAYMENT_SPACES:
            value = " "
        elif char in _PAYMENT_DASHES:
            value = "-"
        else:
            value = unicodedata.normalize("NFKC", char)  # full-width ASCII, mathematical digits
        self[code] = value
        return value


_PAYMENT_TABLE = _PaymentTable()


BATCH_MIN = 12
BATCH_MIN_CHARS = 2_000
"""From this many words, on a text this long, :meth:`Views.prefetch_word_positions` builds an
automaton: on 100,000 characters one ``bytes.find`` scan costs ~0.07-0.09 ms and the automaton's
pass ~0.9 ms (built in ~0.02 ms for ~30 words); on 1,000 characters ~1 us a scan against
~0.025 ms."""


def word_needle(word: bytes, stem: bool) -> bytes:
    """What :attr:`Views.letters` holds where ``word`` stands as a word (a stem: starts one)."""
    return b" " + word + (b"" if stem else b" ")


def find_all(haystack: bytes, needle: bytes) -> tuple[int, ...]:
    """Every offset of ``needle`` in ``haystack``, overlapping occurrences included."""
    out = []
    at = haystack.find(needle)
    while at != -1:
        out.append(at)
        at = haystack.find(needle, at + 1)
    return tuple(out)


def encode(text: str) -> bytes:
    """One byte per character of ``text`` (unmapped characters become ``?``)."""
    if text.isascii():
        return text.encode("ascii")
    return codecs.charmap_encode(text, "replace", _ENCODING_MAP)[0]


def fold_literal(word: str) -> bytes:
    """Fold a pattern literal exactly like :attr:`Views.fold` folds text, so patterns can be
    written in natural spelling ("игнорируй", "précédentes") and still match folded text."""
    return encode(unicodedata.normalize("NFKC", word)).translate(FOLD_TABLE)


def lower_literal(word: str) -> bytes:
    """Encode a pattern literal like :attr:`Views.lower` (case-folded only)."""
    return encode(word).translate(LOWER_TABLE)


class Views:
    """Lazily computed views of one text; see the module docstring for what each view is."""

    __slots__ = ("__dict__", "_positions", "gate_cache", "memo", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._positions: dict[bytes, tuple[int, ...]] = {}
        self.gate_cache: dict[object, bool] = {}
        self.memo: dict[str, object] = {}

    def positions(self, needle: bytes) -> tuple[int, ...]:
        """Every offset of ``needle`` in :attr:`lower` (cached: several rules share anchors)."""
        key = b"l" + needle
        found = self._positions.get(key)
        if found is None:
            found = self._positions[key] = find_all(self.lower, needle)
        return found

    def word_positions(self, word: bytes, *, stem: bool = False) -> tuple[int, ...]:
        """Start offsets in :attr:`fold` of ``word`` standing as a whole word (``stem``: starting
        a word), a word being a run of letters (a-z and bytes >= 0x80, ``phrases.LETTER``).  For a
        ``word`` made of letters only these are exactly the starts of ``finditer`` over the fold
        of ``word`` with a letter neither before nor after it (a stem: none before), the scan the
        phrase rules made before (tests/memories/guard/test_gating.py checks both agree).  One
        ``bytes.find`` scan of :attr:`letters` for " word " (" word"), no check per hit; cached
        per word, so rules sharing a word share the scan."""
        needle = word_needle(word, stem)
        found = self._positions.get(needle)
        if found is None and LEXICON.accelerated and LEXICON.declared_anchor(needle):
            self._scan_anchors()
            found = self._positions.get(needle, ())
        if found is None:
            # letters[p] is the byte before fold[p]: " word" found at p is the word at fold[p]
            found = self._positions[needle] = find_all(self.letters, needle)
        return found

    def _scan_anchors(self) -> None:
        """Every declared anchor's offsets at once (Hyperscan): one pass, whatever the gates.
        Afterwards a declared needle missing from the cache does not occur (once per views)."""
        if "anchors scanned" in self.memo:
            return
        self.memo["anchors scanned"] = True
        for needle, offsets in LEXICON.scan_anchors(self.letters).items():
            self._positions.setdefault(needle, offsets)

    def prefetch_word_positions(self, words: Iterable[tuple[bytes, bool]]) -> None:
        """Find the :meth:`word_positions` of many ``(word, stem)`` at once: with
        :data:`BATCH_MIN` or more not yet found, one Aho-Corasick pass over :attr:`letters`
        (pyahocorasick) instead of one ``bytes.find`` scan per word; fewer are left to
        :meth:`word_positions` (a scan each is cheaper than building the automaton).  The
        offsets are the same either way: every occurrence of each needle, in order."""
        needles = {word_needle(word, stem) for word, stem in words} - self._positions.keys()
        if needles and LEXICON.accelerated and any(LEXICON.declared_anchor(n) for n in needles):
            self._scan_anchors()  # the declared ones not found there do not occur
            needles = {n for n in needles if n not in self._positions and not LEXICON.declared_anchor(n)}
        if not needles or len(needles) < BATCH_MIN or len(self.letters) < BATCH_MIN_CHARS:
            return
        automaton = ahocorasick.Automaton()
        for needle in needles:
            automaton.add_word(needle.decode("latin-1"), needle)
        automaton.make_automaton()
        found: dict[bytes, list[int]] = {needle: [] for needle in needles}
        for end, needle in automaton.iter(self.letters.decode("latin-1")):
            found[needle].append(end + 1 - len(needle))
        for needle, offsets in found.items():
            self._positions[needle] = tuple(offsets)

    @cached_property
    def encoded(self) -> bytes:
        return encode(self.text)

    @cached_property
    def has_unmapped(self) -> bool:
        """True when some character is outside the codec (emoji, CJK, tag characters, controls…)."""
        return self.encoded.count(UNMAPPED) != self.text.count("?")

    @cached_property
    def lower(self) -> bytes:
        return self.encoded.translate(LOWER_TABLE)

    @cached_property
    def normalized(self) -> str:
        """The text with compatibility look-alikes (fullwidth, mathematical, circled letters,
        ligatures, super/subscripts) replaced by their NFKC form; the text itself (same object)
        when there are none.  Only characters outside the codec can need it, and only those
        ranges are rewritten (a full NFKC pass costs ~4 ms per 100k characters)."""
        text = self.text
        if text.isascii() or not self.has_unmapped:
            return text
        probe = text.replace("\u2026", "...").replace("\xa0", " ")  # folded by the codec already
        if unicodedata.is_normalized("NFKC", probe):  # CPython's quick check: ~0.2 ms per 100k
            return text
        folded = _COMPAT.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
        return text if folded == text else folded

    @cached_property
    def payment_text(self) -> str:
        """The text as the payment rules read it (see the module docstring); the text itself
        (same object) when it holds no character to rewrite."""
        text = self.text
        if text.isascii():
            return text
        for char, replacement in _PAYMENT_IN_CODEC:
            if char in text:
                text = text.replace(char, replacement)
        changed = text is not self.text
        if self.payment_fixes:
            pieces, at = [], 0
            for position, replacement in self.payment_fixes:
                pieces += [text[at:position], replacement]
                at = position + 1
            pieces.append(text[at:])
            text, changed = "".join(pieces), True
        return text if changed else self.text

    @cached_property
    def payment_fixes(self) -> list[tuple[int, str]]:
        """(offset, ASCII replacement) of each character of :data:`_PAYMENT_RUN` in the text, in
        order: all of them are outside the codec, so only a ``?`` of :attr:`encoded` can be one.
        The other characters :attr:`payment_text` rewrites (NBSP, en and em dash) are in the
        codec, which :attr:`lower` already maps to `` `` and ``-``."""
        if not self.has_unmapped:
            return []
        encoded, text = self.encoded, self.text
        if encoded.count(UNMAPPED) > _PAYMENT_FIND_MAX:
            return [
                (start, _PAYMENT_TABLE[ord(text[start])])
                for run in _PAYMENT_RUN.finditer(text)
                for start in range(run.start(), run.end())
            ]
        fixes = []
        at = encoded.find(UNMAPPED)
        while at != -1:
            if text[at] in _PAYMENT_OUTSIDE_CODEC:
                fixes.append((at, _PAYMENT_TABLE[ord(text[at])]))
            at = encoded.find(UNMAPPED, at + 1)
        return fixes

    @cached_property
    def utf8(self) -> bytes:
        return self.text.encode("utf-8", "surrogatepass")

    @cached_property
    def fold(self) -> bytes:
        normalized = self.normalized
        encoded = self.encoded if normalized is self.text else encode(normalized)
        return encoded.translate(FOLD_TABLE)

    @cached_property
    def letters(self) -> bytes:
        """:attr:`fold` with every byte that is not a letter (a-z, bytes >= 0x80) as a space,
        with one more space before and after: ``letters[i + 1]`` is ``fold[i]`` or a space, so a
        whole word is `` word `` here (see :meth:`word_positions`)."""
        return b" " + self.fold.translate(_LETTERS_TABLE) + b" "

    @cached_property
    def lexicon_hits(self) -> WordHits:
        """The declared words, prefixes and parts (:mod:`memories.guard.lexicon`) present, found
        in one Hyperscan pass over the words of :attr:`fold`, each between spaces."""
        return LEXICON.scan_words(b" " + self.fold.translate(_WORDS_TABLE) + b" ")

    @cached_property
    def words(self) -> frozenset[bytes]:
        """The words of :attr:`fold` (runs of letters and digits).  With Hyperscan, only the
        declared ones (:meth:`Lexicon.words`): exact for every question a rule asks."""
        if LEXICON.accelerated:
            return self.lexicon_hits.words
        return frozenset(self.fold.translate(_WORDS_TABLE).split())

    @cached_property
    def vocab(self) -> bytes:
        """The distinct words of :attr:`fold` joined by spaces, with a space on both ends: a much
        smaller haystack for "does any word contain / start with …" gates (``b" akia" in vocab``).
        With Hyperscan, the declared parts present, one per line: exact for the declared ones."""
        if LEXICON.accelerated:
            return self.lexicon_hits.vocab
        return b" " + b" ".join(self.words) + b" "

    @cached_property
    def prefixes(self) -> frozenset[bytes]:
        """The first five bytes of every word (the gate for stems such as ``игнорир*``).  With
        Hyperscan, only the declared ones."""
        if LEXICON.accelerated:
            return self.lexicon_hits.prefixes
        return frozenset(map(_FIRST_FIVE, self.words))  # C-level: no Python frame per word

    @cached_property
    def letter_spaced(self) -> bool:
        """Cheap signal of l e t t e r - s p a c e d text: consonants that prose rarely leaves
        standing alone ("i g n o r e" has g and r), then four single letters in a row."""
        if _RARE_SINGLE_LETTERS.isdisjoint(self.words):
            return False
        return b" a a a a " in self.fold.translate(_SHAPE_TABLE)

    @cached_property
    def despaced(self) -> Views | None:
        """Views over :attr:`fold` with every letter-spaced run collapsed ("i g n o r e  a l l" ->
        "ignore all"), or None when the text shows no letter spacing."""
        if not self.letter_spaced:
            return None
        collapsed = _SPACED_RUN.sub(lambda m: m.group().translate(None, b" .-_*\t"), self.fold)
        return Views.from_fold(collapsed)

    @cached_property
    def run_grams(self) -> frozenset[bytes]:
        """Every 5-byte substring of :attr:`spaced_runs` (a gate for the squashed patterns; only
        computed for letter-spaced text)."""
        runs = self.spaced_runs
        return frozenset(runs[i : i + 5] for i in range(max(0, len(runs) - 4)))

    @cached_property
    def spaced_runs(self) -> bytes:
        """Only the collapsed letter-spaced runs, one per line (for runs with no word gaps)."""
        return b"\n".join(m.group().translate(None, b" .-_*\t") for m in _SPACED_RUN.finditer(self.fold))

    def masked(self, spans: list[tuple[int, int]], blank: str = "\n") -> Views:
        """Views of the same text with ``spans`` blanked (same length).  The word-level gates
        (``words``, ``prefixes``, ``vocab``) are carried over: blanking only removes words, so
        they stay valid necessary conditions; everything else is recomputed on demand."""
        pieces, at = [], 0
        for start, end in sorted(spans):
            pieces += [self.text[at:start], blank * (end - start)]
            at = end
        pieces.append(self.text[at:])
        views = Views("".join(pieces))
        for name in ("words", "prefixes", "vocab", "lexicon_hits"):
            if name in self.__dict__:
                views.__dict__[name] = self.__dict__[name]
        return views

    @classmethod
    def from_fold(cls, fold: bytes) -> Views:
        """Views whose fold is given (used for derived texts; raw-text views are unavailable)."""
        views = cls("")
        views.__dict__["fold"] = fold
        return views

    @cached_property
    def lower_reversed(self) -> bytes:
        return self.lower[::-1]
