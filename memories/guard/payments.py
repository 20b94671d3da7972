"""Detectors for payment identifiers: card numbers (PANs) and IBANs (SPEC §12).

A digit run is a card number only if it has a card's length and grouping, an issuer prefix a
card network uses, and a valid Luhn check digit; an IBAN only if its country's length (the
table below, data from the SWIFT IBAN registry) and its ISO 7064 mod-97 checksum hold.  So an
order number, a phone number or an ISO date is left alone unless it is, by chance, both shaped
and checksummed like one (one in ten for Luhn, one in 97 for an IBAN).

Speed contract (as ``secrets``): neither regex scans the text. One byte translation of the shared
``encoded`` view (:func:`char_classes`: digit, capital, separator, other) and ``bytes.find`` give
the only offsets where a match can start — a card's first eight digits (``dddddddd``, or two runs
of four around one space or hyphen), an IBAN's ``CCdd`` — and the regex is tried anchored there
(``match(text, pos)``, whose look-behinds still see the text before ``pos``). Matches of either
regex cannot overlap (a match must follow a non-digit, non-letter), so these anchored tries find
exactly what ``finditer`` over the whole text finds (tested against it:
tests/memories/guard/test_prefilter.py); ordinary text with years and prices costs ~0.1 ms per
100,000 characters instead of ~1.1 ms for the two scans. Every repetition is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memories.guard.textviews import Views
from memories.guard.types import Span

_DIGITS = "0123456789"

# --- card numbers ---------------------------------------------------------------------------

# 13-19 digits written as one run, as 4-4-4-4(-1..3) groups, or Amex/Diners 4-6-5 / 4-6-4, with
# one separator (space or hyphen) used throughout; never part of a longer number or word.
CARD_NUMBER = re.compile(
    r"[2-6](?<![\w.,/+-][2-6])(?<![0-9][ -][2-6])"  # every issuer prefix starts with 2-6
    r"(?:[0-9]{12,18}"
    r"|[0-9]{3}(?P<sep>[ -])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}(?:(?P=sep)[0-9]{1,3})?"
    r"|[0-9]{3}(?P<sep2>[ -])[0-9]{6}(?P=sep2)[0-9]{4,5})"
    r"(?![\w]|[.,/][0-9]|[ -][0-9])"
)


def issuer_length_ok(digits: str) -> bool:
    """A card network's issuer prefix with one of its lengths: Visa 4 (13, 16, 19), Mastercard
    51-55 and 2221-2720 (16), Amex 34/37 (15), Diners 30/36/38/39 (14, 16, 19), Discover
    6011/644-649/65 (16, 19), JCB 3528-3589 (16, 19), UnionPay 62 (16-19), Maestro 50/56-58/63/67/69
    (13-19)."""
    n, p2, p4 = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
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


def card_numbers(views: Views) -> Iterator[Span]:
    """Card numbers (PANs) in the usual groupings; see :data:`CARD_NUMBER`."""
    for match in _anchored(CARD_NUMBER, views, _CARD_STARTS, _ISSUER_FIRST):
        digits = match.group().replace(" ", "").replace("-", "")
        if card_number_ok(digits):
            yield match.span()
        elif match.group("sep") and len(digits) > 16 and card_number_ok(digits[:16]):
            yield match.start(), match.start() + 19  # 4-4-4-4 followed by its CVC or expiry


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

IBAN_START = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}")
_IBAN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def iban_ok(iban: str) -> bool:
    """Country length and the ISO 7064 mod-97 checksum (``iban`` upper case, no spaces)."""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    rotated = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rotated)) % 97 == 1


def _iban_at(text: str, start: int, length: int) -> int | None:
    """End offset of an IBAN of ``length`` characters starting at ``start``, written as one run
    or in groups split by single spaces; ``None`` when the text stops short or runs on."""
    taken, at = 0, start
    while taken < length:
        if at < len(text) and text[at] in _IBAN_CHARS:
            taken, at = taken + 1, at + 1
        elif taken >= 4 and at + 1 < len(text) and text[at] == " " and text[at + 1] in _IBAN_CHARS:
            at += 1
        else:
            return None
    return None if at < len(text) and (text[at].isalnum() or text[at] == "_") else at


def ibans(views: Views) -> Iterator[Span]:
    """IBANs of a registry country, with their checksum, compact or grouped by spaces."""
    text = views.text
    for match in _anchored(IBAN_START, views, _IBAN_STARTS, _CAPITAL_FIRST):
        length = IBAN_LENGTHS.get(match.group()[:2])
        end = None if length is None else _iban_at(text, match.start(), length)
        if end is not None and iban_ok(text[match.start() : end].replace(" ", "")):
            yield match.start(), end


# --- where a match can start --------------------------------------------------------------------

_CLASS_TABLE = bytes(
    ord("0") if chr(b).isdigit() and b < 128 else ord("A") if 65 <= b <= 90 else ord("-") if b in (32, 45) else ord(".")
    for b in range(256)
)
_CARD_STARTS = (b"00000000", b"0000-0000")  # compact; 4-4-4-4, 4-6-5 and 4-6-4 groups
_IBAN_STARTS = (b"AA00",)  # country code and check digits
_ISSUER_FIRST = frozenset("23456")
_CAPITAL_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def char_classes(views: Views) -> bytes:
    """``views.encoded`` (one byte per character) with ASCII digits as ``0``, ASCII capitals as
    ``A``, space and hyphen as ``-`` and everything else as ``.``; computed once per text."""
    classes = views.memo.get("char_classes")
    if classes is None:
        classes = views.memo["char_classes"] = views.encoded.translate(_CLASS_TABLE)
    assert isinstance(classes, bytes)
    return classes


def _starts(classes: bytes, needles: tuple[bytes, ...]) -> list[int]:
    """Every offset (overlapping occurrences included) where one of ``needles`` occurs."""
    found: set[int] = set()
    for needle in needles:
        at = classes.find(needle)
        while at != -1:
            found.add(at)
            at = classes.find(needle, at + 1)
    return sorted(found)


def _anchored(
    pattern: re.Pattern[str], views: Views, needles: tuple[bytes, ...], first: frozenset[str]
) -> Iterator[re.Match[str]]:
    """``pattern``'s matches, tried only at the offsets where ``needles`` occur in
    :func:`char_classes` and the text's character is in ``first``; left to right, as ``finditer``."""
    text = views.text
    if not has_digits(views):
        return
    for at in _starts(char_classes(views), needles):
        if text[at] in first:
            match = pattern.match(text, at)
            if match is not None:
                yield match


def has_digits(views: Views) -> bool:
    """The text holds an ASCII digit (short-circuits at the first one; counting them all would
    cost more than the scan it saves)."""
    text = views.text
    return any(d in text for d in _DIGITS)
