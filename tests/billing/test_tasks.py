"""Beat jobs: quota warnings at 80 % and 100 % (once, re-armed when usage drops), monthly usage
snapshots, and the seeded plans surviving a flushed database."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.core import mail

from billing import counters, gate, selectors, tasks
from billing.models import Plan, QuotaAlert, UsageSnapshot
from memories.models import Memory
from tests.billing.conftest import Clock, Plans
from tests.conftest import Tenancy
from tests.memories.rest import Api


def run(task: Any, capture: Any) -> int:
    with capture(execute=True):
        return int(task())


@pytest.mark.django_db
def test_quota_warnings_go_out_once_at_80_and_100_percent_and_rearm(
    tenancy: Tenancy, plans: Plans, django_capture_on_commit_callbacks: Any
) -> None:
    Plan.objects.filter(code="free").update(records_per_project=5, projects_per_account=None)
    api = Api(tenancy.alice.key)
    ids = [api.ok_remember(content=f"fact {i}")["id"] for i in range(3)]
    assert run(tasks.check_quotas, django_capture_on_commit_callbacks) == 0

    api.ok_remember(content="fact 3")  # 4 of 5: 80 %
    assert run(tasks.check_quotas, django_capture_on_commit_callbacks) == 1
    assert run(tasks.check_quotas, django_capture_on_commit_callbacks) == 0  # not twice
    warning = mail.outbox[-1]
    assert warning.to == ["alice@example.com"]
    assert warning.subject == "[MMW] 80 % of your plan's limit reached — Alice & Co"
    assert "project alpha holds 4 of its 5 records (80 %)" in warning.body
    assert selectors.billing_url(tenancy.alice.account) in warning.body

    api.ok_remember(content="fact 4")  # 5 of 5: 100 %
    assert run(tasks.check_quotas, django_capture_on_commit_callbacks) == 1
    assert "new records are refused" in mail.outbox[-1].body
    assert set(QuotaAlert.objects.values_list("threshold", flat=True)) == {80, 100}

    for memory_id in ids:
        assert api.forget(memory_id=memory_id)[0] == 200  # 2 of 5: both re-arm
    assert run(tasks.check_quotas, django_capture_on_commit_callbacks) == 0
    assert not QuotaAlert.objects.exists()
    assert len(mail.outbox) == 2


@pytest.mark.django_db
def test_a_project_count_at_the_plan_limit_is_warned(
    tenancy: Tenancy, plans: Plans, django_capture_on_commit_callbacks: Any
) -> None:
    Plan.objects.filter(code="free").update(projects_per_account=1)
    assert run(tasks.check_quotas, django_capture_on_commit_callbacks) == 2  # Alice's and Charlie's accounts
    assert {m.subject for m in mail.outbox} == {
        "[MMW] 100 % of your plan's limit reached — Alice & Co",
        "[MMW] 100 % of your plan's limit reached — charlie@example.com",
    }


@pytest.mark.django_db
def test_monthly_snapshots_record_records_calls_and_peaks(tenancy: Tenancy, plans: Plans, clock: Clock) -> None:
    api = Api(tenancy.alice.key)
    ids = [api.ok_remember(content=f"fact {i}")["id"] for i in range(3)]
    api.search(query="fact")
    month = dt.datetime.fromtimestamp(clock.now, tz=dt.UTC)
    bucket = gate.monthly_calls_bucket(str(tenancy.alice.project.pk), f"{month:%Y%m}")
    assert counters.peek(bucket) == 4

    tasks.snapshot_usage.run()  # beat's entry point, with the real clock's month
    from billing.usage import usage_snapshot_take

    usage_snapshot_take(now=month)
    assert api.forget(memory_id=ids[0])[0] == 200
    api.search(query="fact")
    calls = counters.peek(bucket)
    usage_snapshot_take(now=month)
    row = UsageSnapshot.objects.get(project=tenancy.alice.project, month=month.date().replace(day=1))
    assert (row.records, row.peak_records, row.calls, row.plan_code) == (2, 3, calls, "free")
    assert calls >= 5
    total = UsageSnapshot.objects.get(account=tenancy.alice.account, project=None, month=row.month)
    assert (total.records, total.projects, total.calls) == (2, 1, calls)
    assert selectors.usage_history(tenancy.alice.account)[-1] == total
    assert UsageSnapshot.objects.filter(account=tenancy.charlie.account, project=None).exists()


@pytest.mark.django_db(transaction=True)
def test_a_flushed_database_gets_the_default_plans_back() -> None:
    """Flushing (as each transactional test does) empties the plan table; post_migrate refills it."""
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0)
    assert sorted(Plan.objects.values_list("code", flat=True)) == ["free", "pro", "team"]
    assert selectors.default_plan() == Plan.objects.get(code="free")


@pytest.mark.django_db
def test_tasks_run_on_an_empty_database_and_purge_counters(plans: Plans) -> None:
    assert Memory.objects.count() == 0
    assert tasks.expire_grace_periods() == 0
    assert tasks.check_quotas() == 0
    counters.hit("rate:key:gone", ttl=-5)
    assert tasks.purge_rate_counters() == 1
