"""Payment data through screen_text: card numbers in every common shape, card security codes and
IBANs in any case are removed (issue #35), with the markers docs/guard.md describes."""

from __future__ import annotations

import hashlib
import re
import unicodedata

import pytest

from memories.guard import Redaction, screen_text

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+:[0-9a-f]{8}\]")


def sha8(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()[:8]


def digits_left(text: str) -> str:
    """Every digit still in ``text`` outside the markers, as ASCII, in order."""
    bare = MARKER.sub(" ", text)
    return "".join(c for c in unicodedata.normalize("NFKC", bare) if c.isdigit())


# (text, the digits that must be gone, the rules that must redact them)
REPRODUCTIONS = [
    ("4111 1111 1111 1111 12/29", "4111111111111111", ["card_number"]),
    ("paid 5555555555554444 99", "5555555555554444", ["card_number"]),
    ("amex 378282246310005 1234", "3782822463100051234", ["card_number", "card_cvv"]),
    ("visa4111111111111111", "4111111111111111", ["card_number"]),
    ("4111.1111.1111.1111", "4111111111111111", ["card_number"]),
    ("4111\u00a01111\u00a01111\u00a01111", "4111111111111111", ["card_number"]),
    ("4111\u20091111\u20091111\u20091111", "4111111111111111", ["card_number"]),
    ("４１１１ １１１１ １１１１ １１１１", "4111111111111111", ["card_number"]),
    ("de89370400440532013000", "89370400440532013000", ["iban"]),
    ("cvv 123", "123", ["card_cvv"]),
]


@pytest.mark.parametrize(("text", "gone", "rules"), REPRODUCTIONS, ids=[r[0] for r in REPRODUCTIONS])
def test_issue_35_reproductions_are_redacted(text: str, gone: str, rules: list[str]) -> None:
    result = screen_text(text)
    assert gone not in digits_left(result.text), result.text
    assert [r.rule_id for r in result.redactions] == rules


def test_a_full_width_card_number_is_redacted_over_its_original_characters() -> None:
    card = "４１１１\u3000１１１１\u3000１１１１\u3000１１１１"
    result = screen_text(f"carte {card} refusée")
    assert result.text == f"carte [REDACTED:card_number:{sha8(card)}] refusée"


def test_a_card_with_nbsp_groups_keeps_the_digest_of_what_was_written() -> None:
    card = "4111\u00a01111\u00a01111\u00a01111"
    assert screen_text(card).redactions == (Redaction("card_number", sha8(card), "content"),)


def test_a_security_code_marker_carries_no_digest() -> None:
    """A digest of three digits would give them away (1,000 values to try)."""
    result = screen_text("cvv 123")
    assert result.text == "cvv [REDACTED:card_cvv:00000000]"
    assert result.redactions == (Redaction("card_cvv", "00000000", "content"),)


def test_the_code_after_a_card_is_redacted_and_its_expiry_is_kept() -> None:
    card = "4111 1111 1111 1111"
    result = screen_text(f"{card} 12/29 123")
    assert result.text == f"[REDACTED:card_number:{sha8(card)}] 12/29 [REDACTED:card_cvv:00000000]"


def test_american_express_takes_a_four_digit_code_and_other_cards_three() -> None:
    assert screen_text("amex 378282246310005 1234").text.endswith("[REDACTED:card_cvv:00000000]")
    visa = screen_text("paid 4111111111111111 1234")
    assert visa.text.endswith(" 1234")
    assert [r.rule_id for r in visa.redactions] == ["card_number"]


@pytest.mark.parametrize(
    ("alone", "with_a_card"),
    [
        ("security code 4521", "card security code 4521"),
        ("CID 1234", "Amex CID 1234"),
        ("код безопасности: 123", "код безопасности карты: 123"),
        ("Sicherheitscode 074", "Sicherheitscode der Karte 074"),
        ("security code 452", "4111 1111 1111 1111, security code 452"),
    ],
)
def test_a_generic_code_label_counts_only_in_a_text_about_a_card(alone: str, with_a_card: str) -> None:
    assert screen_text(alone).redactions == ()
    assert "card_cvv" in [r.rule_id for r in screen_text(with_a_card).redactions]


def test_a_lower_case_iban_counts_as_one_run_or_in_printed_groups_of_four() -> None:
    assert screen_text("de89 3704 0044 0532 0130 00").redactions
    assert not screen_text("de89 370400 440532 013000").redactions
    assert screen_text("DE89 370400 440532 013000").redactions  # capitals: any single-space grouping, as before


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1111 exp 12/29 cvv 123",
        "４１１１－１１１１－１１１１－１１１１ cvv １２３",
        "visa4111111111111111 | 12/29 | 123",
        "iban: de89 3704 0044 0532 0130 00, cvc2 456",
        "cvv 123 4111111111111111",
        "CVV 4111 1111 1111 1111",
        "cvv 123 4111 1111 1111 1111 12/29 456",
    ],
)
def test_screening_payment_data_twice_changes_nothing(text: str) -> None:
    once = screen_text(text)
    assert once.redactions
    assert screen_text(once.text).text == once.text
    assert screen_text(once.text).redactions == ()


def test_refuse_mode_refuses_a_security_code_naming_its_rule() -> None:
    from memories.guard import GuardRejection

    with pytest.raises(GuardRejection, match=r"secret detected \(card_cvv\)"):
        screen_text("cvv 123", secrets_mode="refuse")


@pytest.mark.parametrize("iban", ["BE63284142430705", "BE39934232199997", "NO4393834242955", "no5051360581811"])
def test_an_iban_whose_digits_would_pass_for_a_card_is_redacted_whole_as_an_iban(iban: str) -> None:
    """After the country code, these digits have a card network's prefix, length and Luhn digit."""
    assert screen_text(f"IBAN {iban}").text == f"IBAN [REDACTED:iban:{sha8(iban)}]"


def test_a_code_label_before_a_card_number_takes_the_code_not_the_card() -> None:
    card = "4111 1111 1111 1111"
    both = f"cvv [REDACTED:card_cvv:00000000] [REDACTED:card_number:{sha8(card)}]"
    assert screen_text(f"cvv 123 {card}").text == both
    assert screen_text(f"CVV {card}").text == f"CVV [REDACTED:card_number:{sha8(card)}]"


@pytest.mark.parametrize("filler", ["", "中文" * 2_000, "😀 " * 1_500])
def test_a_full_width_card_is_found_however_many_characters_lie_outside_the_codec(filler: str) -> None:
    """Up to 2,000 such characters each is looked at; past that, one scan of the text."""
    card = "４１１１\u2009１１１１\u2009１１１１\u2009１１１１"
    result = screen_text(f"{filler} карта {card} ｃｖｖ：１２３")
    assert result.text.endswith(f"карта [REDACTED:card_number:{sha8(card)}] ｃｖｖ：[REDACTED:card_cvv:00000000]")
