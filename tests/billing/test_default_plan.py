"""The operator's default plan (``manage.py default_plan``): a server that sells nothing decides
what every account gets — organisation features included if it chooses."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from accounts import services as account_services
from accounts.models import AuditEvent
from billing.models import Plan, Subscription
from billing.selectors import organization_features_gap
from mmw.errors import Forbidden
from orgs import services as org_services
from tests.factories import on_plan

pytestmark = pytest.mark.django_db


def plan_of(email: str) -> str | None:
    plan = Subscription.objects.get(account__memberships__user__email=email).plan
    return plan.code if plan else None


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("default_plan", *args, stdout=out)
    return out.getvalue()


def test_default_plan_team_with_move_accounts_lets_an_existing_organisation_invite() -> None:
    owner, _ = account_services.user_get_or_create(email="olga@example.com")
    org = account_services.account_create(name="Olga's team", owner=owner)
    with pytest.raises(Forbidden, match="organization features are not included"):
        org_services.invitation_create(account=org, actor=owner, email="ivan@example.com")

    output = run("team", "--move-accounts")

    assert "New accounts now start on Team (with organisation features)." in output
    assert "2 account(s) moved to Team." in output  # Olga's personal account and her organisation
    org_services.invitation_create(account=org, actor=owner, email="ivan@example.com")
    row = AuditEvent.objects.get(account=org, action="billing.plan_changed")
    assert row.data["plan"] == "team"
    assert row.data["previous"] == "free"
    newcomer, _ = account_services.user_get_or_create(email="new@example.com")
    assert plan_of(newcomer.email) == "team"
    assert organization_features_gap(None) is None


def test_without_move_accounts_only_new_accounts_get_the_plan() -> None:
    owner, _ = account_services.user_get_or_create(email="olga@example.com")
    output = run("team")
    assert "Existing accounts keep their plan" in output
    assert plan_of(owner.email) == "free"
    account_services.user_get_or_create(email="later@example.com")
    assert plan_of("later@example.com") == "team"
    assert list(Plan.objects.filter(is_default=True).values_list("code", flat=True)) == ["team"]


def test_moving_accounts_leaves_paying_and_hand_placed_ones_alone() -> None:
    payer, _ = account_services.user_get_or_create(email="payer@example.com")
    paying = on_plan(account_services.personal_account(user=payer), "pro")
    Subscription.objects.filter(account=paying).update(stripe_subscription_id="sub_1", stripe_status="active")
    comped, _ = account_services.user_get_or_create(email="comped@example.com")
    on_plan(account_services.personal_account(user=comped), "pro")  # support's complimentary plan
    account_services.user_get_or_create(email="plain@example.com")

    run("team", "--move-accounts")

    plans = {email: plan_of(email) for email in ("payer@example.com", "comped@example.com", "plain@example.com")}
    assert plans == {"payer@example.com": "pro", "comped@example.com": "pro", "plain@example.com": "team"}


def test_listing_the_plans_shows_the_default_and_who_is_on_each() -> None:
    account_services.user_get_or_create(email="olga@example.com")
    lines = run().splitlines()
    assert lines[0].split() == ["code", "name", "default", "organisation", "features", "accounts"]
    free = next(line for line in lines if line.startswith("free"))
    assert free.split() == ["free", "Free", "yes", "no", "1"]


def test_an_unknown_plan_names_the_known_ones() -> None:
    with pytest.raises(CommandError, match="no plan with the code 'gold' \\(plans: free, pro, team\\)"):
        run("gold")
