"""The card and IBAN detectors try their regexes only where a match can start (a prefilter over
``payments.char_classes``); they must find exactly what a scan of the whole payment text with the
same regexes and the same checks around each match finds (the reference below), so the
redactions are the same.

Checked on the rule table's own cases, on the Guard bench corpora, and on generated texts built
from digit runs, separators of every kind, capitals and lower-case letters, full-width digits and
real-shaped card numbers and IBANs in every grouping."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memories.guard import payments
from memories.guard.rules import RULES
from memories.guard.textviews import Views

CORPORA = Path(__file__).resolve().parents[3] / "bench" / "guard"

CARDS = [
    "4111111111111111",
    "4111 1111 1111 1111",
    "5555-5555-5555-4444",
    "3782 822463 10005",
    "3056 930902 5904",
    "6011111111111117",
    "2223003122003222",
    "4222222222222",
    "4111 1111 1111 1111 123",
    "6200000000000005",
    "4111.1111.1111.1111",
    "4111\u00a01111\u00a01111\u00a01111",
    "4111\u20091111\u20091111\u20091111",
    "4111 - 1111 - 1111 - 1111",
    "4111  1111  1111  1111",
    "4111\u20131111\u20131111\u20131111",
    "４１１１ １１１１ １１１１ １１１１",
    "３７８２８２２４６３１０００５",
]
IBANS = [
    "DE89370400440532013000",
    "DE89 3704 0044 0532 0130 00",
    "GB82 WEST 1234 5698 7654 32",
    "FR1420041010050500013M02606",
    "NL91ABNA0417164300",
    "NO9386011117947",
    "MT84MALT011000012345MTLCAST001S",
    "de89370400440532013000",
    "gb82 west 1234 5698 7654 32",
    "De89 3704 0044 0532 0130 00",
    "DE89\u00a03704\u00a00044\u00a00532\u00a00130\u00a000",
]

PIECES = st.one_of(
    st.sampled_from(CARDS),
    st.sampled_from(IBANS),
    st.text(alphabet="0123456789", min_size=1, max_size=20),
    st.sampled_from([*"\u00a0\u2009\u2013\u3000"]),
    st.sampled_from(
        [*" -./\nxA_+,", "DE", "GB", "de", "iban ", "card: ", "visa", "12/29", "٣", "０", "é", "😀", "\u200b"]
    ),
    st.text(alphabet="ABDEGNRSTabdegnrst0123456789 -.", max_size=12),
)
TEXTS = st.lists(PIECES, max_size=12).map("".join)


def reference_cards(text: str) -> list[tuple[int, int]]:
    """Cards found by ``finditer`` over the whole payment text, each match checked as the
    detector checks it."""
    payment_text = Views(text).payment_text
    out: list[tuple[int, int]] = []
    previous_end = -1
    for match in payments.CARD_NUMBER.finditer(payment_text):
        card = payments._card_at(payment_text, match, previous_end)
        if card is not None:
            span, digits = card
            code = payments._code_after(payment_text, span[1], digits)
            out.append(span)
            previous_end = span[1] if code is None else code[1]
    return out


def reference_ibans(text: str) -> list[tuple[int, int]]:
    """IBANs found by ``finditer`` over the whole payment text."""
    payment_text = Views(text).payment_text
    spans = (payments._iban_from(payment_text, m) for m in payments.IBAN_START.finditer(payment_text))
    return [span for span in spans if span is not None]


def detected(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    views = Views(text)
    return list(payments.card_numbers(views)), list(payments.ibans(views))


def assert_same_as_full_scan(text: str) -> None:
    assert detected(text) == (reference_cards(text), reference_ibans(text)), text


def test_the_rules_use_the_detectors() -> None:
    funcs = {rule.id: rule.func for rule in RULES}
    assert funcs["card_number"] is payments.card_numbers
    assert funcs["card_cvv"] is payments.card_codes
    assert funcs["iban"] is payments.ibans


def test_every_known_card_and_iban_passes_its_prefilter() -> None:
    for card in CARDS:
        for text in (card, f"paid {card}.", f"({card})", f"{card} on 12 May"):
            assert detected(text)[0], text
            assert_same_as_full_scan(text)
    for iban in IBANS:
        for text in (iban, f"to {iban} by Friday", f"iban: {iban}.", f"{iban} on 12 May"):
            assert detected(text)[1], text
            assert_same_as_full_scan(text)


def test_ordinary_text_offers_no_start() -> None:
    """What the prefilter is for: prose with years, prices and times offers no offset to try."""
    views = Views("Met on 2024-03-15 at 10:30, paid 1250 EUR for 3 nights; room 204, ES 2024 spec.")
    classes = payments.char_classes(views)
    assert len(classes) == len(views.text)
    assert not payments._starts(classes, payments._CARD_STARTS)
    assert not payments._starts(classes, payments._IBAN_STARTS)


def test_same_as_full_scan_on_the_guard_corpora() -> None:
    for name in ("secrets.jsonl", "heldout.jsonl", "ordinary.jsonl", "poisoning.jsonl", "financial.jsonl"):
        for line in (CORPORA / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                assert_same_as_full_scan(json.loads(line)["text"])


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_same_as_full_scan_on_generated_texts(text: str) -> None:
    assert_same_as_full_scan(text)
