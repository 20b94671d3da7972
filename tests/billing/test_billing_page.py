"""The billing page and its Checkout / portal buttons: who may use them, what reaches Stripe.

localstripe implements customers and invoices but not Checkout Sessions nor the billing portal
(it answers 404 there), so those two calls are checked up to Stripe's door: the customer is
created once, and a provider failure becomes a clear 502 without side effects.
"""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import AuditEvent
from billing import selectors, services, stripe_api
from billing.models import Subscription
from mmw.errors import Forbidden, InvalidInput, NotFound
from tests.billing.conftest import Deliver, Plans, subscribe, subscription_of
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
