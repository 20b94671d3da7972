"""Helpers every dashboard view shares."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.models import Account, User
from billing.selectors import banner_for
from dashboard.selectors import memberships_of
from mmw.errors import Forbidden, MMWError, NotFound
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
    base = {
        "account": account,
        "membership": membership,
        "memberships": list(memberships_of(user)),
        "banner": banner_for(account) if account is not None else None,
    }
    return render(request, template, {**base, **context}, status=status)


def raise_as_http(exc: MMWError) -> None:
    """Translate a domain error that is about access into the HTTP answer (404/403)."""
    if isinstance(exc, NotFound):
        raise Http404(exc.message) from exc
    if isinstance(exc, Forbidden):
        raise PermissionDenied(exc.message) from exc


def flash_error(request: HttpRequest, exc: MMWError) -> None:
    """A refused action: 404 stays 404; anything else is shown to the person as it is."""
    if isinstance(exc, NotFound):
        raise Http404(exc.message) from exc
    messages.error(request, exc.message)


def require_manager(membership: Membership) -> None:
    if not membership.manages:
        raise PermissionDenied("only owners and admins can do this")
