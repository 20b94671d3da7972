"""Organisation admin: members and roles, invitations, departments, the audit log, the
organisation's settings; and the invitation link a new member opens.

Why one module of this length: the organisation's pages, each view short; actions dispatch through
one table per page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import services as account_services
from accounts.models import Account, User
from billing.selectors import organization_features_gap
from dashboard import selectors
from dashboard.forms import AccountRenameForm, AuditFilterForm, InvitationForm, NameForm, RoleForm, TransferForm
from dashboard.templatetags.mmw_dashboard import audit_target
from dashboard.views.common import (
    PLAN_FEATURE,
    flash_error,
    page,
    query_without,
    raise_as_http,
    require_manager,
    user_of,
)
from interfaces.people_errors import for_people
from mmw import csv_safe, streaming
from mmw.errors import MMWError
from orgs import selectors as org_selectors
from orgs import services as org_services
from orgs.models import Invitation, Membership


def invitation_sent(issued: org_services.IssuedInvitation) -> str:
    """The members page's confirmation: says when the new link replaced a pending one, and from
    which role a re-invite changed it (the old link stops working)."""
    email, role = issued.invitation.email, issued.invitation.role
    if not issued.replaced_roles:
        return _("Invitation sent to %(email)s.") % {"email": email}
    before = issued.replaced_roles[-1]
    change = _(" (role %(before)s → %(role)s)") % {"before": before, "role": role} if before != role else ""
    return _("Invitation sent to %(email)s; it replaces the pending one%(change)s, whose link no longer works.") % {
        "email": email,
        "change": change,
    }


def _member_or_404(account: Account, membership_id: object) -> Membership:
    """A membership of this account (``orgs.selectors.membership_of``); 404 otherwise."""
    target = org_selectors.membership_of(account=account, membership_id=membership_id)
    if target is None:
        raise Http404("member not found")
    return target


def _invitation_or_404(account: Account, invitation_id: object) -> Invitation:
    """An invitation of this account (``orgs.selectors.invitation_of``); 404 otherwise."""
    invitation = org_selectors.invitation_of(account=account, invitation_id=invitation_id)
    if invitation is None:
        raise Http404("invitation not found")
    return invitation


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, tenant_id: str) -> HttpResponse:
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    account = membership.account
    form = InvitationForm(request.POST or None)
    refused = False
    if request.method == "POST":
        require_manager(membership)
        if form.is_valid():
            try:
                issued = org_services.invitation_create(
                    account=account, actor=user, email=form.cleaned_data["email"], role=form.cleaned_data["role"]
                )
            except MMWError as exc:
                flash_error(request, exc)  # the plan's refusal: the flash, and the page's note says what to do
                refused = True
                if exc.code != PLAN_FEATURE:
                    form.add_error(None, for_people(exc))
            else:
                messages.success(request, invitation_sent(issued))
                return redirect("dashboard:members", tenant_id=tenant_id)
    try:
        rows = org_selectors.membership_list(account=account, actor=user)
    except MMWError as exc:
        raise_as_http(exc)
        raise
    return page(
        request,
        "dashboard/members.html",
        account=account,
        membership=membership,
        rows=rows,
        invitations=org_selectors.open_invitations(account=account, actor=user),
        form=form,
        roles=Membership.Role.choices,
        gap=organization_features_gap(account),
        status=400 if form.errors or refused else 200,
    )


@login_required
@require_POST
def member_action(request: HttpRequest, tenant_id: str, membership_id: int) -> HttpResponse:
    """One action on one member (``MEMBER_ACTIONS``): change the role, deactivate, reactivate, remove."""
    user = user_of(request)
    mine = selectors.membership_in(user, tenant_id)
    target = _member_or_404(mine.account, membership_id)
    handler = MEMBER_ACTIONS.get(request.POST.get("action", ""))
    try:
        done = handler(request, target, user) if handler is not None else None
    except MMWError as exc:
        flash_error(request, exc)
    else:
        if handler is None:
            messages.error(request, _("Unknown action."))
        elif done is not None:
            messages.success(request, done)
    return redirect("dashboard:members", tenant_id=tenant_id)


def _change_role(request: HttpRequest, target: Membership, user: User) -> str | None:
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose a role."))
        return None
    org_services.membership_role_change(membership=target, actor=user, role=form.cleaned_data["role"])
    return _("%(email)s is now %(role)s.") % {"email": target.user.email, "role": form.cleaned_data["role"]}


def _deactivate(request: HttpRequest, target: Membership, user: User) -> str:
    org_services.membership_deactivate(membership=target, actor=user)
    return _("%(email)s deactivated: their keys stopped working.") % {"email": target.user.email}


def _reactivate(request: HttpRequest, target: Membership, user: User) -> str:
    org_services.membership_reactivate(membership=target, actor=user)
    return _("%(email)s reactivated.") % {"email": target.user.email}


def _remove(request: HttpRequest, target: Membership, user: User) -> str:
    org_services.membership_remove(membership=target, actor=user)
    return _("%(email)s removed from %(name)s.") % {"email": target.user.email, "name": target.account.name}


# The member page's actions: each returns the success message (None: it said what went wrong).
MEMBER_ACTIONS: dict[str, Callable[[HttpRequest, Membership, User], str | None]] = {
    "role": _change_role,
    "deactivate": _deactivate,
    "reactivate": _reactivate,
    "remove": _remove,
}


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, tenant_id: str, invitation_id: int) -> HttpResponse:
    user = user_of(request)
    mine = selectors.membership_in(user, tenant_id)
    invitation = _invitation_or_404(mine.account, invitation_id)
    try:
        org_services.invitation_revoke(invitation=invitation, actor=user)
    except MMWError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, _("Invitation to %(email)s revoked.") % {"email": invitation.email})
    return redirect("dashboard:members", tenant_id=tenant_id)


@login_required
@require_http_methods(["GET", "POST"])
def departments(request: HttpRequest, tenant_id: str) -> HttpResponse:
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    account = membership.account
    form = NameForm(request.POST if request.POST.get("action") == "create" else None)
    if request.method == "POST":
        require_manager(membership)
        action = request.POST.get("action")
        try:
            if action == "create" and form.is_valid():
                org_services.department_create(account=account, actor=user, name=form.cleaned_data["name"])
                messages.success(request, _("Department %(name)s created.") % {"name": form.cleaned_data["name"]})
                return redirect("dashboard:departments", tenant_id=tenant_id)
            if action in {"delete", "add", "remove"}:
                department = org_selectors.department_of(account=account, department_id=request.POST.get("department"))
                if department is None:
                    raise Http404("department not found")
                if action == "delete":
                    org_services.department_delete(department=department, actor=user)
                    messages.success(request, _("Department %(name)s deleted.") % {"name": department.name})
                else:
                    target = _member_or_404(account, request.POST.get("member"))
                    change = (
                        org_services.department_member_add if action == "add" else org_services.department_member_remove
                    )
                    change(department=department, membership=target, actor=user)
                    messages.success(request, _("Department updated."))
                return redirect("dashboard:departments", tenant_id=tenant_id)
        except MMWError as exc:
            flash_error(request, exc)
            if action == "create" and exc.code != PLAN_FEATURE:
                form.add_error("name", for_people(exc))
    return page(
        request,
        "dashboard/departments.html",
        account=account,
        membership=membership,
        rows=org_selectors.department_list(account=account, actor=user),
        members=org_selectors.active_members(account=account),
        form=form,
        gap=organization_features_gap(account),
        status=400 if form.errors else 200,
    )


AUDIT_CSV_HEADER = ("time_utc", "action", "actor", "actor_key", "target", "target_type", "target_id", "data")


def _audit_form(request: HttpRequest, membership: Membership) -> AuditFilterForm:
    try:
        actions = org_selectors.audit_actions(account=membership.account, actor=user_of(request))
    except MMWError as exc:
        raise_as_http(exc)
        raise
    return AuditFilterForm(request.GET or None, actions=actions)


@login_required
@require_GET
def audit(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """The audit log, filtered by who, what and which days; the pager and the CSV link keep the
    filters."""
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    form = _audit_form(request, membership)
    valid = not form.is_bound or form.is_valid()
    filters = form.filters() if form.is_bound and valid else None
    events = list(
        org_selectors.audit_events_for(account=membership.account, actor=user, limit=500, filters=filters)
        if valid
        else []
    )
    current = Paginator(events, 50).get_page(request.GET.get("page") or 1)
    return page(
        request,
        "dashboard/audit.html",
        account=membership.account,
        membership=membership,
        events=current,
        form=form,
        query=query_without(request, "page"),
        filtered=bool(filters and any(vars(filters).values())),
        actors=org_selectors.active_members(account=membership.account),
        status=200 if valid else 400,
    )


@login_required
@require_GET
def audit_csv(request: HttpRequest, tenant_id: str) -> HttpResponseBase:
    """The filtered audit log as a streamed CSV download (cells formula-escaped)."""
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    form = _audit_form(request, membership)
    if form.is_bound and not form.is_valid():
        return HttpResponse(_("Fix the filters: ") + form.errors.as_text(), status=400, content_type="text/plain")
    events = org_selectors.audit_events_export(
        account=membership.account, actor=user, filters=form.filters() if form.is_bound else None
    )
    rows = (
        (
            e.created_at.isoformat(),
            e.action,
            e.actor_user.email if e.actor_user else "system",
            f"mmw_{e.actor_key.prefix}…" if e.actor_key else "",
            audit_target(e),
            e.target_type,
            e.target_id,
            json.dumps(e.data, sort_keys=True, ensure_ascii=False),
        )
        for e in events
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    return streaming.download(
        streaming.encoded(csv_safe.lines(AUDIT_CSV_HEADER, rows)),
        content_type="text/csv; charset=utf-8",
        filename=f"mmw-audit-{tenant_id}-{stamp}.csv",
    )


@login_required
@require_POST
def invitation_resend(request: HttpRequest, tenant_id: str, invitation_id: int) -> HttpResponse:
    user = user_of(request)
    mine = selectors.membership_in(user, tenant_id)
    invitation = _invitation_or_404(mine.account, invitation_id)
    try:
        issued = org_services.invitation_resend(invitation=invitation, actor=user)
    except MMWError as exc:
        flash_error(request, exc, refused=_("Not sent"))
    else:
        messages.success(
            request,
            _("Invitation sent again to %(email)s: a new link, the old one stopped working.")
            % {"email": issued.invitation.email},
        )
    return redirect("dashboard:members", tenant_id=tenant_id)


# --- organisation settings -----------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def organization_settings(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """Rename (owners, admins), transfer ownership (owners), leave (anyone but the last owner);
    deleting the organisation is the Data page's (export first, then delete)."""
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    account = membership.account
    action = request.POST.get("action", "") if request.method == "POST" else ""
    rename = AccountRenameForm(request.POST if action == "rename" else None, initial={"name": account.name})
    others = [m for m in org_selectors.active_members(account=account) if m.pk != membership.pk]
    transfer = TransferForm(request.POST if action == "transfer" else None, members=others)
    if request.method == "POST":
        settings_action = SETTINGS_ACTIONS.get(action)
        try:
            if settings_action is None:
                messages.error(request, _("Unknown action."))
            elif (done := settings_action(request, membership, rename, transfer)) is not None:
                return done
        except MMWError as exc:
            flash_error(request, exc)
            if action == "rename":
                rename.add_error("name", for_people(exc))
    return page(
        request,
        "dashboard/organization_settings.html",
        account=account,
        membership=membership,
        rename=rename,
        transfer=transfer,
        last_owner=org_selectors.is_last_owner(membership),
        status=400 if rename.errors or transfer.errors else 200,
    )


def _rename(
    request: HttpRequest, membership: Membership, rename: AccountRenameForm, transfer: TransferForm
) -> HttpResponse | None:
    require_manager(membership)
    if not rename.is_valid():
        return None
    account = membership.account
    account_services.account_rename(account=account, actor=membership.user, name=rename.cleaned_data["name"])
    messages.success(request, _("Renamed to %(name)s.") % {"name": account.name})
    return redirect("dashboard:organization-settings", tenant_id=account.tenant_id)


def _transfer(
    request: HttpRequest, membership: Membership, rename: AccountRenameForm, transfer: TransferForm
) -> HttpResponse | None:
    if not transfer.is_valid():
        return None
    account = membership.account
    target = _member_or_404(account, transfer.cleaned_data["to"])
    org_services.ownership_transfer(account=account, actor=membership.user, to=target)
    messages.success(request, _("%(email)s is now an owner; you are an admin.") % {"email": target.user.email})
    return redirect("dashboard:organization-settings", tenant_id=account.tenant_id)


def _leave(
    request: HttpRequest, membership: Membership, rename: AccountRenameForm, transfer: TransferForm
) -> HttpResponse:
    account = membership.account
    if request.POST.get("confirm") != account.name:
        messages.error(request, _("Type the organisation's name (%(name)s) to leave it.") % {"name": account.name})
        return redirect("dashboard:organization-settings", tenant_id=account.tenant_id)
    org_services.membership_remove(membership=membership, actor=membership.user)
    messages.success(request, _("You left %(name)s; your keys there stopped working.") % {"name": account.name})
    return redirect("dashboard:home")


# The organisation settings page's actions: each answers its redirect, or None to show the page
# again with its form's errors.
SETTINGS_ACTIONS: dict[
    str, Callable[[HttpRequest, Membership, AccountRenameForm, TransferForm], HttpResponse | None]
] = {"rename": _rename, "transfer": _transfer, "leave": _leave}


@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest) -> HttpResponse:
    """The link from the invitation e-mail: sign in (or sign up) as the invited address, confirm.
    Someone not signed in reads the invitation first (who invites them where, as what) with the
    ways in — create an account with that address, or sign in — each coming back here after."""
    token = request.POST.get("token") or request.GET.get("token") or ""
    if not request.user.is_authenticated:
        return _invitation_for_a_stranger(request, token)
    if request.method == "POST":
        try:
            joined = org_services.invitation_accept(token=token, user=user_of(request))
        except MMWError as exc:
            return page(
                request, "dashboard/invitation.html", account=None, token=token, error=for_people(exc), status=400
            )
        messages.success(
            request,
            _("Welcome to %(name)s: you joined as %(role)s.") % {"name": joined.account.name, "role": joined.role},
        )
        return redirect("dashboard:projects", tenant_id=joined.account.tenant_id)
    try:
        invitation = org_services.invitation_check(token=token, user=user_of(request))
    except MMWError as exc:  # used, revoked or replaced, expired, another address: say so, offer nothing
        return page(request, "dashboard/invitation.html", account=None, token="", error=for_people(exc), status=400)
    return page(request, "dashboard/invitation.html", account=None, token=token, error="", invitation=invitation)


def _invitation_for_a_stranger(request: HttpRequest, token: str) -> HttpResponse:
    back = f"{reverse('dashboard:invitation-accept')}?{urlencode({'token': token})}"
    try:
        invitation = org_services.invitation_preview(token=token)
    except MMWError as exc:
        context = {"error": for_people(exc), "token": "", "stranger": True}
        return render(request, "dashboard/invitation.html", context, status=400)
    context = {
        "invitation": invitation,
        "stranger": True,
        "error": "",
        "signup_url": f"{reverse('account_signup')}?{urlencode({'next': back})}",
        "login_url": f"{reverse('account_login')}?{urlencode({'next': back})}",
    }
    return render(request, "dashboard/invitation.html", context)
