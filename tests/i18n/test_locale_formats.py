"""Issue #42: numbers, money and dates per locale in the pages, and the ledger's amounts exact —
formatting groups the digits and changes the decimal sign, it never rounds, pads or drops a digit.
English pages show amounts as the API answers them."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import translation

from accounts.keys import resolve_key
from accounts.models import ALL_SCOPES
from dashboard.templatetags.mmw_dashboard import exact_date, exact_time, money
from ledger import services as ledger_services
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import issue_key

pytestmark = pytest.mark.django_db
NBSP, NNBSP = "\u00a0", "\u202f"


@pytest.mark.parametrize(
    ("language", "amount", "shown"),
    [
        ("en", "-1240.18", "-1240.18"),
        ("ru", "-1240.18", f"-1{NBSP}240,18"),
        ("fr", "-1240.18", f"-1{NNBSP}240,18"),
        ("ru", "0.10", "0,10"),  # the trailing zero is the amount's own: kept
        ("fr", "7", "7"),  # no digits after the point: none added
        ("ru", "-0.000001", "-0,000001"),
        ("ru", "123456789012345.678901", f"123{NBSP}456{NBSP}789{NBSP}012{NBSP}345,678901"),
        ("fr", "999999999999999999.99", NNBSP.join(["999"] * 6) + ",99"),
        ("ru", "not a number", "not a number"),
    ],
)
def test_money_groups_and_changes_the_decimal_sign_but_never_rounds(language: str, amount: str, shown: str) -> None:
    with translation.override(language):
        assert money(amount) == shown


@pytest.mark.parametrize("language", ["ru", "fr"])
@pytest.mark.parametrize("amount", ["0.01", "-12.50", "1000000.005", "31415926535.8979323846", "-0.1", "100"])
def test_money_keeps_every_digit_of_the_amount(language: str, amount: str) -> None:
    with translation.override(language):
        shown = money(amount)
    back = Decimal(re.sub(rf"[{NBSP}{NNBSP}]", "", shown).replace(",", "."))
    assert back == Decimal(amount)
    assert str(back) == amount  # the same digits, the same exponent


@pytest.mark.parametrize(
    ("language", "day", "moment"),
    [
        ("en", "7 May 2027", "7 May 2027, 09:00"),
        ("ru", "7 мая 2027", "7 мая 2027, 09:00"),
        ("fr", "7 mai 2027", "7 mai 2027, 09:00"),
    ],
)
def test_dates_use_the_languages_month_names(language: str, day: str, moment: str) -> None:
    with translation.override(language):
        assert exact_date("2027-05-07") == day
        shown = exact_time("2027-05-07T09:00:00Z")
    assert f">{moment}</time>" in shown
    assert 'datetime="2027-05-07T09:00:00+00:00"' in shown


@pytest.mark.parametrize("language", ["ru", "fr"])
def test_the_ledger_page_shows_amounts_per_locale_and_exact(tenancy: Tenancy, language: str) -> None:
    principal = resolve_key(issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES))
    assert principal is not None
    for amount in ("-1240.18", "2500.005"):
        ledger_services.ledger_record(
            principal=principal,
            payload={"kind": "transaction", "amount": amount, "currency": "BHD", "counterparty": "X"},
        )
    alice = tenancy.alice.user
    alice.language = language
    alice.save(update_fields=["language"])
    page = client_for(alice).get(reverse("dashboard:ledger", args=[tenancy.alice.project.pk])).content.decode()
    sep = NBSP if language == "ru" else NNBSP
    balances = page.split('data-testid="ledger-balances"', 1)[1].split("</table>", 1)[0]
    entries = page.split('data-testid="ledger-entries"', 1)[1].split("</table>", 1)[0]
    assert f"-1{sep}240,180 BHD" in entries  # the dinar's three minor units, as the ledger answers
    assert f"2{sep}500,005 BHD" in entries
    assert f"1{sep}259,825" in balances  # the sum, to the thousandth: nothing rounded
    assert "-1240.180" not in page
