"""Organisation admin: members and roles, invitations, departments, the audit log; and the
invitation link a new member opens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard import selectors
from dashboard.forms import InvitationForm, NameForm, RoleForm
from dashboard.views.common import flash_error, page, raise_as_http, require_manager, user_of
from mmw.errors import MMWError
from orgs import selectors as org_selectors
from orgs import services as org_services
from orgs.models import Membership


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, tenant_id: str) -> HttpResponse:
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    account = membership.account
    form = InvitationForm(request.POST or None)
    if request.method == "POST":
        require_manager(membership)
        if form.is_valid():
            try:
                issued = org_services.invitation_create(
                    account=account, actor=user, email=form.cleaned_data["email"], role=form.cleaned_data["role"]
                )
            except MMWError as exc:
                flash_error(request, exc)
                form.add_error(None, exc.message)
            else:
                messages.success(request, f"Invitation sent to {issued.invitation.email}.")
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
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def member_action(request: HttpRequest, tenant_id: str, membership_id: int) -> HttpResponse:
    user = user_of(request)
    mine = selectors.membership_in(user, tenant_id)
    target = org_selectors.membership_of(account=mine.account, membership_id=membership_id)
    if target is None:
        raise Http404("member not found")
    action = request.POST.get("action", "")
    try:
        if action == "role":
            form = RoleForm(request.POST)
            if not form.is_valid():
                messages.error(request, "Choose a role.")
            else:
                org_services.membership_role_change(membership=target, actor=user, role=form.cleaned_data["role"])
                messages.success(request, f"{target.user.email} is now {form.cleaned_data['role']}.")
        elif action == "deactivate":
            org_services.membership_deactivate(membership=target, actor=user)
            messages.success(request, f"{target.user.email} deactivated: their keys stopped working.")
        elif action == "reactivate":
            org_services.membership_reactivate(membership=target, actor=user)
            messages.success(request, f"{target.user.email} reactivated.")
        elif action == "remove":
            org_services.membership_remove(membership=target, actor=user)
            messages.success(request, f"{target.user.email} removed from {mine.account.name}.")
        else:
            messages.error(request, "Unknown action.")
    except MMWError as exc:
        flash_error(request, exc)
    return redirect("dashboard:members", tenant_id=tenant_id)


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, tenant_id: str, invitation_id: int) -> HttpResponse:
    user = user_of(request)
    mine = selectors.membership_in(user, tenant_id)
    invitation = org_selectors.invitation_of(account=mine.account, invitation_id=invitation_id)
    if invitation is None:
        raise Http404("invitation not found")
    try:
        org_services.invitation_revoke(invitation=invitation, actor=user)
    except MMWError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, f"Invitation to {invitation.email} revoked.")
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
                messages.success(request, f"Department {form.cleaned_data['name']} created.")
                return redirect("dashboard:departments", tenant_id=tenant_id)
            if action in {"delete", "add", "remove"}:
                department = org_selectors.department_of(account=account, department_id=request.POST.get("department"))
                if department is None:
                    raise Http404("department not found")
                if action == "delete":
                    org_services.department_delete(department=department, actor=user)
                    messages.success(request, f"Department {department.name} deleted.")
                else:
                    target = org_selectors.membership_of(account=account, membership_id=request.POST.get("member"))
                    if target is None:
                        raise Http404("member not found")
                    change = (
                        org_services.department_member_add if action == "add" else org_services.department_member_remove
                    )
                    change(department=department, membership=target, actor=user)
                    messages.success(request, "Department updated.")
                return redirect("dashboard:departments", tenant_id=tenant_id)
        except MMWError as exc:
            flash_error(request, exc)
            if action == "create":
                form.add_error("name", exc.message)
    return page(
        request,
        "dashboard/departments.html",
        account=account,
        membership=membership,
        rows=org_selectors.department_list(account=account, actor=user),
        members=org_selectors.active_members(account=account),
        form=form,
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def audit(request: HttpRequest, tenant_id: str) -> HttpResponse:
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    try:
        events = list(org_selectors.audit_events_for(account=membership.account, actor=user, limit=500))
    except MMWError as exc:
        raise_as_http(exc)
        raise
    current = Paginator(events, 50).get_page(request.GET.get("page") or 1)
    return page(request, "dashboard/audit.html", account=membership.account, membership=membership, events=current)


@login_required
@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest) -> HttpResponse:
    """The link from the invitation e-mail: sign in (or sign up) as the invited address, confirm."""
    token = request.POST.get("token") or request.GET.get("token") or ""
    if request.method == "POST":
        try:
            joined = org_services.invitation_accept(token=token, user=user_of(request))
        except MMWError as exc:
            return page(request, "dashboard/invitation.html", account=None, token=token, error=exc.message, status=400)
        messages.success(request, f"Welcome to {joined.account.name}: you joined as {joined.role}.")
        return redirect("dashboard:projects", tenant_id=joined.account.tenant_id)
    try:
        invitation = org_services.invitation_check(token=token, user=user_of(request))
    except MMWError as exc:  # used, revoked or replaced, expired, another address: say so, offer nothing
        return page(request, "dashboard/invitation.html", account=None, token="", error=exc.message, status=400)
    return page(request, "dashboard/invitation.html", account=None, token=token, error="", invitation=invitation)
