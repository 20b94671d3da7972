"""Issue #35's payment data reaches no stored row: records through ``remember``, every screened
text field of a ledger entry through ``ledger_record``, and hence the ledger's CSV export."""

from __future__ import annotations

import csv
import re
import unicodedata
from typing import Any

import pytest

from accounts.keys import Principal, resolve_key
from accounts.models import ALL_SCOPES
from ledger import selectors as ledger_selectors
from ledger import services as ledger_services
from ledger.models import Entry
from memories import services as memory_services
from memories.models import Memory
from tests.conftest import Tenancy
from tests.factories import issue_key

pytestmark = pytest.mark.django_db

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+:[0-9a-f]{8}\]")

# each reproduction, and the digits that must not be stored anywhere
REPRODUCTIONS = {
    "4111 1111 1111 1111 12/29": "4111111111111111",
    "paid 5555555555554444 99": "5555555555554444",
    "amex 378282246310005 1234": "3782822463100051234",
    "visa4111111111111111": "4111111111111111",
    "4111.1111.1111.1111": "4111111111111111",
    "4111\u00a01111\u00a01111\u00a01111": "4111111111111111",
    "４１１１ １１１１ １１１１ １１１１": "4111111111111111",
    "de89370400440532013000": "370400440532013000",
    "cvv 123": "123",
}


def digits_left(text: str) -> str:
    """The digits of ``text`` outside the Guard's markers, as ASCII."""
    return "".join(c for c in unicodedata.normalize("NFKC", MARKER.sub(" ", text)) if c.isdigit())


def principal(tenancy: Tenancy) -> Principal:
    raw = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES, device_label="alice-payments")
    found = resolve_key(raw)
    assert found is not None
    return found


@pytest.mark.parametrize(("text", "gone"), REPRODUCTIONS.items(), ids=list(REPRODUCTIONS))
def test_remember_stores_payment_data_redacted_in_content_and_tags(tenancy: Tenancy, text: str, gone: str) -> None:
    answer = memory_services.memory_remember(
        principal=principal(tenancy), payload={"content": f"note: {text}", "tags": [text]}
    )
    stored = Memory.objects.get(id=answer["id"])
    assert gone not in digits_left(stored.content), stored.content
    assert all(gone not in digits_left(tag) for tag in stored.tags), stored.tags


@pytest.mark.parametrize(("text", "gone"), REPRODUCTIONS.items(), ids=list(REPRODUCTIONS))
def test_every_screened_ledger_field_and_the_csv_export_hold_no_payment_data(
    tenancy: Tenancy, text: str, gone: str
) -> None:
    alice = principal(tenancy)
    payload: dict[str, Any] = {"kind": "transaction", "amount": "-5", "currency": "EUR"}
    for name in ledger_services.SCREENED:
        payload[name] = [text] if name == "tags" else text
    ledger_services.ledger_record(principal=alice, payload=payload)
    entry = Entry.objects.get()
    for name in ledger_services.SCREENED:
        value = getattr(entry, name)
        for item in value if isinstance(value, list) else [value]:
            assert gone not in digits_left(item), (name, item)
    lines = list(ledger_selectors.ledger_rows(principal=alice, payload={}))
    header, row = next(csv.reader(lines[:1])), next(csv.reader(lines[1:]))
    exported = dict(zip(header, row, strict=True))
    for name in ledger_services.SCREENED:
        assert MARKER.search(exported[name]), (name, exported[name])
        assert gone not in digits_left(exported[name]), (name, exported[name])
    assert text not in "".join(lines)
