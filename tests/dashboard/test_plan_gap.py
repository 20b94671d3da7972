"""A plan without organisation features is said on the page, before the click, with the way
forward: the billing page where the server sells a plan that has them, else the operator."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from accounts import services as account_services
from accounts.models import Account, User
from billing.models import Plan
from orgs.models import Invitation
from tests.dashboard.conftest import client_for
from tests.factories import on_plan

pytestmark = pytest.mark.django_db

GAP = 'data-testid="plan-gap"'


def new_org(email: str = "olga@example.com") -> tuple[User, Account]:
    owner, _ = account_services.user_get_or_create(email=email)
    return owner, account_services.account_create(name="Olga's team", owner=owner)


def test_members_page_on_the_free_plan_says_so_and_names_the_operator_before_any_click() -> None:
    owner, org = new_org()
    page = client_for(owner).get(reverse("dashboard:members", args=[org.tenant_id])).content.decode()
    assert GAP in page
    assert "Members, roles and departments are not included in the Free plan." in page
    assert "They come with the Team plan." in page
    assert "This server takes no payments: the people who run it assign plans." in page
    assert '<fieldset class="bare" disabled>' in page  # the invitation form cannot be sent
    assert "manage.py default_plan" not in page  # a customer is not told the operator's commands


def test_staff_reading_the_note_get_the_command_and_the_subscription_link() -> None:
    owner, org = new_org()
    owner.is_staff = True
    owner.save()
    page = html.unescape(client_for(owner).get(reverse("dashboard:members", args=[org.tenant_id])).content.decode())
    assert "manage.py default_plan team --move-accounts" in page
    assert f"/admin/billing/subscription/?q={org.tenant_id}" in page


def test_with_payments_on_the_note_links_the_upgrade(settings: Any) -> None:
    settings.STRIPE_SECRET_KEY = "sk_test_x"
    Plan.objects.filter(code="team").update(stripe_price_id="price_team")
    owner, org = new_org()
    page = client_for(owner).get(reverse("dashboard:departments", args=[org.tenant_id])).content.decode()
    assert GAP in page
    assert f'href="/a/{org.tenant_id}/billing/">Upgrade to Team</a>' in page
    assert "takes no payments" not in page


def test_on_a_plan_with_the_features_there_is_no_note() -> None:
    owner, org = new_org()
    on_plan(org)
    client = client_for(owner)
    for name in ("dashboard:members", "dashboard:departments"):
        assert GAP not in client.get(reverse(name, args=[org.tenant_id])).content.decode()


def test_the_create_organisation_card_says_what_a_new_organisation_gets() -> None:
    owner, _ = account_services.user_get_or_create(email="olga@example.com")
    personal = account_services.personal_account(user=owner)
    client = client_for(owner)
    page = client.get(reverse("dashboard:projects", args=[personal.tenant_id])).content.decode()
    assert "not included in the Free plan that new organisations start on." in page
    call_command("default_plan", "team", stdout=None)
    assert GAP not in client.get(reverse("dashboard:projects", args=[personal.tenant_id])).content.decode()


def test_a_refused_invitation_says_it_in_a_sentence_and_the_note_stays() -> None:
    owner, org = new_org()
    response = client_for(owner).post(
        reverse("dashboard:members", args=[org.tenant_id]), {"email": "ivan@example.com", "role": "member"}, follow=True
    )
    page = html.unescape(response.content.decode())
    assert "Not done: members, roles and departments are not included in this account's plan." in page
    assert "organization features are not included" not in page
    assert GAP in page
    assert not Invitation.objects.exists()


def test_after_the_operator_chooses_team_the_same_invitation_goes_out() -> None:
    owner, org = new_org()
    call_command("default_plan", "team", "--move-accounts", stdout=None)
    client = client_for(owner)
    assert GAP not in client.get(reverse("dashboard:members", args=[org.tenant_id])).content.decode()
    response = client.post(
        reverse("dashboard:members", args=[org.tenant_id]), {"email": "ivan@example.com", "role": "member"}, follow=True
    )
    assert "Invitation sent to ivan@example.com." in response.content.decode()
