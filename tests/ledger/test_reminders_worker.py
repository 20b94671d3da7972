"""Due-reminder e-mails sent by the real Celery worker on the real broker, with a frozen clock
(the task's ``now``): each occurrence exactly once — across repeated runs, two runs at once, a
worker restart — and never for a completed occurrence (docs/ledger.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ledger import services, tasks
from ledger.models import ReminderNotice
from tests import worker
from tests.ledger.conftest import Ledgers
from tests.worker import CeleryWorker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
celery_worker = worker.celery_worker
TASK = "ledger.tasks.send_due_reminders"


def remind(ledgers: Ledgers, **payload: Any) -> str:
    body = {"kind": "reminder", "amount": "-900", "currency": "EUR", "counterparty": "Landlord", **payload}
    return services.ledger_record(principal=ledgers.alice, payload=body)["entry"]["id"]


def run(celery_worker: CeleryWorker, *at: datetime) -> list[str]:
    """Queue one run per time in ``at`` (all at once), wait until the worker finished them all,
    and return every result it logged so far."""
    before = len(celery_worker.succeeded(TASK))
    for now in at:
        tasks.send_due_reminders.delay(now=now.isoformat())
    done: list[str] = wait_for(lambda: (got := celery_worker.succeeded(TASK)) and len(got) >= before + len(at) and got,
                               60, 0.1, f"{len(at)} run(s) of {TASK}")  # fmt: skip
    return done[before:]


def test_the_worker_emails_each_due_occurrence_once(ledgers: Ledgers, celery_worker: CeleryWorker) -> None:
    rent = remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat="FREQ=MONTHLY;COUNT=3")
    remind(ledgers, due_at="2027-01-31T09:30:00Z", counterparty="Tax office")
    assert run(celery_worker, datetime(2027, 1, 31, 8, 59, tzinfo=UTC)) == ["0"]
    due = datetime(2027, 1, 31, 10, 0, tzinfo=UTC)
    assert sum(map(int, run(celery_worker, due, due))) == 2  # two runs at once: two e-mails between them
    assert sorted(run(celery_worker, due)) == ["0"]
    mails = celery_worker.emails()
    assert sorted(m["Subject"] for m in mails) == [
        "[MMW] Due: -900.00 EUR to Landlord", "[MMW] Due: -900.00 EUR to Tax office"]  # fmt: skip
    assert {m["To"] for m in mails} == {"alice@example.com"}
    celery_worker.stop()  # a restart remembers what was sent (ReminderNotice rows)
    celery_worker.start()
    assert run(celery_worker, due) == ["0"]
    services.ledger_complete(principal=ledgers.alice, payload={"entry_id": rent, "due_at": "2027-02-28T09:00:00Z"})
    assert run(celery_worker, datetime(2027, 2, 28, 9, 5, tzinfo=UTC)) == ["0"]  # completed: not e-mailed
    assert run(celery_worker, datetime(2027, 3, 31, 9, 5, tzinfo=UTC)) == ["1"]
    assert len(celery_worker.emails()) == 3
    assert ReminderNotice.objects.count() == 3
