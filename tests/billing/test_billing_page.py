"""The billing page and its Checkout / portal buttons: who may use them, what reaches Stripe.

localstripe implements customers and invoices but not Checkout Sessions nor the billing portal
(it answers 404 there), so those two calls are checked up to Stripe's door: the customer is
created once, and a provider failure becomes a clear 502 without side effects.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.models import AuditEvent
from billing import selectors, services, stripe_api
from billing.models import Subscription
from billing.presenters import Price
from mmw.errors import Forbidden, InvalidInput, NotFound
from tests.billing.conftest import TEAM_PRICE, Deliver, Plans, subscribe, subscription_of
from tests.billing.localstripe import LocalStripe
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db


def page(tenancy: Tenancy, who: str = "alice") -> Client:
    client = Client()
    client.force_login(getattr(tenancy, who).user)
    return client


def test_the_page_shows_plan_usage_and_invoices_read_from_stripe(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    subscribe(stripe_server, deliver, tenancy.alice)
    invoices = selectors.invoices_for(tenancy.alice.account)
    assert [i.status for i in invoices] == ["paid"]
    assert invoices[0].amount == "19.00 USD"
    answer = page(tenancy).get(f"/billing/{tenancy.alice.account.tenant_id}/", follow=True)
    assert answer.redirect_chain == [(f"/a/{tenancy.alice.account.tenant_id}/billing/", 302)]  # the one page
    assert answer.status_code == 200
    html = answer.content.decode()
    assert "<strong>Pro</strong>" in html
    assert "19.00 USD" in html
    assert f"/billing/{tenancy.alice.account.tenant_id}/portal" in html  # "Manage payment method" posts to billing


def test_only_owners_and_admins_see_an_accounts_billing(tenancy: Tenancy, plans: Plans) -> None:
    tenant = tenancy.alice.account.tenant_id
    assert page(tenancy, "bob").get(f"/billing/{tenant}/", follow=True).status_code == 403  # a member
    assert page(tenancy, "charlie").get(f"/billing/{tenant}/", follow=True).status_code == 404  # a stranger
    assert "/accounts/login/" in Client().get(f"/billing/{tenant}/")["Location"]
    assert page(tenancy, "bob").post(f"/billing/{tenant}/portal").status_code == 302  # refused, back to the page
    assert not AuditEvent.objects.filter(action__startswith="billing.").exists()
    with pytest.raises(Forbidden):
        services.billing_portal_start(account=tenancy.alice.account, actor=tenancy.bob.user, return_url="x")
    with pytest.raises(NotFound):
        services.billing_portal_start(account=tenancy.alice.account, actor=tenancy.charlie.user, return_url="x")


def test_checkout_creates_the_stripe_customer_once_and_reports_provider_failures(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe
) -> None:
    account = tenancy.alice.account
    for _ in range(2):
        with pytest.raises(stripe_api.PaymentProviderError):  # localstripe: no /v1/checkout/sessions
            services.billing_checkout_start(
                account=account, plan=plans.pro, actor=tenancy.alice.user, success_url="s", cancel_url="c"
            )
    customer = subscription_of(tenancy.alice).stripe_customer_id
    assert customer.startswith("cus_")
    found = stripe_server.client.v1.customers.retrieve(customer)
    assert (found.email, found.to_dict()["metadata"]["tenant_id"]) == ("alice@example.com", account.tenant_id)
    assert AuditEvent.objects.filter(account=account, action="billing.customer_created").count() == 1
    answer = page(tenancy).post(f"/billing/{account.tenant_id}/checkout", {"plan": "pro"}, follow=True)
    assert answer.status_code == 200  # back on the billing page, the provider's failure said there
    assert [m.message for m in answer.context["messages"]] == [
        "the payment provider did not answer as expected; try again later"
    ]
    assert subscription_of(tenancy.alice).plan == plans.free


def test_checkout_refuses_plans_that_are_not_for_sale(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe
) -> None:
    with pytest.raises(InvalidInput, match="cannot be bought"):
        services.billing_checkout_start(
            account=tenancy.alice.account, plan=plans.free, actor=tenancy.alice.user, success_url="s", cancel_url="c"
        )
    answer = page(tenancy).post(
        f"/billing/{tenancy.alice.account.tenant_id}/checkout", {"plan": "platinum"}, follow=True
    )
    assert [m.message for m in answer.context["messages"]] == ["plan not found"]


def test_the_portal_needs_a_customer_first(tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe) -> None:
    with pytest.raises(InvalidInput, match="choose a plan first"):
        services.billing_portal_start(account=tenancy.alice.account, actor=tenancy.alice.user, return_url="r")


def test_without_stripe_keys_billing_says_it_is_not_configured(
    tenancy: Tenancy, plans: Plans, settings: object
) -> None:
    settings.STRIPE_SECRET_KEY = ""  # type: ignore[attr-defined]
    answer = page(tenancy).post(f"/billing/{tenancy.alice.account.tenant_id}/checkout", {"plan": "pro"}, follow=True)
    assert answer.status_code == 200
    (message,) = [m.message for m in answer.context["messages"]]
    assert "not configured" in message
    assert Subscription.objects.get(account=tenancy.alice.account).stripe_customer_id == ""


def test_the_page_sells_every_plan_with_its_price_limits_and_an_upgrade(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe
) -> None:
    """Gap 1: no prices, no upgrade path, Free labelled "Not for sale", 50000 unformatted."""
    answer = page(tenancy).get(f"/a/{tenancy.alice.account.tenant_id}/billing/")
    html = answer.content.decode()
    assert "Not for sale" not in html
    offers = {o.plan.code: o for o in answer.context["offers"]}
    assert (offers["free"].current, offers["free"].price.text) == (True, "Free")
    assert offers["pro"].price.text == "$19 / month"  # localstripe has no Prices: the plan's figure
    assert offers["team"].price.text == "$99 / month"
    assert (offers["pro"].action, offers["pro"].action_label) == ("checkout", "Upgrade to Pro")
    assert "$19 / month" in html
    assert "50,000 records per project" in html
    assert "50000" not in html
    assert '<button type="submit">Upgrade to Team</button>' in html
    assert "Manage payment method" not in html  # no Stripe customer yet: nothing to manage


def test_a_team_subscriber_is_offered_a_switch_down_and_a_cancel_back_to_free(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, deliver: Deliver
) -> None:
    """The downgrade path: from Team, Pro is a Checkout "Switch" (the new subscription replaces
    the old one, tests/billing/test_lifecycle.py) and Free is the portal's cancel."""
    subscribe(stripe_server, deliver, tenancy.alice, price=TEAM_PRICE)
    tenant = tenancy.alice.account.tenant_id
    answer = page(tenancy).get(f"/a/{tenant}/billing/")
    offers = {o.plan.code: o for o in answer.context["offers"]}
    assert offers["team"].current
    assert (offers["pro"].action, offers["pro"].action_label) == ("checkout", "Switch to Pro")
    assert (offers["free"].action, offers["free"].action_label) == (
        "portal",
        "Cancel the subscription to return to Free",
    )
    html = answer.content.decode()
    switch = html.index('<button type="submit">Switch to Pro</button>')
    form = html[html.rindex("<form", 0, switch) : switch]
    assert f'action="/billing/{tenant}/checkout' in form
    assert 'name="plan" value="pro"' in form
    cancel = html.index("Cancel the subscription to return to Free</button>")
    assert f'action="/billing/{tenant}/portal' in html[html.rindex("<form", 0, cancel) : cancel]


def test_prices_are_written_as_people_read_them() -> None:
    assert Price(0, "usd", "month").text == "Free"
    assert Price(1_950, "chf", "year").text == "19.50 CHF / year"
    assert Price(100_000, "eur", "month").text == "€1,000 / month"


def test_a_price_stripe_sells_is_read_from_stripe_once(
    tenancy: Tenancy, plans: Plans, stripe_server: LocalStripe, monkeypatch: pytest.MonkeyPatch
) -> None:
    """localstripe has no Price objects, so Stripe's answer is stood in for at the SDK's edge."""
    cache.clear()
    asked: list[str] = []

    def retrieve_price(price_id: str) -> dict[str, object]:
        asked.append(price_id)
        return {"unit_amount": 2_400, "currency": "usd", "recurring": {"interval": "month"}}

    monkeypatch.setattr(stripe_api, "retrieve_price", retrieve_price)
    for _ in range(2):
        html = page(tenancy).get(f"/a/{tenancy.alice.account.tenant_id}/billing/").content.decode()
        assert "$24 / month" in html
    assert asked == [plans.pro.stripe_price_id, plans.team.stripe_price_id]  # then cached


def test_with_billing_off_the_page_explains_and_no_button_leads_to_an_error(
    tenancy: Tenancy, plans: Plans, settings: object
) -> None:
    """Gap 1: "Manage payment method" with billing off answered a raw 400."""
    settings.STRIPE_SECRET_KEY = ""  # type: ignore[attr-defined]
    tenant = tenancy.alice.account.tenant_id
    answer = page(tenancy).get(f"/a/{tenant}/billing/")
    html = answer.content.decode()
    assert answer.status_code == 200
    assert "Payments are not set up on this server" in html
    assert "<button" not in html.split("<h1>", 1)[1].split("<h2>Invoices</h2>")[0].replace("Log out", "")
    assert "$19 / month" in html  # the plans are still described
    posted = page(tenancy).post(f"/billing/{tenant}/portal", follow=True)
    assert posted.status_code == 200
    assert posted.redirect_chain == [(f"/a/{tenant}/billing/", 302)]
    assert [m.message for m in posted.context["messages"]] == [
        "Online payments are not configured on this server: plans are assigned by its operator."
    ]
