"""Ledger entries in the export and import (docs/export-format.md, `ledger_entry` lines, format
version 1): exact decimal amounts, what a key exports (its ledger scope and visibility), a round
trip that restores entries with their ids and links, a second import that adds nothing, and
collisions refused."""

from __future__ import annotations

import gzip
import io
import json
from decimal import Decimal
from typing import Any

import pytest

from accounts.keys import resolve_key
from accounts.models import ALL_SCOPES, AuditEvent
from datarights import format as fmt
from datarights import restore
from datarights.models import AuthorLabel
from datarights.restore import jobs
from ledger import services
from ledger.models import Entry, ReminderNotice
from mmw.errors import InvalidInput
from tests.conftest import Tenancy
from tests.datarights.test_export_import import body, key_export, lines_of, operator_export
from tests.factories import issue_key

pytestmark = pytest.mark.django_db


def ledger_key(actor: Any) -> str:
    return issue_key(actor.user, actor.project, scopes=ALL_SCOPES)


def record(key: str, **payload: Any) -> str:
    principal = resolve_key(key)
    assert principal is not None
    body = {"kind": "transaction", "currency": "EUR", **payload}
    return services.ledger_record(principal=principal, payload=body)["entry"]["id"]


def fill(tenancy: Tenancy) -> dict[str, str]:
    alice, bob = ledger_key(tenancy.alice), ledger_key(tenancy.bob)
    principal = resolve_key(alice)
    assert principal is not None
    ids = {
        "fee": record(alice, amount="-1.234", currency="BHD", memo="bank fee", reference="fee-1", tags=["bank"]),
        "yen": record(alice, amount="500", currency="JPY", occurred_at="2026-03-03T10:00:00Z"),
        "big": record(alice, amount="-123456789012345678.99", counterparty="Mega Corp"),
        "rent": record(
            alice,
            kind="reminder",
            amount="-900",
            due_at="2027-01-31T09:00:00Z",
            repeat="FREQ=MONTHLY;COUNT=12",
            counterparty="Landlord",
        ),
        "bob_draft": record(bob, amount="-7", visibility="author", memo="bob's own"),
    }
    ids["reversal"] = services.ledger_reverse(principal=principal, payload={"entry_id": ids["yen"],
                                                                            "reason": "refund"})["entry"]["id"]  # fmt: skip
    ids["paid"] = services.ledger_complete(principal=principal, payload={"entry_id": ids["rent"]})["entry"]["id"]
    return ids


def entry_lines(data: bytes) -> dict[str, dict[str, Any]]:
    return {line["id"]: line for line in lines_of(data) if line["type"] == "ledger_entry"}


def test_entries_are_exported_exactly_after_what_they_reverse_or_complete(tenancy: Tenancy) -> None:
    ids = fill(tenancy)
    data = operator_export(tenancy.alice.account, tenancy.alice.project)
    raw = gzip.decompress(data).decode()
    assert '"amount":"-123456789012345678.99"' in raw  # a string, every digit: never a float
    lines = entry_lines(data)
    assert set(lines) == set(ids.values())
    assert (lines[ids["fee"]]["amount"], lines[ids["fee"]]["currency"]) == ("-1.234", "BHD")
    assert lines[ids["yen"]]["amount"] == "500"
    assert lines[ids["reversal"]]["reverses"] == ids["yen"]
    assert (lines[ids["paid"]]["completes"], lines[ids["paid"]]["completes_due_at"]) == (
        ids["rent"], "2027-01-31T09:00:00+00:00")  # fmt: skip
    order = [line["id"] for line in lines_of(data) if line["type"] == "ledger_entry"]
    assert order.index(ids["yen"]) < order.index(ids["reversal"])
    assert order.index(ids["rent"]) < order.index(ids["paid"])
    assert lines_of(data)[0]["format_version"] == 1


def test_a_key_exports_the_entries_it_reads_and_only_with_ledger_read(tenancy: Tenancy) -> None:
    ids = fill(tenancy)
    assert entry_lines(key_export(tenancy.alice.key)) == {}  # a memory-only key
    assert set(entry_lines(key_export(ledger_key(tenancy.alice)))) == set(ids.values()) - {ids["bob_draft"]}
    assert ids["bob_draft"] in entry_lines(key_export(ledger_key(tenancy.bob)))
    assert entry_lines(key_export(ledger_key(tenancy.charlie))) == {}


def test_round_trip_restores_entries_and_a_second_import_adds_nothing(tenancy: Tenancy) -> None:
    fill(tenancy)
    first = operator_export(tenancy.alice.account, tenancy.alice.project)
    tenancy.bob.user.memberships.all().delete()  # Bob's entry keeps his e-mail as a label
    ReminderNotice.objects.all().delete()
    Entry.objects.filter(project=tenancy.alice.project).delete()
    AuditEvent.objects.filter(data__project=str(tenancy.alice.project.pk)).delete()
    report = restore.import_for_operator(stream=io.BytesIO(first), account=tenancy.alice.account)
    assert report.created["ledger_entry"] == 7
    assert Entry.objects.get(memo="bob's own").author is None
    assert AuthorLabel.objects.filter(kind="ledger_entry", email="bob@example.com").count() == 1
    assert Entry.objects.get(currency="BHD").amount == Decimal("-1.234")
    second = operator_export(tenancy.alice.account, tenancy.alice.project)
    assert body(second) == body(first)
    again = restore.import_for_operator(stream=io.BytesIO(first), account=tenancy.alice.account)
    assert "ledger_entry" not in again.created
    assert again.unchanged["ledger_entry"] == 7
    assert Entry.objects.count() == 7


def test_an_entry_with_other_data_is_a_collision(tenancy: Tenancy) -> None:
    ids = fill(tenancy)
    data = operator_export(tenancy.alice.account, tenancy.alice.project)
    lines = gzip.decompress(data).decode().splitlines()
    changed = [json.loads(line) for line in lines]
    for line in changed:
        if line.get("id") == ids["fee"]:
            line["amount"] = "-1.235"
    edited = "".join(fmt.dumps(line) for line in changed).encode()
    with pytest.raises(restore.Collisions) as refused:
        restore.import_for_operator(stream=io.BytesIO(edited), account=tenancy.alice.account)
    assert f"ledger entry {ids['fee']} exists with other data (amount)" in refused.value.message


def test_a_bad_amount_in_a_file_is_refused_with_its_line(tenancy: Tenancy) -> None:
    ids = fill(tenancy)
    data = operator_export(tenancy.alice.account, tenancy.alice.project)
    Entry.objects.filter(project=tenancy.alice.project).delete()
    changed = [json.loads(line) for line in gzip.decompress(data).decode().splitlines()]
    for line in changed:
        if line.get("id") == ids["fee"]:
            line["amount"] = -1.234
    edited = "".join(fmt.dumps(line) for line in changed).encode()
    with pytest.raises(
        InvalidInput, match=r"^import refused: 1 line\(s\) are invalid: line \d+: amount must be a string$"
    ):
        restore.import_for_operator(stream=io.BytesIO(edited), account=tenancy.alice.account)
    assert not Entry.objects.exists()


def test_a_key_without_ledger_write_cannot_import_entries(tenancy: Tenancy) -> None:
    fill(tenancy)
    data = key_export(ledger_key(tenancy.alice))
    principal = resolve_key(tenancy.alice.key)  # memory scopes only
    assert principal is not None
    refused = jobs.import_start(principal=principal, upload=data)
    assert refused.status == "failed"
    assert refused.error == {"code": "forbidden", "message": "403 Forbidden: key lacks ledger:write", "status": 403}
    allowed = resolve_key(ledger_key(tenancy.alice))
    assert allowed is not None
    done = jobs.import_start(principal=allowed, upload=data)
    assert done.status == "succeeded", done.error
    assert done.report is not None
    assert done.report["unchanged"]["ledger_entry"] == 6
    assert Entry.objects.count() == 7
