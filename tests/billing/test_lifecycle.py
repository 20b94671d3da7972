"""An account's life against localstripe: subscribe, fail a payment, grace, suspension, payment,
cancellation, upgrades, and what support staff can do."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts import services as account_services
from accounts.models import AuditEvent, User
from billing import selectors, services, tasks
from billing.models import Plan, Subscription
from mmw.errors import InvalidInput
from tests.billing.conftest import TEAM_PRICE, Deliver, Plans, notice_for, subscribe, subscription_of
from tests.billing.localstripe import LocalStripe
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db
State = Subscription.State


def audit_actions(tenancy: Tenancy) -> list[str]:
    return list(
        AuditEvent.objects.filter(account=tenancy.alice.account, action__startswith="billing.")
        .order_by("id")
        .values_list("action", flat=True)
    )


def test_payment_failure_grace_suspension_and_payment_bring_the_account_back(
    tenancy: Tenancy,
    plans: Plans,
    stripe_server: LocalStripe,
    deliver: Deliver,
    django_capture_on_commit_callbacks: Any,
) -> None:
    api = Api(tenancy.alice.key)
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    kept = api.ok_remember(content="the staging database is db-stage-2")

    invoice = stripe_server.fail_renewal(paid.customer, paid.subscription)
    before = timezone.now()
    assert deliver(stripe_server.event("invoice.payment_failed", paid.customer)).json()["outcome"] == "grace_started"
    sub = subscription_of(tenancy.alice)
    assert sub.state == State.GRACE
    assert sub.stripe_status == "past_due"
    assert sub.grace_ends_at is not None
    assert dt.timedelta(days=7) <= sub.grace_ends_at - before < dt.timedelta(days=7, minutes=1)
    grace_notice = notice_for(tenancy.alice)
    assert grace_notice is not None
    assert f"{sub.grace_ends_at:%Y-%m-%d %H:%M} UTC" in grace_notice
    assert [m.to for m in mail.outbox][-1] == ["alice@example.com"]  # the owner; Bob is a member
    assert grace_notice in mail.outbox[-1].body

    status, answer = api.remember(content="a new fact")
    assert (status, answer["error"]) == (402, {"code": "billing_notice", "message": grace_notice})
    assert api.search(query="staging database")["notice"] == grace_notice  # reads still work

    tasks.expire_grace_periods()  # beat, before the end: nothing happens
    assert subscription_of(tenancy.alice).state == State.GRACE
    Subscription.objects.filter(pk=sub.pk).update(grace_ends_at=timezone.now() - dt.timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.expire_grace_periods() == 1
    assert subscription_of(tenancy.alice).state == State.SUSPENDED
    suspended = notice_for(tenancy.alice)
    assert suspended is not None
    assert "suspended because its grace period ended" in suspended
    assert mail.outbox[-1].subject.startswith("[MMW] MMW account suspended")
    assert api.forget(memory_id=kept["id"])[0] == 402

    stripe_server.pay(paid.customer, invoice)
    assert deliver(stripe_server.event("invoice.payment_succeeded", paid.customer)).json()["outcome"] == "activated"
    sub = subscription_of(tenancy.alice)
    assert (sub.state, sub.grace_ends_at, sub.suspended_at, sub.plan) == (State.ACTIVE, None, None, plans.pro)
    assert "notice" not in api.search(query="staging database")
    api.ok_remember(content="writes work again")
    assert audit_actions(tenancy) == [
        "billing.plan_changed",
        "billing.grace_started",
        "billing.suspended",
        "billing.reactivated",
    ]


def test_a_cancelled_subscription_falls_back_to_the_free_plan(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    stripe_server.cancel(paid.subscription)
    deliver(stripe_server.event("customer.subscription.deleted", paid.customer))
    sub = subscription_of(tenancy.alice)
    assert (sub.plan, sub.state, sub.stripe_status, sub.stripe_subscription_id) == (
        plans.free,
        State.ACTIVE,
        "canceled",
        "",
    )
    assert sub.stripe_customer_id == paid.customer  # kept for the next Checkout and the invoices
    Api(tenancy.alice.key).ok_remember(content="free accounts write")


def test_without_a_free_plan_a_cancelled_account_has_no_subscription(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    Plan.objects.filter(pk=plans.free.pk).update(is_default=False)
    stripe_server.cancel(paid.subscription)
    deliver(stripe_server.event("customer.subscription.deleted", paid.customer))
    sub = subscription_of(tenancy.alice)
    assert (sub.plan, sub.state) == (None, State.NONE)
    notice = notice_for(tenancy.alice)
    assert notice == (
        "[MMW Notice]: this account has no active subscription; search, recall_context, validate_memory and "
        "reading memories still work but remember and forget do not; choose a plan at "
        f"https://mmw.example/billing/{tenancy.alice.account.tenant_id}/ to write again"
    )


def test_a_new_checkout_replaces_and_cancels_the_previous_subscription(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    first = subscribe(stripe_server, deliver, tenancy.alice)
    tenant = tenancy.alice.account.tenant_id
    upgrade = stripe_server.subscribe(first.customer, TEAM_PRICE, tenant)
    from tests.billing.localstripe import checkout_completed

    assert deliver(checkout_completed(first.customer, upgrade, tenant)).json()["outcome"] == "subscribed"
    sub = subscription_of(tenancy.alice)
    assert (sub.plan, sub.stripe_subscription_id) == (plans.team, upgrade)
    assert stripe_server.status(first.subscription) == "canceled"
    # Stripe then reports the old one's end: stale news about a replaced subscription.
    deleted = [
        e
        for e in stripe_server.events("customer.subscription.deleted", first.customer)
        if e["data"]["object"]["id"] == first.subscription
    ]
    assert deliver(deleted[-1]).json()["outcome"] == "stale"
    assert subscription_of(tenancy.alice).plan == plans.team


def test_a_new_account_starts_on_the_free_plan_and_without_one_on_no_subscription(plans: Plans) -> None:
    user, _ = account_services.user_get_or_create(email="dana@example.com")
    assert Subscription.objects.get(account=account_services.personal_account(user=user)).plan == plans.free
    Plan.objects.filter(pk=plans.free.pk).update(is_default=False)
    erin, _ = account_services.user_get_or_create(email="erin@example.com")
    account = account_services.personal_account(user=erin)
    assert (Subscription.objects.get(account=account).state, selectors.billing_state(account).plan) == (
        State.NONE,
        None,
    )


def test_staff_suspend_holds_through_payments_until_reinstated(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    staff = User.objects.create_superuser("support@mmw.example", "pw")
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    services.subscription_suspend(account=tenancy.alice.account, actor=staff, reason="abuse report")
    notice = notice_for(tenancy.alice)
    assert notice is not None
    assert "suspended by MMW support" in notice
    deliver(stripe_server.event("invoice.payment_succeeded", paid.customer) | {"id": "evt_later_payment"})
    assert subscription_of(tenancy.alice).state == State.SUSPENDED

    services.subscription_reinstate(account=tenancy.alice.account, actor=staff)
    assert notice_for(tenancy.alice) is None
    staff_rows = AuditEvent.objects.filter(actor_user=staff).values_list("action", flat=True).order_by("id")
    assert list(staff_rows) == ["billing.staff_suspended", "billing.staff_reinstated"]


def test_staff_extend_a_grace_period_even_after_suspension(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    staff = User.objects.create_superuser("support@mmw.example", "pw")
    with pytest.raises(InvalidInput):
        services.subscription_extend_grace(account=tenancy.alice.account, actor=staff, days=3)
    paid = subscribe(stripe_server, deliver, tenancy.alice)
    stripe_server.fail_renewal(paid.customer, paid.subscription)
    deliver(stripe_server.event("invoice.payment_failed", paid.customer))
    Subscription.objects.filter(account=tenancy.alice.account).update(grace_ends_at=timezone.now())
    assert selectors.billing_state(tenancy.alice.account).state == State.SUSPENDED  # even before beat runs
    sub = services.subscription_extend_grace(account=tenancy.alice.account, actor=staff, days=3)
    assert sub.state == State.GRACE
    assert sub.grace_ends_at is not None
    assert dt.timedelta(days=2, hours=23) < sub.grace_ends_at - timezone.now() <= dt.timedelta(days=3)
    assert AuditEvent.objects.filter(actor_user=staff, action="billing.grace_extended").exists()


def test_the_admin_actions_suspend_reinstate_and_extend(tenancy: Tenancy, plans: Plans) -> None:
    staff = User.objects.create_superuser("support@mmw.example", "pw")
    client = Client()
    client.force_login(staff)
    sub = subscription_of(tenancy.alice)
    url = "/admin/billing/subscription/"
    assert client.get(url).status_code == 200

    def act(action: str) -> None:
        answer = client.post(url, {"action": action, "_selected_action": [sub.pk]})
        assert answer.status_code == 302

    act("suspend")
    assert subscription_of(tenancy.alice).suspended_by_staff
    act("extend_grace")  # refused for a staff suspension: reported, nothing changes
    assert subscription_of(tenancy.alice).state == State.SUSPENDED
    act("reinstate")
    assert subscription_of(tenancy.alice).state == State.ACTIVE
    answer = client.post(f"{url}{sub.pk}/change/", {"plan": plans.team.pk})
    assert answer.status_code == 302
    assert subscription_of(tenancy.alice).plan == plans.team
    assert list(AuditEvent.objects.filter(actor_user=staff).values_list("action", flat=True).order_by("id")) == [
        "billing.staff_suspended",
        "billing.staff_reinstated",
        "billing.plan_changed",
    ]
    for page in ("/admin/billing/plan/", "/admin/billing/stripeevent/", "/admin/billing/usagesnapshot/"):
        assert client.get(page).status_code == 200


def test_purging_a_deleted_account_cancels_its_stripe_subscription(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    from datarights import deletion

    paid = subscribe(stripe_server, deliver, tenancy.alice)
    assert stripe_server.status(paid.subscription) == "active"
    owner, account = tenancy.alice.user, tenancy.alice.account
    owner.set_password("a-long-pass-phrase-9")
    owner.save()
    request = deletion.account_deletion_request(
        account=account, actor=owner, confirmation=account.name, password="a-long-pass-phrase-9"
    )
    assert stripe_server.status(paid.subscription) == "active"  # cancellable until the purge
    assert deletion.purge_due(now=request.purge_after + dt.timedelta(seconds=1)) == 1
    assert stripe_server.status(paid.subscription) == "canceled"
    assert not Subscription.objects.filter(stripe_subscription_id=paid.subscription).exists()
