"""The account pages: home, projects, new organisation, usage and billing."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import services as account_services
from accounts.models import Account
from accounts.services import account_create
from billing import presenters as billing_presenters
from billing import selectors as billing_selectors
from billing import stripe_api
from dashboard import selectors
from dashboard.charts import bar_chart
from dashboard.forms import NameForm, OrganizationForm
from dashboard.views.common import flash_error, page, user_of
from interfaces.people_errors import for_people
from mmw.errors import MMWError


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """Straight to the first account's projects (the personal account for a new person)."""
    user = user_of(request)
    first = selectors.memberships_of(user).first()
    if first is None:
        return page(request, "dashboard/no_account.html", account=None)
    return redirect("dashboard:projects", tenant_id=first.account.tenant_id)


@require_POST
def language(request: HttpRequest) -> HttpResponse:
    """The header's language switch: saved on the person (e-mails follow it) and in the language
    cookie (pages before sign-in), then back to the page it was posted from."""
    chosen = request.POST.get("language", "")
    if chosen not in dict(settings.LANGUAGES):
        chosen = ""
    if request.user.is_authenticated:
        account_services.user_set_language(user=user_of(request), language=chosen)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = reverse("dashboard:home")
    response = redirect(back)
    if chosen:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            chosen,
            max_age=365 * 24 * 3600,
            samesite="Lax",
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME)
    return response


@require_http_methods(["GET", "POST"])
def sign_in_link(request: HttpRequest, token: str) -> HttpResponse:
    """``manage.py quickstart``'s one-time link: the GET only names the person (a mail scanner or a
    link preview that fetches it spends nothing); the button signs in, then asks for a password
    when the person has none yet."""
    if request.method == "POST":
        try:
            person = account_services.sign_in_link_use(token=token)
        except MMWError as exc:
            return render(request, "dashboard/sign_in_link.html", {"refusal": for_people(exc)}, status=400)
        login(request, person, backend="django.contrib.auth.backends.ModelBackend")
        if not person.has_usable_password():
            messages.success(
                request,
                _("Signed in as %(email)s. Choose a password to sign in later without a link.")
                % {"email": person.email},
            )
            return redirect("account_set_password")
        messages.success(request, _("Signed in as %(email)s.") % {"email": person.email})
        return redirect("dashboard:home")
    named = account_services.sign_in_link_check(token=token)
    context = {"person": named, "refusal": account_services.SIGN_IN_LINK_REFUSAL}
    return render(request, "dashboard/sign_in_link.html", context, status=200 if named else 400)


@login_required
@require_http_methods(["GET", "POST"])
def projects(request: HttpRequest, tenant_id: str) -> HttpResponse:
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    form = NameForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = account_services.project_create(
                account=membership.account, actor=user, name=form.cleaned_data["name"]
            )
        except MMWError as exc:
            flash_error(request, exc)
            form.add_error("name", for_people(exc))
        else:
            messages.success(
                request, _("Project %(name)s created. Next: create an API key for it.") % {"name": project.name}
            )
            return redirect("dashboard:keys", project_id=project.pk)
    status = 400 if form.errors else 200
    rows = selectors.projects_of(membership)
    account = membership.account
    personal = account.kind == Account.Kind.PERSONAL
    return page(
        request,
        "dashboard/projects.html",
        account=account,
        membership=membership,
        form=form,
        rows=rows,
        # a new organisation starts on the default plan; an organisation has its own
        gap=billing_selectors.organization_features_gap(None if personal else account),
        status=status,
    )


@login_required
@require_POST
def organization_create(request: HttpRequest) -> HttpResponse:
    user = user_of(request)
    form = OrganizationForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the organisation a name."))
        return redirect("dashboard:home")
    account = account_create(name=form.cleaned_data["name"].strip(), owner=user, kind=Account.Kind.ORGANIZATION)
    if billing_selectors.organization_features_gap(account) is None:
        messages.success(
            request, _("Organisation %(name)s created. Invite people from Members.") % {"name": account.name}
        )
    else:
        messages.success(
            request, _("Organisation %(name)s created. Its plan does not include members yet.") % {"name": account.name}
        )
    return redirect("dashboard:projects", tenant_id=account.tenant_id)


@login_required
@require_GET
def usage(request: HttpRequest, tenant_id: str) -> HttpResponse:
    membership = selectors.membership_in(user_of(request), tenant_id)
    account = membership.account
    per_day = selectors.records_written_per_day(account)
    records, calls = selectors.monthly_usage(account)
    return page(
        request,
        "dashboard/usage.html",
        account=account,
        membership=membership,
        usage=billing_selectors.usage_for(account),
        projects_count=len(billing_selectors.usage_for(account).projects),
        rate_limits=billing_selectors.rate_limits(account),
        per_day_chart=bar_chart(per_day, title=_("Records written per day, last 30 days")),
        records_chart=bar_chart(records, title=_("Records per month (peak)"), colour="#0891b2"),
        calls_chart=bar_chart(calls, title=_("Calls per month"), colour="#db2777"),
        written_30d=sum(p.value for p in per_day),
    )


@login_required
@require_GET
def billing(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """Plan, state, upgrade (Checkout) and manage (portal) buttons and invoices; owners and admins
    only. The buttons post to billing's own endpoints, which start the Stripe sessions."""
    membership = selectors.membership_in(user_of(request), tenant_id)
    account = membership.account
    if not membership.manages:
        return page(
            request,
            "dashboard/forbidden.html",
            account=account,
            membership=membership,
            status=403,
            reason=_("Only owners and admins see this account's billing."),
        )
    invoices_error = ""
    invoices: list[billing_selectors.InvoiceSummary] = []
    if stripe_api.configured():
        try:
            invoices = billing_selectors.invoices_for(account)
        except stripe_api.PaymentProviderError as exc:
            invoices_error = for_people(exc)
    state = billing_selectors.billing_state(account)
    return page(
        request,
        "dashboard/billing.html",
        account=account,
        membership=membership,
        state=state,
        offers=billing_presenters.plan_offers(billing_selectors.plans_offered(), state),
        selling=stripe_api.configured(),
        has_customer=billing_selectors.has_payment_customer(account),
        invoices=invoices,
        invoices_error=invoices_error,
        checkout_url=reverse("billing:checkout", args=[tenant_id]),
        portal_url=reverse("billing:portal", args=[tenant_id]),
        checkout_done=request.GET.get("checkout") == "success",
    )
