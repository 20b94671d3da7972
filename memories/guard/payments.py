"""Detectors for payment data: card numbers (PANs), card security codes (CVV/CVC) and IBANs.

A digit run is a card number only if it has a card's length and grouping, an issuer prefix a
card network uses, and a valid Luhn check digit; an IBAN only if its country's length (the
table below, data from the SWIFT IBAN registry) and its ISO 7064 mod-97 checksum hold.  So an
order number, a phone number or an ISO date is left alone unless it is, by chance, both shaped
and checksummed like one (one in ten for Luhn, one in 97 for an IBAN).  A security code has no
checksum: it is three or four digits after its label (``cvv``, ``CVC2``, ``cryptogramme``,
``код CVV``…), or right after a card number (and its expiry date).

All three read :attr:`Views.payment_text`: the text with full-width ASCII and mathematical digits
as ASCII and every kind of space or dash as `` `` / ``-``, one character per character, so a span
found there is the same span of the raw text (which is what gets redacted).

Speed contract (as ``secrets``): the card and IBAN regexes do not scan the text. One byte
translation (:func:`char_classes`: digit, letter, separator, other) and a literal-first ``re``
scan of it give the only offsets where a match can start — a card's first eight digits
(``dddddddd``, or two runs of four around separators), an IBAN's ``CCdd``, neither inside a
number or a word — and the regex is tried anchored there (``match(text, pos)``); what surrounds
a match is checked in Python on a few characters.  These
anchored tries find exactly what ``finditer`` over the whole text finds (tested against it:
tests/memories/guard/test_prefilter.py).  Security-code labels are found by ``bytes.find`` in the
lower-case view, only when the word gate says the label occurs.  Every repetition is bounded.

Why one module of this length: three detectors (card numbers, security codes, IBANs) with the tables
and checksums each needs; they share the digit-run scanning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memories.guard.lexicon import LEXICON
from memories.guard.textviews import Views, encode, find_all, fold_literal, lower_literal
from memories.guard.types import Span

_DIGITS = "0123456789"
_NON_ASCII_DIGIT = re.compile(r"[^\x00-\x7f\D]")

# --- card numbers ---------------------------------------------------------------------------

_SEP = r" - | {1,2}|-|\."
"""Between a card's groups (in ``payment_text``, where every space is `` `` and every dash ``-``):
one space, two, a hyphen, a dot or a spaced hyphen, the same throughout the number."""

CARD_NUMBER = re.compile(
    r"[2-6](?:(?P<compact>[0-9]{12,18})"  # every issuer prefix starts with 2-6
    r"|[0-9]{3}(?P<sep>" + _SEP + r")[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}"
    r"|[0-9]{3}(?P<sep2>" + _SEP + r")[0-9]{6}(?P=sep2)[0-9]{4,5})"
    r"(?![0-9])"
)
"""A card's digits as one run of 13-19, as 4-4-4-4 groups or Amex/Diners 4-6-5 / 4-6-4; what may
stand around it is decided by :func:`_card_at`."""

_NEXT_GROUP = re.compile(r"(?P<sep>" + _SEP + r")(?P<digits>[0-9]{1,4})(?![0-9])")
_GLUED_LABEL_MAX = 20


def issuer_length_ok(digits: str) -> bool:
    """A card network's issuer prefix with one of its lengths: Visa 4 (13, 16, 19), Mir 2200-2204
    (16-19), Mastercard 51-55 and 2221-2720 (16), Amex 34/37 (15), Diners 30/36/38/39 (14, 16,
    19), Discover 6011/644-649/65 (16, 19), JCB 3528-3589 (16, 19), UnionPay 62 (16-19), Maestro
    50/56-58/63/67/69 (13-19)."""
    n, p2, p4 = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 2200 <= p4 <= 2204:  # Mir
        return 16 <= n <= 19
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if p2 in (30, 36, 38, 39):
        return n in (14, 16, 19)
    if p4 == 6011 or p2 == 65 or 6440 <= p4 <= 6499 or 3528 <= p4 <= 3589:
        return n in (16, 19)
    if p2 == 62:
        return 16 <= n <= 19
    return p2 in (50, 56, 57, 58, 63, 67, 69)


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check digit of a card number holds."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def card_number_ok(digits: str) -> bool:
    """A known issuer prefix with one of its lengths, a valid Luhn digit, and not one digit repeated."""
    return issuer_length_ok(digits) and luhn_ok(digits) and len(set(digits)) > 1


@dataclass(frozen=True)
class Card:
    """A card number found in the text: its span, its digits, and the span of the security code
    written right after it (``None`` when there is none)."""

    span: Span
    digits: str
    code: Span | None


def _left_ok(text: str, start: int, previous_end: int) -> bool:
    """What stands before a card's first digit: not a digit, not ``. / + - _`` glued to it (a
    decimal, a path, a phone number, an identifier), not a digit before the spaces and dashes in
    between (the number would be the tail of a longer grouped one) unless that digit ends the
    card (or its code) found just before, at ``previous_end`` (two cards in a row: the first one
    is redacted, so a second pass would see the second one alone); a label glued to it
    (``visa4111…``, ``карта4111…``) only when that word is letters alone (``0x4111…`` and
    ``a1b24111…`` are not labels)."""
    if start == 0:
        return True
    before = text[start - 1]
    if before.isdigit() or before in "./+-_":
        return False
    if before == " ":
        at = start - 1
        while at > 0 and start - at < 3 and text[at - 1] in " -.":
            at -= 1
        return at == 0 or at == previous_end or not text[at - 1].isdigit()
    if before.isalpha():
        at = start - 1
        while at > 0 and start - at < _GLUED_LABEL_MAX and text[at - 1].isalpha():
            at -= 1
        return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")
    return True


def _right_ok(text: str, end: int) -> bool:
    """What follows a card's last digit: not a letter or ``_`` glued to it, not ``.`` or ``/`` and a
    digit (a decimal, a date or a path going on; a comma is a field of a CSV row as often as a
    decimal comma, and no amount has sixteen digits)."""
    if end >= len(text):
        return True
    after = text[end]
    if after.isalpha() or after == "_":
        return False
    return not (after in "./" and end + 1 < len(text) and text[end + 1].isdigit())


def _card_at(text: str, match: re.Match[str], previous_end: int = -1) -> tuple[Span, str] | None:
    """The card number at ``match`` (its span and digits), or ``None``; ``previous_end``: where
    the card found before it (and its code) ends.  A 4-4-4-4 number may go on with a short group
    (a 19-digit card, 4-4-4-4-3); a following group of four digits makes it a longer number, not a
    card."""
    start, end = match.span()
    if not _left_ok(text, start, previous_end):
        return None
    sep = match.group("sep")
    digits = match.group("compact")
    digits = match.group()[0] + digits if digits is not None else re.sub(r"[^0-9]", "", match.group())
    if sep is not None:
        following = _NEXT_GROUP.match(text, end)
        if following is not None and following.group("sep") == sep:
            if len(following.group("digits")) == 4:
                return None  # a fifth group of four: not a card
            longer = digits + following.group("digits")
            if card_number_ok(longer) and _right_ok(text, following.end()):
                return (start, following.end()), longer
    if card_number_ok(digits) and _right_ok(text, end):
        return (start, end), digits
    return None


_TAIL = re.compile(
    r"[ \t\n,;|:/]{1,3}"
    r"(?:(?:(?:exp(?:iry|ires|iration)?|valid(?: thru| until)?|срок|gültig bis|expire le|vence)\.?:? ?)?"
    r"(?:0[1-9]|1[0-2])(?: ?[/.-] ?|[,;|])(?:20)?[0-9]{2}(?![0-9])[ \t\n,;|:/]{1,3})?"
    r"(?P<code>[0-9]{3,4})(?!\w|[.,/:-][0-9])",
    re.IGNORECASE,
)
"""After a card number (and spaces, a line break or ``, ; | : /``): its expiry date (``12/29``,
``12/2029``, ``exp 12-29``, ``12,2029`` in a CSV row) if any, then an
unlabelled security code standing alone (no letter, digit or ``_`` glued after it: a rule that
ran earlier decided on what stands beside it)."""


def _code_after(text: str, card_end: int, digits: str) -> Span | None:
    """The security code written right after a card (and its expiry): four digits for American
    Express (34/37), three for the others."""
    tail = _TAIL.match(text, card_end)
    if tail is None:
        return None
    wanted = 4 if digits[:2] in ("34", "37") else 3
    return tail.span("code") if len(tail.group("code")) == wanted else None


def cards(views: Views) -> list[Card]:
    """Every card number in the text, left to right, with the code after it; found once per
    views (the security-code and card-number rules share them)."""
    found = views.memo.get("cards")
    if found is None:
        found = list[Card]()
        previous_end = -1
        for match in _anchored(CARD_NUMBER, views, _CARD_STARTS, _ISSUER_FIRST):
            text = match.string  # the payment text
            card = _card_at(text, match, previous_end)
            if card is not None:
                span, digits = card
                code = _code_after(text, span[1], digits)
                found.append(Card(span, digits, code))
                previous_end = span[1] if code is None else code[1]
        views.memo["cards"] = found
    assert isinstance(found, list)
    return found


def card_numbers(views: Views) -> Iterator[Span]:
    """Card numbers (PANs) in every common shape; see :data:`CARD_NUMBER` and :func:`_card_at`."""
    for card in cards(views):
        yield card.span


# --- card security codes ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Label:
    """A security-code label: how it starts in the lower-case view, the part of the fold view's
    vocabulary that must be present for it to occur, and whether it is generic (``security
    code``, ``CID``: a code only in a text that speaks of a card)."""

    literal: bytes
    gate: bytes
    generic: bool = False


def _word(word: str, *, whole: bool = False) -> bytes:
    """A vocabulary part: a word starting with ``word`` (``whole``: the word itself)."""
    (part,) = LEXICON.parts(b" " + fold_literal(word) + (b" " if whole else b""))
    return part


_LABELS = (
    _Label(b"cvv", _word("cvv")),  # cvv, cvv2, CVV-код, cvv123
    _Label(b"cvc", _word("cvc")),
    _Label(b"cvn", _word("cvn")),
    _Label(b"cav2", _word("cav2", whole=True)),
    _Label(b"cryptogramme", _word("cryptogramme")),
    _Label(lower_literal("prüfnummer"), _word("prüfnummer")),
    _Label(lower_literal("kartenprüfnummer"), _word("kartenprüfnummer")),
    _Label(b"card verification", _word("verification", whole=True)),
    _Label(b"cid", _word("cid", whole=True), generic=True),
    _Label(b"csc", _word("csc", whole=True), generic=True),
    _Label(b"security code", _word("security", whole=True), generic=True),
    _Label(lower_literal("code de sécurité"), _word("sécurité", whole=True), generic=True),
    _Label(lower_literal("código de seguridad"), _word("seguridad", whole=True), generic=True),
    _Label(b"sicherheitscode", _word("sicherheitscode", whole=True), generic=True),
    _Label(lower_literal("prüfziffer"), _word("prüfziffer", whole=True), generic=True),
    _Label(lower_literal("код безопасности"), _word("безопасности", whole=True), generic=True),
)
_CARD_WORDS = tuple(  # a word starting with one of these
    _word(word)
    for word in ("card", "carte", "karte", "tarjeta", "карт", "visa", "mastercard", "amex", "maestro", "unionpay")
)

CARD_CODE = re.compile(
    r"(?<![^\W\d_])"
    r"(?:cv[vc]2?|cvn2?|cav2|cryptogramme|(?:karten)?prüfnummer|card verification (?:value|code)|cid|csc"
    r"|(?:card )?security code|code de sécurité|código de seguridad|sicherheitscode|prüfziffer|код безопасности)"
    r"(?![^\W\d_])"
    r"(?:[ \t:=#./()-]{0,3}"
    r"(?:code|код|number|no|nr|numéro|numero|nummer|номер|visuel|de la carte|de la tarjeta|der karte|карты"
    r"|on the card|of the card|is|est|ist|es)(?![^\W\d_])){0,3}"
    r"[ \t:=#.-]{0,4}"
    r"(?P<code>[0-9]{3,4})(?!\w|[.,/:][0-9])",
    re.IGNORECASE,
)
"""A label, up to three filler words (``code``, ``number``, ``is``, ``de la carte``…) and 3-4 digits
that do not go on as a longer number, a decimal or a date (nor start a card number: see
:func:`card_codes`)."""


def card_codes(views: Views) -> Iterator[Span]:
    """Card security codes (CVV, CVC, CID…): after their label, or right after a card number and
    its expiry.  Generic labels (``security code``, ``CID``, ``код безопасности``) count only in
    a text that speaks of a card (a card word or a card number)."""
    for card in cards(views):
        if card.code is not None:
            yield card.code
    labels = [label for label in _LABELS if label.gate in views.vocab]
    if not labels:
        return
    lower = _payment_lower(views)
    card_starts = {card.span[0] for card in cards(views)}
    context = bool(card_starts) or any(word in views.vocab for word in _CARD_WORDS)
    for label in labels:
        if label.generic and not context:
            continue
        for at in find_all(lower, label.literal):
            match = CARD_CODE.match(views.payment_text, at)
            if match is not None and match.start("code") not in card_starts:  # "CVV 4111 1111…" is a card
                yield match.span("code")


def _payment_lower(views: Views) -> bytes:
    """:attr:`Views.lower` of :attr:`Views.payment_text` (full-width letters found as ASCII):
    :attr:`Views.lower` already reads NBSP and dashes as the payment text does, so only the
    characters outside the codec are set."""
    return _patched(views, "payment_lower", views.lower, lambda char: char.lower())


def _patched(views: Views, key: str, view: bytes, byte_of: Callable[[str], str]) -> bytes:
    """``view`` (one byte per character) with the bytes of :attr:`Views.payment_fixes` set to
    ``byte_of`` their replacement; ``view`` itself when there are none.  Kept in ``views.memo``."""
    if not views.payment_fixes:
        return view
    patched = views.memo.get(key)
    if patched is None:
        edited = bytearray(view)
        for position, replacement in views.payment_fixes:
            edited[position] = ord(byte_of(replacement))
        patched = views.memo[key] = bytes(edited)
    assert isinstance(patched, bytes)
    return patched


# --- IBANs ----------------------------------------------------------------------------------

IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip
"""Length of each country's IBAN (SWIFT IBAN registry)."""

IBAN_START = re.compile(r"[A-Za-z](?<![A-Za-z0-9][A-Za-z])[A-Za-z][0-9]{2}")
_IBAN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def iban_ok(iban: str) -> bool:
    """Country length and the ISO 7064 mod-97 checksum (``iban`` without spaces, any case)."""
    iban = iban.upper()
    if IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    rotated = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rotated)) % 97 == 1


def _iban_at(text: str, start: int, length: int) -> int | None:
    """End offset of an IBAN of ``length`` characters starting at ``start``, written as one run
    or in groups split by single spaces or hyphens; ``None`` when the text stops short or runs on."""
    taken, at = 0, start
    while taken < length:
        if at < len(text) and text[at] in _IBAN_CHARS:
            taken, at = taken + 1, at + 1
        elif taken >= 4 and at + 1 < len(text) and text[at] in " -" and text[at + 1] in _IBAN_CHARS:
            at += 1
        else:
            return None
    return None if at < len(text) and (text[at].isalnum() or text[at] == "_") else at


def _grouping_ok(written: str, after: str) -> bool:
    """An IBAN in capitals may be grouped by single spaces anyhow, as before; one with a hyphen
    or a lower-case letter only in the printed groups of four, with one kind of separator and no
    hyphenated group after it (so lower-case words and numbers of prose, joined across their
    spaces, and longer hyphenated codes are never read as one).  ``after``: the character after
    it, if any."""
    if "-" in written:
        return " " not in written and after != "-" and _in_fours(written.split("-"))
    if written.upper() == written or " " not in written:
        return True
    return _in_fours(written.split(" "))


def _in_fours(groups: list[str]) -> bool:
    """The printed grouping: fours, the last group of one to four."""
    return all(len(group) == 4 for group in groups[:-1]) and 1 <= len(groups[-1]) <= 4


def _iban_from(text: str, match: re.Match[str]) -> Span | None:
    """The IBAN starting at ``match`` (of :data:`IBAN_START`), or ``None``."""
    start = match.start()
    length = IBAN_LENGTHS.get(match.group()[:2].upper())
    end = None if length is None else _iban_at(text, start, length)
    if end is None or not _grouping_ok(text[start:end], text[end : end + 1]):
        return None
    if not iban_ok(text[start:end].replace(" ", "").replace("-", "")):
        return None
    return start, end


def ibans(views: Views) -> Iterator[Span]:
    """IBANs of a registry country, with their checksum, compact or grouped by spaces, any case."""
    for match in _anchored(IBAN_START, views, _IBAN_STARTS, _LETTER_FIRST):
        span = _iban_from(match.string, match)
        if span is not None:
            yield span


# --- where a match can start --------------------------------------------------------------------

_CODEC_SEPARATORS = encode("\u00a0\u2013\u2014")  # NBSP, en and em dash: the codec's own bytes


def _class_of(byte: int) -> int:
    if 48 <= byte <= 57:
        return ord("0")
    if 65 <= byte <= 90 or 97 <= byte <= 122:
        return ord("A")
    return ord("-") if byte in (32, 45, 46) or byte in _CODEC_SEPARATORS else ord(".")


_CLASS_TABLE = bytes(_class_of(b) for b in range(256))
# eight digits, or four, separators and four, not after a digit
_CARD_STARTS = re.compile(rb"0000(?<!00000)(?=0000|-{1,3}0000)")
_IBAN_STARTS = re.compile(rb"AA00(?<![0A]AA00)")  # country code and check digits, not inside a word
_ISSUER_FIRST = frozenset("23456")
_LETTER_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def char_classes(views: Views) -> bytes:
    """:attr:`Views.payment_text`, one byte per character, with ASCII digits as ``0``, ASCII
    letters as ``A``, every space, hyphen, dash and dot as ``-`` and everything else as ``.``;
    one ``bytes.translate`` of the shared ``encoded`` view (and the characters outside the codec
    set one by one), computed once per text."""
    classes = views.memo.get("char_classes")
    if classes is None:
        translated = views.encoded.translate(_CLASS_TABLE)
        classes = views.memo["char_classes"] = _patched(views, "classes", translated, _class_char)
    assert isinstance(classes, bytes)
    return classes


def _class_char(char: str) -> str:
    return chr(_class_of(ord(char)))


def _starts(classes: bytes, anchor: re.Pattern[bytes]) -> list[int]:
    """Every offset where ``anchor`` matches :func:`char_classes`.  Each anchor starts with a
    literal (``re`` skips to it in C) and its look-behind, checked in C too, drops the hits inside
    a number or a word; its matches never hide a valid start (in a run of digits the first
    ``0000`` is at the run's start, and ``AA00`` cannot overlap itself)."""
    return [match.start() for match in anchor.finditer(classes)]


def _anchored(
    pattern: re.Pattern[str], views: Views, anchor: re.Pattern[bytes], first: frozenset[str]
) -> Iterator[re.Match[str]]:
    """``pattern``'s matches over :attr:`Views.payment_text`, tried only at the offsets
    :func:`_starts` gives and where the character is in ``first``; left to right."""
    if not has_digits(views):
        return
    for at in _starts(char_classes(views), anchor):
        text = views.payment_text  # built only for a text with a start
        if text[at] in first:
            match = pattern.match(text, at)
            if match is not None:
                yield match


def has_digits(views: Views) -> bool:
    """The text holds a decimal digit, ASCII or not (short-circuits at the first ASCII one;
    counting them all would cost more than the scan it saves)."""
    text = views.text
    if any(d in text for d in _DIGITS):
        return True
    return not text.isascii() and _NON_ASCII_DIGIT.search(text) is not None
