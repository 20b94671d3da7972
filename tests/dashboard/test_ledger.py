"""The dashboard's Ledger tab (docs/ledger.md, docs/dashboard.md): entries with filters, balances,
upcoming reminders and their Complete button, a confirmed Reverse, the streamed CSV export with
cells escaped against formula injection, and other tenants' projects answering 404."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.principals import principal_for_user
from ledger import services
from ledger.models import Entry
from mmw import csv_safe
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db


def record(t: Any, **payload: Any) -> str:
    principal = principal_for_user(t.user, t.project)
    assert principal is not None
    body = {"kind": "transaction", "currency": "EUR", **payload}
    return services.ledger_record(principal=principal, payload=body)["entry"]["id"]


def export(client: Client, project: Any, **query: str) -> list[list[str]]:
    response = client.get(reverse("dashboard:ledger-export", args=[project.pk]), query)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.streaming
    assert getattr(response, "is_async", False)
    assert response["Cache-Control"] == "no-store"
    body = b"".join(response).decode()
    return list(csv.reader(io.StringIO(body)))


def test_the_ledger_tab_lists_filters_sums_and_shows_what_is_due(tenancy: Tenancy) -> None:
    record(tenancy.alice, amount="-1240.18", currency="USD", counterparty="AWS", category="hosting")
    record(tenancy.alice, amount="2500", counterparty="Acme", category="sales")
    due = (timezone.now() + timedelta(days=3)).isoformat()
    record(tenancy.alice, kind="reminder", amount="-900", counterparty="Landlord", due_at=due)
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:ledger", args=[tenancy.alice.project.pk])
    page = alice.get(url).content.decode()
    assert ">Ledger</a>" in page
    assert "-1240.18 USD" in page
    assert "2500.00 EUR" in page
    assert 'data-testid="ledger-balances"' in page
    assert "-1240.18" in page
    assert 'data-testid="ledger-upcoming"' in page
    assert "Landlord" in page
    assert "Complete</button>" in page
    filtered = alice.get(url, {"currency": "USD"}).content.decode()
    assert "AWS" in filtered
    assert "Acme" not in filtered
    refused = alice.get(url, {"currency": "usd"})
    assert refused.status_code == 400
    assert "currency must be an ISO 4217 code" in refused.content.decode()


def test_complete_and_confirmed_reverse_from_the_tab(tenancy: Tenancy) -> None:
    due = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    rent = record(tenancy.alice, kind="reminder", amount="-900", counterparty="Landlord", due_at=due.isoformat())
    paid = record(tenancy.alice, amount="-5", counterparty="Cafe")
    alice = client_for(tenancy.alice.user)
    project = tenancy.alice.project.pk
    done = alice.post(reverse("dashboard:ledger-complete", args=[project, rent]), {"due_at": due.isoformat()},
                      follow=True)  # fmt: skip
    assert "Completed: -900.00 EUR" in done.content.decode()
    assert Entry.objects.filter(completes__pk=rent, completes_due_at=due).count() == 1
    again = alice.post(reverse("dashboard:ledger-complete", args=[project, rent]), {"due_at": due.isoformat()},
                       follow=True)  # fmt: skip
    assert "409 Conflict: occurrence was already completed" in again.content.decode()
    unconfirmed = alice.post(reverse("dashboard:ledger-reverse", args=[project, paid]), {"reason": "dup"}, follow=True)
    assert "tick the box" in unconfirmed.content.decode()
    assert not Entry.objects.filter(reverses__pk=paid).exists()
    alice.post(reverse("dashboard:ledger-reverse", args=[project, paid]), {"reason": "dup", "confirm": "1"})
    assert Entry.objects.get(reverses__pk=paid).memo == "dup"


def test_the_csv_export_streams_the_filtered_entries_with_escaped_cells(tenancy: Tenancy) -> None:
    record(tenancy.alice, amount="-12.50", counterparty="=HYPERLINK(\"http://evil\")", memo="@SUM(A1:A9)",
           category="+cmd", tags=["-x"])  # fmt: skip
    record(tenancy.alice, amount="7", currency="USD", counterparty="Shop")
    rows = export(client_for(tenancy.alice.user), tenancy.alice.project, currency="EUR")
    header, *body = rows
    assert header[:4] == ["id", "kind", "amount", "currency"]
    assert len(body) == 1
    row = dict(zip(header, body[0], strict=True))
    assert row["amount"] == "-12.50"  # a plain number stays a number
    assert row["counterparty"] == '\'=HYPERLINK("http://evil")'
    assert (row["memo"], row["category"], row["tags"]) == ("'@SUM(A1:A9)", "'+cmd", "'-x")
    assert row["author"] == "alice@example.com"


@pytest.mark.parametrize(
    ("value", "cell"),
    [("=1+1", "'=1+1"), ("+1", "'+1"), ("-1+2", "'-1+2"), ("@x", "'@x"), ("\tx", "'\tx"), ("-7.25", "-7.25"),
     ("plain", "plain"), ("", "")],
)  # fmt: skip
def test_csv_cells_are_escaped_against_formula_injection(value: str, cell: str) -> None:
    assert csv_safe.cell(value) == cell


def test_other_tenants_and_memory_only_principals_get_nothing(tenancy: Tenancy) -> None:
    theirs = record(tenancy.charlie, amount="-1", counterparty="Charlie's rent")
    alice = client_for(tenancy.alice.user)
    project = tenancy.charlie.project.pk
    assert alice.get(reverse("dashboard:ledger", args=[project])).status_code == 404
    assert alice.get(reverse("dashboard:ledger-export", args=[project])).status_code == 404
    reversed_attempt = alice.post(reverse("dashboard:ledger-reverse", args=[tenancy.alice.project.pk, theirs]),
                                  {"reason": "x", "confirm": "1"})  # fmt: skip
    assert reversed_attempt.status_code == 404
    assert not Entry.objects.filter(reverses__pk=theirs).exists()
    bob_rows = export(client_for(tenancy.bob.user), tenancy.alice.project)
    assert len(bob_rows) == 1  # the header: Charlie's entry is in another account


def test_an_auditor_sees_the_ledger_but_no_buttons(tenancy: Tenancy, dana: Any) -> None:
    due = (timezone.now() + timedelta(days=3)).isoformat()
    record(tenancy.alice, kind="reminder", amount="-900", counterparty="Landlord", due_at=due)
    record(tenancy.alice, amount="-5", counterparty="Cafe")
    page = client_for(dana).get(reverse("dashboard:ledger", args=[tenancy.alice.project.pk])).content.decode()
    assert "Landlord" in page
    assert "Cafe" in page
    assert "Complete</button>" not in page
    assert "Reverse</button>" not in page
