"""Detectors behind the ``refuse`` rules: text written to steer the agent that later reads it.

All phrase rules read :attr:`Views.fold` (NFKC, lower case, homoglyphs and leetspeak folded,
accents stripped), so "ІGNОRE  all prev1ous instructions" and "ignore all previous
instructions" are the same bytes.  See :mod:`memories.guard.phrases` for the notation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from memories.guard import phrasebook
from memories.guard.phrases import UNLOCATED, PhraseSet
from memories.guard.textviews import INVISIBLE, Views
from memories.guard.types import Span

# --- invisible and bidi-control characters ------------------------------------------------------

_FLAG_TAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")
_JOINERS = ("\u200c", "\u200d")
_INVISIBLES = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
    "\u2066\u2067\u2068\u2069\ufeff"
)


def _emoji_like(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2300 <= cp <= 0x23FF
        or 0x2600 <= cp <= 0x27BF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0xFE0F, 0x20E3, 0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
    )


def _joining_script(ch: str) -> bool:
    """Arabic, Syriac, Thaana, N'Ko and the Indic scripts use ZWJ/ZWNJ inside words."""
    return 0x0600 <= ord(ch) <= 0x0DFF or 0xA8E0 <= ord(ch) <= 0xA8FF


def _rtl(ch: str) -> bool:
    """Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation forms."""
    cp = ord(ch)
    return 0x0590 <= cp <= 0x08FF or 0xFB1D <= cp <= 0xFDFF or 0xFE70 <= cp <= 0xFEFC


def _ordinary_invisible(text: str, at: int) -> bool:
    """Ordinary uses of some of these characters, decided from their neighbours:

    - a ZWJ inside an emoji sequence (👩‍💻, ❤️‍🔥, 🏳️‍🌈);
    - a ZWJ/ZWNJ touching a letter of a script that spells with it (Persian, Hindi, Bengali);
    - an LRM/RLM (U+200E/U+200F) touching right-to-left letters (Persian dates, Hebrew
      addresses).  These only set the direction of neighbouring neutrals; the reordering
      controls (U+202A–U+202E, U+2066–U+2069) are always refused.

    A run of two invisible characters is never ordinary (that is how hidden data is encoded)."""
    ch = text[at]
    before = text[at - 1] if at > 0 else " "
    after = text[at + 1] if at + 1 < len(text) else " "
    if before in _INVISIBLES or after in _INVISIBLES:
        return False
    if ch == "\u200d" and (_emoji_like(before) or 0x1F3FB <= ord(before) <= 0x1F3FF) and _emoji_like(after):
        return True
    if ch in _JOINERS:
        return _joining_script(before) or _joining_script(after)
    if ch in "\u200e\u200f":
        return _rtl(before) or _rtl(after)
    return False


_INVISIBLE_BMP_RE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def _stray_tag_chars(text: str, utf8: bytes) -> bool:
    """Tag characters (U+E0000–U+E007F) outside emoji flag sequences (🏴 + tags + cancel tag);
    they encode in UTF-8 as F3 A0 80..81 xx, so counting them is a byte search."""
    tags = utf8.count(b"\xf3\xa0\x80") + utf8.count(b"\xf3\xa0\x81")
    if not tags:
        return False
    in_flags = sum(len(m.group()) - 1 for m in _FLAG_TAG_SEQUENCE.finditer(text)) if "\U0001f3f4" in text else 0
    return tags != in_flags


def invisible_chars(views: Views) -> Iterator[Span]:
    """Zero-width, bidi-control and tag characters (U+200B–U+200F, U+202A–U+202E,
    U+2060–U+2064, U+2066–U+2069, U+FEFF, U+E0000–U+E007F), except the ordinary uses listed in
    :func:`_ordinary_invisible` and tag characters inside an emoji flag (🏴 + tags).

    The codec maps the BMP ones to byte 0 of the fold view, so a text without them costs one
    ``memchr``; candidates are then checked one by one on the raw text."""
    text = views.text
    if text.isascii():
        return
    if views.has_unmapped and _stray_tag_chars(text, views.utf8):
        yield UNLOCATED
    fold = views.fold
    if INVISIBLE not in fold:
        return
    if views.normalized is not text:  # fold not aligned with the raw text: scan the raw text
        candidates: Iterator[int] = (m.start() for m in _INVISIBLE_BMP_RE.finditer(text))
    else:
        candidates = _byte_positions(fold, INVISIBLE)
    for at in candidates:
        if text[at] == "\x00" or _ordinary_invisible(text, at):
            continue  # NUL shares the byte; joiners in emoji/joining scripts are ordinary
        yield at, at + 1


def _byte_positions(haystack: bytes, needle: bytes) -> Iterator[int]:
    at = haystack.find(needle)
    while at != -1:
        yield at
        at = haystack.find(needle, at + 1)


# --- LLM role and control tags --------------------------------------------------------------------

# each alternative group starts with a literal so the scan skips to "<" / "[" in C
_ROLE_TAG = re.compile(
    rb"<(?:\|[a-z0-9_\x80-\xff?\x1a .:/\-]{1,40}\|>"  # <|im_start|> <|system|> <|endoftext|> <|eot_id|>
    rb"|\|?im_(?:start|end|sep)\|?>"
    rb"|</?sys>>"
    rb"|/?(?:system|system_?prompt|sys_?prompt|assistant|start_of_turn|end_of_turn)>)"
)
_INST_TAG = re.compile(rb"\[/?inst\]")
_ROLE_HEADER = re.compile(
    rb"\#\#(?<!\#\#\#\#\#\#\#\#)\#{0,4}[ \t]*+(?:system|assistant|human)[ \t]*+(?:prompt[ \t]*+)?:"
)
_XML_SYSTEM_VALUE = re.compile(rb"<system>[^\s<]{1,64}</system>")


def role_tags(views: Views) -> Iterator[Span]:
    """Chat-template tokens a model reads as a turn boundary or a new system prompt.  A Maven
    style ``<system>GitHub</system>`` element (one short token on one line) is data, not a tag."""
    fold = views.fold
    if b"##" in fold:
        for match in _ROLE_HEADER.finditer(fold):
            before = fold[max(0, match.start() - 16) : match.start()]  # bounded: no rescan of long lines
            line_start = before.rfind(b"\n") + 1
            if (line_start > 0 or match.start() <= 16) and not before[line_start:].strip(b" \t#"):
                yield match.span()  # "### System:" opening a line
    if b"inst]" in fold:
        for match in _INST_TAG.finditer(fold):
            yield match.span()
    for match in _ROLE_TAG.finditer(fold):
        if match.group().startswith((b"<system>", b"</system>")):
            start = fold.rfind(b"<system>", max(0, match.start() - 80), match.start() + 8)
            if start != -1 and _XML_SYSTEM_VALUE.match(fold, start):
                continue
        yield match.span()


# --- phrase rules -----------------------------------------------------------------------------


def _phrase_detector(phrases: PhraseSet) -> Callable[[Views], Iterator[Span]]:
    return phrases.find


override_en = _phrase_detector(phrasebook.OVERRIDE_EN)
override_fr = _phrase_detector(phrasebook.OVERRIDE_FR)
override_de = _phrase_detector(phrasebook.OVERRIDE_DE)
override_es = _phrase_detector(phrasebook.OVERRIDE_ES)
override_ru = _phrase_detector(phrasebook.OVERRIDE_RU)
persona_override = _phrase_detector(phrasebook.PERSONA)
exfiltration_order = _phrase_detector(phrasebook.EXFIL)
