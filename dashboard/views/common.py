"""Helpers every dashboard view shares."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from accounts.models import Account, User
from billing.selectors import banner_for
from dashboard.context_processors import remember_account
from dashboard.selectors import memberships_of
from interfaces.people_errors import for_people
from mmw.errors import BillingNotice, Forbidden, MMWError, NotFound
from orgs.models import Membership


def user_of(request: HttpRequest) -> User:
    user = request.user
    if not isinstance(user, User):  # login_required runs first; this narrows the type
        raise PermissionDenied
    return user


def page(
    request: HttpRequest,
    template: str,
    *,
    account: Account | None,
    membership: Membership | None = None,
    status: int = 200,
    **context: Any,
) -> HttpResponse:
    """Render a dashboard page with the navigation, the account switcher and the billing banner."""
    user = user_of(request)
    if account is not None:
        remember_account(request, account.tenant_id)
    base = {
        "account": account,
        "membership": membership,
        "memberships": list(memberships_of(user)),
        "banner": banner_for(account) if account is not None else None,
    }
    return render(request, template, {**base, **context}, status=status)


def query_without(request: HttpRequest, *names: str) -> str:
    """The page's query string less ``names`` (``page`` for a pager's links; ``page`` and ``q``
    for an export of the current filters)."""
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


def raise_as_http(exc: MMWError) -> None:
    """Translate a domain error that is about access into the HTTP answer (404/403)."""
    if isinstance(exc, NotFound):
        raise Http404(exc.message) from exc
    if isinstance(exc, Forbidden):
        raise PermissionDenied(exc.message) from exc


def flash_error(request: HttpRequest, exc: MMWError, *, refused: str | None = None) -> None:
    """A refused action: 404 stays 404; a billing notice (written for agents) becomes one short
    line, since the page's banner already explains the account's state in people's words;
    anything else is shown to the person as it is. ``refused`` names what did not happen."""
    if isinstance(exc, NotFound):
        raise Http404(exc.message) from exc
    refused = refused or _("Not done")
    if isinstance(exc, BillingNotice):
        messages.error(
            request, _("%(refused)s: this account is read-only until its billing is sorted out.") % {"refused": refused}
        )
        return
    if exc.code == PLAN_FEATURE:  # the page's note (dashboard/_plan_gap.html) gives the way forward
        messages.error(
            request,
            _("%(refused)s: members, roles and departments are not included in this account's plan.")
            % {"refused": refused},
        )
        return
    messages.error(request, for_people(exc))


PLAN_FEATURE = "plan_feature"  # billing.gate.ensure_organization_features's code


def require_manager(membership: Membership) -> None:
    if not membership.manages:
        raise PermissionDenied("only owners and admins can do this")
