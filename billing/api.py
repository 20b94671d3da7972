"""HTTP endpoints of billing: Stripe's webhook, and the billing page with its Checkout and
customer-portal buttons (signed-in owners and admins of the account; the dashboard links here)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from accounts.models import Account, User
from billing import selectors, services, stripe_api, webhooks
from billing.emails import BILLING_ROLES
from billing.models import Plan
from mmw.errors import MMWError, NotFound
from orgs.models import Membership


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> JsonResponse:
    """Stripe's endpoint: 400 for a bad signature, 200 for every verified event (handled,
    replayed or of a type MMW ignores), 500 when handling failed so Stripe retries."""
    try:
        outcome = webhooks.stripe_webhook_receive(
            payload=request.body, signature=request.headers.get("Stripe-Signature")
        )
    except MMWError as exc:
        return JsonResponse({"error": {"code": exc.code, "message": exc.message}}, status=exc.http_status)
    return JsonResponse({"received": True, "outcome": outcome})


def _managed_account(request: HttpRequest, tenant_id: str) -> tuple[Account, User]:
    """The account whose billing the signed-in user manages; 404 otherwise (no existence leak)."""
    user = request.user
    if not isinstance(user, User):
        raise NotFound("account not found")
    membership = (
        Membership.objects.select_related("account")
        .filter(account__tenant_id=tenant_id, user=user, is_active=True, role__in=BILLING_ROLES)
        .first()
    )
    if membership is None:
        raise NotFound("account not found")
    return membership.account, user


def _error_page(exc: MMWError) -> HttpResponse:
    return HttpResponse(exc.message, status=exc.http_status, content_type="text/plain; charset=utf-8")


@login_required
@require_GET
def billing_page(request: HttpRequest, tenant_id: str) -> HttpResponse:
    try:
        account, _ = _managed_account(request, tenant_id)
    except MMWError as exc:
        return _error_page(exc)
    invoices_error = ""
    try:
        invoices = selectors.invoices_for(account)
    except (stripe_api.PaymentProviderError, stripe_api.BillingNotConfigured) as exc:
        invoices, invoices_error = [], exc.message
    context = {
        "account": account,
        "state": selectors.billing_state(account),
        "banner": selectors.banner_for(account),
        "usage": selectors.usage_for(account),
        "history": selectors.usage_history(account),
        "plans": [p for p in selectors.plans_offered() if p.stripe_price_id],
        "invoices": invoices,
        "invoices_error": invoices_error,
    }
    return render(request, "billing/page.html", context)


@login_required
@require_POST
def checkout(request: HttpRequest, tenant_id: str) -> HttpResponse:
    try:
        account, user = _managed_account(request, tenant_id)
        plan = Plan.objects.filter(code=request.POST.get("plan", ""), is_active=True).first()
        if plan is None:
            raise NotFound("plan not found")
        here = selectors.billing_url(account)
        url = services.billing_checkout_start(
            account=account, plan=plan, actor=user, success_url=f"{here}?checkout=success", cancel_url=here
        )
    except MMWError as exc:
        return _error_page(exc)
    return HttpResponseRedirect(url, status=303)


@login_required
@require_POST
def portal(request: HttpRequest, tenant_id: str) -> HttpResponse:
    try:
        account, user = _managed_account(request, tenant_id)
        url = services.billing_portal_start(account=account, actor=user, return_url=selectors.billing_url(account))
    except MMWError as exc:
        return _error_page(exc)
    return HttpResponseRedirect(url, status=303)
