"""Currencies and exact amounts: ISO 4217 codes and their minor units, kept as data
(``iso4217.json``), and the one parser of an amount string. Never a float anywhere."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

from mmw.errors import InvalidInput

MINOR_UNITS: dict[str, int] = json.loads((Path(__file__).with_name("iso4217.json")).read_text())["minor_units"]
MAX_INTEGER_DIGITS = 18  # the column is numeric(22, 4): 18 digits before the point, 4 after
_AMOUNT = re.compile(r"(?P<sign>-?)(?P<int>0|[1-9][0-9]*)(?:\.(?P<frac>[0-9]+))?")


def check_currency(code: str) -> str:
    """An ISO 4217 code, upper case as written (``usd`` is refused, not guessed)."""
    if code not in MINOR_UNITS:
        raise InvalidInput(f"currency must be an ISO 4217 code such as EUR or USD (got {code[:8]!r})")
    return code


def parse_amount(value: str, currency: str) -> Decimal:
    """The exact amount of ``value``: an optional ``-``, digits without leading zeros, and at most
    the currency's minor units after a point (JPY none, EUR two, BHD three). Refused: exponents,
    ``+``, blanks, grouping commas, more fraction digits than the currency has, zero and ``-0``,
    and more than 18 digits before the point."""
    match = _AMOUNT.fullmatch(value)
    if match is None:
        raise InvalidInput('amount must be a decimal string such as "-1240.18" (no exponent, sign only -)')
    units = MINOR_UNITS[currency]
    fraction = match.group("frac") or ""
    if len(fraction) > units:
        raise InvalidInput(f"amount has more than {units} decimal places for {currency}")
    if len(match.group("int")) > MAX_INTEGER_DIGITS:
        raise InvalidInput(f"amount exceeds {MAX_INTEGER_DIGITS} digits before the decimal point")
    amount = Decimal(value)
    if amount == 0:
        raise InvalidInput("amount must not be zero")
    return amount


def format_amount(amount: Decimal, currency: str) -> str:
    """The decimal string of ``amount`` with exactly the currency's minor units (``"1240.18"``, ``"500"``)."""
    units = MINOR_UNITS[currency]
    return str(amount.quantize(Decimal(1).scaleb(-units)))
