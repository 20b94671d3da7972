"""HTTP endpoints of billing: Stripe's webhook, and the Checkout and customer-portal buttons of
the dashboard's billing page (signed-in owners and admins). ``/billing/<tenant>/``, the address
notices and e-mails name, leads to that page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from accounts.models import Account, User
from billing import selectors, services, stripe_api, webhooks
from billing.models import Plan
from interfaces.people_errors import for_people
from mmw.errors import MMWError, NotFound
from orgs.selectors import active_membership


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
    """The account whose billing the signed-in user manages (``orgs``' one rule: an active owner
    or admin); 404 otherwise (no existence leak)."""
    user = request.user
    if not isinstance(user, User):
        raise NotFound("account not found")
    account = Account.objects.filter(tenant_id=tenant_id).first()
    membership = active_membership(account=account, user=user) if account is not None else None
    if account is None or membership is None or not membership.manages:
        raise NotFound("account not found")
    return account, user


def _back_to_billing(request: HttpRequest, tenant_id: str, exc: MMWError | None = None) -> HttpResponse:
    """To the dashboard's billing page (the one billing page), with the error shown there."""
    if isinstance(exc, stripe_api.BillingNotConfigured):  # written for operators; people get the why
        messages.info(request, "Online payments are not configured on this server: plans are assigned by its operator.")
    elif exc is not None:
        messages.error(request, for_people(exc))
    return redirect("dashboard:billing", tenant_id=tenant_id)


@login_required
@require_GET
def billing_page(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """The address every notice and e-mail names (``selectors.billing_url``): the dashboard's
    billing page, which decides who may see it."""
    target = reverse("dashboard:billing", kwargs={"tenant_id": tenant_id})
    query = request.GET.urlencode()
    return HttpResponseRedirect(f"{target}?{query}" if query else target)


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
        return _back_to_billing(request, tenant_id, exc)
    return HttpResponseRedirect(url, status=303)


@login_required
@require_POST
def portal(request: HttpRequest, tenant_id: str) -> HttpResponse:
    try:
        account, user = _managed_account(request, tenant_id)
        url = services.billing_portal_start(account=account, actor=user, return_url=selectors.billing_url(account))
    except MMWError as exc:
        return _back_to_billing(request, tenant_id, exc)
    return HttpResponseRedirect(url, status=303)
