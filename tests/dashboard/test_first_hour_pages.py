"""Issue #40, item 7, in view tests: the header on every page, one way to write a date, an
invitation's seven days, a personal account named as one, the billing page not asking an
unreachable Stripe on every view, and an invitee without an account told what the link is."""

from __future__ import annotations

import datetime as dt
import html as html_module
import re
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts import services
from billing import presenters, stripe_api
from billing.models import Plan
from dashboard.templatetags.mmw_dashboard import human_time
from orgs import services as org_services
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import on_plan

pytestmark = pytest.mark.django_db

ISO_DAY = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def visible(html: str) -> str:
    """The page's text as read: tags and their attributes (``datetime``, ``title``) dropped."""
    return html_module.unescape(re.sub(r"<[^>]+>", " ", html))


@pytest.mark.parametrize("path", ["/accounts/email/", "/data/", "/docs/", "/connected-apps/", "/accounts/2fa/"])
def test_pages_about_no_account_keep_the_header_of_the_last_one(tenancy: Tenancy, path: str) -> None:
    client = client_for(tenancy.alice.user)
    org = tenancy.alice.account.tenant_id
    client.get(reverse("dashboard:projects", args=[org]))  # the account she was in
    page = client.get(path).content.decode()
    header = page.split("</header>", 1)[0]
    for name in ("projects", "usage", "billing"):
        assert f'href="{reverse(f"dashboard:{name}", args=[org])}"' in header, (path, name)
    assert 'href="/docs/"' in header
    assert f'href="{reverse("mfa_index")}"' in header  # two-factor, one click from anywhere


def test_a_personal_account_is_named_personal_not_by_its_e_mail(tenancy: Tenancy) -> None:
    charlie = tenancy.charlie
    page = client_for(charlie.user).get(reverse("dashboard:memories", args=[charlie.project.pk])).content.decode()
    crumb = page.split('crumbs">', 1)[1].split("</p>", 1)[0]
    assert "Personal" in crumb
    assert "charlie@example.com" not in crumb
    assert f"› {charlie.project.name}" in visible(crumb)


def test_an_invitation_sent_for_seven_days_reads_in_7_days() -> None:
    almost = timezone.now() + dt.timedelta(days=7) - dt.timedelta(seconds=2)
    assert ">in 7 days<" in human_time(almost)
    assert ">in 3 hours<" in human_time(timezone.now() + dt.timedelta(hours=2, minutes=50))
    assert ">2 days ago<" in human_time(timezone.now() - dt.timedelta(days=1, hours=13))


def test_one_way_to_write_a_date_on_every_page(tenancy: Tenancy) -> None:
    alice = tenancy.alice
    old = timezone.now() - dt.timedelta(days=40)
    services.api_key_revoke(api_key=alice.user.api_keys.get(), actor=alice.user)  # a revoked key says when
    client = client_for(alice.user)
    type(alice.project).objects.filter(pk=alice.project.pk).update(created_at=old)
    for url in (
        reverse("dashboard:projects", args=[alice.account.tenant_id]),
        reverse("dashboard:keys", args=[alice.project.pk]),
        reverse("dashboard:workspaces", args=[alice.project.pk]),
        "/data/",
    ):
        text = visible(client.get(url).content.decode())
        assert not ISO_DAY.search(text), (url, ISO_DAY.findall(text))


def test_an_invitee_without_an_account_is_told_what_the_link_is(tenancy: Tenancy) -> None:
    on_plan(tenancy.alice.account)
    issued = org_services.invitation_create(
        account=tenancy.alice.account, actor=tenancy.alice.user, email="ivan@example.com", role="auditor"
    )
    answer = Client().get("/" + issued.url.split("://", 1)[1].split("/", 1)[1])
    assert answer.status_code == 200
    text = visible(answer.content.decode())
    assert "alice@example.com invited ivan@example.com to Alice & Co as Auditor" in " ".join(text.split())
    page = answer.content.decode()
    assert "Create an account" in page
    assert "/accounts/signup/?next=" in page
    assert "/accounts/login/?next=" in page


def test_a_dead_invitation_link_says_so_before_anyone_signs_up(tenancy: Tenancy) -> None:
    answer = Client().get("/invitations/accept/?token=not-a-token")
    assert answer.status_code == 400
    assert "Invitation link is invalid." in answer.content.decode()
    assert "Create an account" not in answer.content.decode()


def test_an_unreachable_stripe_is_asked_for_prices_once_per_minute_not_on_every_view(
    tenancy: Tenancy, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.clear()
    settings.STRIPE_SECRET_KEY = "sk_test_x"
    Plan.objects.filter(code="pro").update(stripe_price_id="price_pro")
    asked: list[str] = []

    def unreachable(price_id: str) -> dict[str, object]:
        asked.append(price_id)
        raise stripe_api.PaymentProviderError("the payment provider did not answer as expected; try again later")

    monkeypatch.setattr(stripe_api, "retrieve_price", unreachable)
    monkeypatch.setattr(stripe_api, "call", lambda *a, **k: {"data": []})  # invoices: none
    client = client_for(tenancy.alice.user)
    for _ in range(3):
        page = client.get(reverse("dashboard:billing", args=[tenancy.alice.account.tenant_id])).content.decode()
        assert "$19 / month" in page  # the plan's own figure meanwhile
    assert asked == ["price_pro"]
    assert presenters.PRICE_FAILURE_CACHE_SECONDS == 60


def test_the_key_pages_name_the_local_agent_and_its_login_that_asks_for_the_key(tenancy: Tenancy) -> None:
    alice = tenancy.alice
    client = client_for(alice.user)
    listing = client.get(reverse("dashboard:keys", args=[alice.project.pk])).content.decode()
    assert "mmw-agent login --url http://testserver" in visible(listing)
    created = client.post(
        reverse("dashboard:keys", args=[alice.project.pk]),
        {"name": "laptop", "device_label": "laptop", "scopes": ["memory:read", "memory:write"], "expires": "90"},
    )
    page = visible(created.content.decode())
    assert "Local agent (mmw-agent)" in page
    snippet = re.split(r"REST \(curl\)|Done", page.split("Local agent (mmw-agent)", 1)[1])[0]
    assert "mmw-agent login --url" in snippet
    assert "mmw_" not in snippet  # the key is typed at the prompt, not put on a command line
