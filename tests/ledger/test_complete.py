"""ledger_complete (docs/reference/ledger_complete.md): one completion per occurrence, held by the
database; a completed occurrence leaves ledger_upcoming and the due-reminder e-mails."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from ledger import selectors, services
from ledger.models import Entry, Kind
from ledger.reminders import due_occurrences
from mmw.errors import Conflict, InvalidInput, NotFound
from tests.ledger.conftest import Ledgers

pytestmark = pytest.mark.django_db
NOW = datetime(2027, 1, 15, tzinfo=UTC)


def remind(ledgers: Ledgers, **payload: Any) -> str:
    body = {"kind": "reminder", "amount": "-900", "currency": "EUR", "counterparty": "Landlord",
            "category": "rent", **payload}  # fmt: skip
    return services.ledger_record(principal=ledgers.alice, payload=body)["entry"]["id"]


def complete(principal: Any, entry_id: str, **payload: Any) -> dict[str, Any]:
    return dict(services.ledger_complete(principal=principal, payload={"entry_id": entry_id, **payload})["entry"])


def upcoming_days(ledgers: Ledgers) -> list[str]:
    answer = selectors.ledger_upcoming(principal=ledgers.alice, payload={"until": "2027-04-01T00:00:00Z"}, now=NOW)
    return [o["due_at"][:10] for o in answer["reminders"]]


def test_completing_pays_the_earliest_open_occurrence_and_leaves_upcoming(ledgers: Ledgers):
    rent = remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat="FREQ=MONTHLY;COUNT=12")
    assert upcoming_days(ledgers) == ["2027-01-31", "2027-02-28", "2027-03-31"]
    paid = complete(ledgers.alice, rent, memo="transfer 8812")
    assert (paid["kind"], paid["amount"], paid["currency"]) == ("transaction", "-900.00", "EUR")
    assert (paid["completes"], paid["completes_due_at"]) == (rent, "2027-01-31T09:00:00+00:00")
    assert (paid["counterparty"], paid["category"], paid["memo"]) == ("Landlord", "rent", "transfer 8812")
    assert upcoming_days(ledgers) == ["2027-02-28", "2027-03-31"]
    march = complete(ledgers.alice, rent, due_at="2027-03-31T09:00:00Z")
    assert march["completes_due_at"] == "2027-03-31T09:00:00+00:00"
    assert upcoming_days(ledgers) == ["2027-02-28"]
    balance = selectors.ledger_balance(principal=ledgers.alice, payload={})["balances"]
    assert balance == [{"currency": "EUR", "balance": "-1800.00", "entries": 2}]


def test_an_occurrence_is_completed_once(ledgers: Ledgers):
    bill = remind(ledgers, due_at="2027-01-20T09:00:00Z")
    complete(ledgers.alice, bill)
    with pytest.raises(Conflict) as excinfo:
        complete(ledgers.bob, bill, due_at="2027-01-20T09:00:00Z")
    assert excinfo.value.message == "409 Conflict: occurrence was already completed"
    with pytest.raises(Conflict, match="every occurrence of this reminder is completed"):
        complete(ledgers.alice, bill)
    assert Entry.objects.filter(completes__pk=bill).count() == 1


def test_the_database_refuses_a_second_completion_of_one_occurrence(ledgers: Ledgers):
    bill = Entry.objects.get(pk=remind(ledgers, due_at="2027-01-20T09:00:00Z"))
    first = Entry.objects.get(pk=complete(ledgers.alice, str(bill.pk))["id"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Entry.objects.create(
            account=first.account, project=first.project, kind=Kind.TRANSACTION, amount=first.amount,
            currency="EUR", occurred_at=NOW, content_digest="x", completes=bill, completes_due_at=bill.due_at,
        )  # fmt: skip


def test_what_cannot_be_completed(ledgers: Ledgers):
    rent = remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat="FREQ=MONTHLY")
    with pytest.raises(InvalidInput, match="due_at is not an occurrence of this reminder"):
        complete(ledgers.alice, rent, due_at="2027-02-01T09:00:00Z")
    paid = services.ledger_record(principal=ledgers.alice, payload={"kind": "transaction", "amount": "-5",
                                                                     "currency": "EUR"})  # fmt: skip
    with pytest.raises(Conflict, match="only a reminder can be completed"):
        complete(ledgers.alice, paid["entry"]["id"])
    cancelled = remind(ledgers, due_at="2027-02-01T09:00:00Z")
    services.ledger_reverse(principal=ledgers.alice, payload={"entry_id": cancelled, "reason": "void"})
    with pytest.raises(Conflict, match="reminder was cancelled"):
        complete(ledgers.alice, cancelled)
    with pytest.raises(NotFound, match="ledger entry not found"):
        complete(ledgers.charlie, rent)
    private = remind(ledgers, due_at="2027-02-02T09:00:00Z", visibility="author")
    with pytest.raises(NotFound, match="ledger entry not found"):
        complete(ledgers.bob, private)


def test_a_completed_occurrence_is_not_emailed(ledgers: Ledgers):
    rent = remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat="FREQ=MONTHLY;COUNT=3")
    at = datetime(2027, 1, 31, 10, tzinfo=UTC)
    assert len(due_occurrences(now=at)) == 1
    complete(ledgers.alice, rent)
    assert due_occurrences(now=at) == []
    assert len(due_occurrences(now=datetime(2027, 2, 28, 10, tzinfo=UTC))) == 1


def test_entries_count_against_the_plans_ledger_limit_on_both_surfaces(ledgers: Ledgers):
    from billing.models import Plan, Subscription
    from tests.ledger.test_surfaces import post

    assert dict(Plan.objects.values_list("code", "ledger_entries_per_project")) == {
        "free": 1_000, "pro": 100_000, "team": 1_000_000}  # fmt: skip
    plan = Subscription.objects.get(account=ledgers.alice.account).plan
    assert plan is not None
    Plan.objects.filter(pk=plan.pk).update(ledger_entries_per_project=3)
    bill = remind(ledgers, due_at="2027-01-20T09:00:00Z")
    paid = services.ledger_record(principal=ledgers.alice, payload={"kind": "transaction", "amount": "-5",
                                                                     "currency": "EUR", "reference": "r1"})  # fmt: skip
    complete(ledgers.alice, bill)  # the third entry: reversals and completions count too
    status, refused = post(ledgers.alice_key, "entries", {"kind": "transaction", "amount": "-6", "currency": "EUR"})
    assert (status, refused["error"]) == (403, {"code": "limit_exceeded",
                                                "message": "project ledger entry limit exceeded"})  # fmt: skip
    status, reversal = post(ledgers.alice_key, "reverse", {"entry_id": paid["entry"]["id"], "reason": "x"})
    assert (status, reversal["error"]["message"]) == (403, "project ledger entry limit exceeded")
    status, replay = post(ledgers.alice_key, "entries", {"kind": "transaction", "amount": "-5", "currency": "EUR",
                                                         "reference": "r1"})  # fmt: skip
    assert (status, replay["replayed"]) == (200, True)  # a replay is not a new entry
    assert Entry.objects.count() == 3


# --- times at the end of what can be stored (issue #35) --------------------------------------------

UNTIL_PAST_9999 = "repeat must look like FREQ=MONTHLY;INTERVAL=1;UNTIL=2027-12-31 (UNTIL must lie between the years 1 and 9999 once converted to UTC)"


@pytest.mark.parametrize("until", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_a_repeat_until_past_year_9999_in_utc_is_refused_clearly(ledgers: Ledgers, until: str):
    """Year 9999 at -14:00 is year 10000 in UTC, which Python cannot hold: it was a 500."""
    with pytest.raises(InvalidInput) as excinfo:
        remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat=f"FREQ=MONTHLY;UNTIL={until}")
    assert excinfo.value.message == UNTIL_PAST_9999


def test_a_repeat_until_the_last_day_python_holds_is_kept(ledgers: Ledgers):
    rent = remind(ledgers, due_at="2027-01-31T09:00:00Z", repeat="FREQ=MONTHLY;UNTIL=9999-12-31")
    assert Entry.objects.get(pk=rent).repeat == "FREQ=MONTHLY;UNTIL=9999-12-31T23:59:59.999999Z"
    assert upcoming_days(ledgers) == ["2027-01-31", "2027-02-28", "2027-03-31"]


def test_occurrences_that_would_fall_after_year_9999_do_not_exist(ledgers: Ledgers):
    """A series whose next step passes the year 9999 ends there (it overflowed into a 500)."""
    late = remind(ledgers, due_at="9998-06-01T00:00:00Z", repeat="FREQ=YEARLY;INTERVAL=366")
    with pytest.raises(InvalidInput, match="due_at is not an occurrence of this reminder"):
        complete(ledgers.alice, late, due_at="9998-12-01T00:00:00Z")
    daily = remind(ledgers, due_at="9998-12-31T12:00:00-14:00", repeat="FREQ=DAILY;INTERVAL=366")
    assert complete(ledgers.alice, daily)["completes_due_at"] == "9999-01-01T02:00:00+00:00"
    with pytest.raises(Conflict, match="every occurrence of this reminder is completed"):
        complete(ledgers.alice, daily)
