"""Due reminders e-mail their author once per occurrence, with a frozen clock: a
second run, a run after a restart, and a cancelled reminder send nothing more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core import mail

from ledger import services
from ledger.models import ReminderNotice
from ledger.reminders import send_due_reminders
from tests.ledger.conftest import Ledgers

pytestmark = pytest.mark.django_db(transaction=True)  # e-mails leave on commit


def remind(ledgers: Ledgers, **payload: Any) -> dict[str, Any]:
    body = {"kind": "reminder", "amount": "-900", "currency": "EUR", "counterparty": "Landlord", **payload}
    return dict(services.ledger_record(principal=ledgers.alice, payload=body)["entry"])


def test_each_occurrence_is_emailed_once_to_its_author(ledgers: Ledgers) -> None:
    remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat="FREQ=MONTHLY;COUNT=3")
    before = datetime(2027, 1, 31, 8, 59, tzinfo=UTC)
    assert send_due_reminders(now=before) == 0
    at_due = datetime(2027, 1, 31, 9, 0, tzinfo=UTC)
    assert send_due_reminders(now=at_due) == 1
    assert send_due_reminders(now=at_due + timedelta(minutes=5)) == 0  # the next beat run
    assert [m.to for m in mail.outbox] == [["alice@example.com"]]
    assert "-900.00 EUR to Landlord" in mail.outbox[0].subject
    assert send_due_reminders(now=datetime(2027, 2, 28, 9, 1, tzinfo=UTC)) == 1  # clamped to February's end
    assert send_due_reminders(now=datetime(2027, 2, 28, 9, 1, tzinfo=UTC)) == 0
    assert ReminderNotice.objects.count() == 2
    assert len(mail.outbox) == 2


def test_a_stopped_beat_catches_up_a_day_and_cancelled_reminders_stay_silent(ledgers: Ledgers) -> None:
    remind(ledgers, due_at="2027-03-01T09:00:00Z")
    cancelled = remind(ledgers, due_at="2027-03-01T10:00:00Z")
    services.ledger_reverse(principal=ledgers.alice, payload={"entry_id": cancelled["id"], "reason": "paid early"})
    assert send_due_reminders(now=datetime(2027, 3, 2, 8, 0, tzinfo=UTC)) == 1  # 23 h late: still sent
    remind(ledgers, due_at="2027-03-05T09:00:00Z")
    assert send_due_reminders(now=datetime(2027, 3, 7, 9, 0, tzinfo=UTC)) == 0  # two days late: not sent
    assert len(mail.outbox) == 1
