"""What every page's header needs when the page itself is about no account (allauth's sign-in
settings, the Data page, the reference at /docs/, connected apps): the account the person was last
in, so Projects, Usage and Billing stay one click away everywhere."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from accounts.models import Account, User
from dashboard.selectors import memberships_of
from orgs.models import Membership

LAST_ACCOUNT = "mmw.last_account"  # session key: the tenant id of the account page last shown


def remember_account(request: HttpRequest, tenant_id: str) -> None:
    """Called by the dashboard's pages of an account; writes the session only when it changes."""
    if request.session.get(LAST_ACCOUNT) != tenant_id:
        request.session[LAST_ACCOUNT] = tenant_id


def navigation(request: HttpRequest) -> dict[str, Any]:
    """``nav_membership`` and ``nav_account`` (each None without one), read only if a page asks."""
    user = getattr(request, "user", None)
    if not isinstance(user, User):
        return {}
    found: list[Membership | None] = []

    def membership() -> Membership | None:
        if not found:
            found.append(_last_membership(request, user))
        return found[0]

    def account() -> Account | None:
        mine = membership()
        return mine.account if mine is not None else None

    return {"nav_membership": SimpleLazyObject(membership), "nav_account": SimpleLazyObject(account)}


def _last_membership(request: HttpRequest, user: User) -> Membership | None:
    mine = memberships_of(user)
    tenant = request.session.get(LAST_ACCOUNT)
    return (mine.filter(account__tenant_id=tenant).first() if tenant else None) or mine.first()
