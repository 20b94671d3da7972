"""The dashboard's "Data and deletion" pages: export (owners and admins), account deletion and its
cancel (owners), deleting one's own user. Parse, call ``datarights``, render."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import Project
from dashboard import selectors
from dashboard.views.common import flash_error, page, raise_as_http, user_of
from datarights import deletion, export
from datarights.api import export_response
from mmw.errors import MMWError


@login_required
@require_GET
def data_home(request: HttpRequest) -> HttpResponse:
    """Every account the person belongs to (export and deletion), open deletions they may cancel,
    and deleting their own user."""
    user = user_of(request)
    return page(
        request,
        "datarights/data.html",
        account=None,
        accounts=list(selectors.memberships_of(user)),
        deletions=deletion.open_deletions_for(user),
        deletion_days=settings.MMW_DELETION_RETENTION_DAYS,
        forgotten_days=settings.MMW_FORGOTTEN_RETENTION_DAYS,
    )


@login_required
@require_http_methods(["GET", "POST"])
def account_data(request: HttpRequest, tenant_id: str) -> HttpResponse:
    user = user_of(request)
    membership = selectors.membership_in(user, tenant_id)
    account = membership.account
    if request.method == "POST":
        try:
            deletion.account_deletion_request(
                account=account,
                actor=user,
                confirmation=request.POST.get("confirm", ""),
                password=request.POST.get("password", ""),
            )
        except MMWError as exc:
            flash_error(request, exc)
        else:
            messages.success(request, f"{account.name} is closed and will be deleted for good; you can cancel below.")
            return redirect("datarights:home")
    projects = [p for p, _ in selectors.projects_of(membership)]
    return page(
        request,
        "datarights/account.html",
        account=account,
        membership=membership,
        projects=projects,
        deletion_days=settings.MMW_DELETION_RETENTION_DAYS,
    )


@login_required
@require_GET
def account_export(request: HttpRequest, tenant_id: str) -> StreamingHttpResponse:
    user = user_of(request)
    account = selectors.membership_in(user, tenant_id).account
    project = None
    if request.GET.get("project"):
        project = Project.objects.filter(account=account, pk__in=_uuid(request.GET["project"])).first()
        if project is None:
            raise Http404("project not found")
    try:
        scope = export.scope_for_member(user=user, account=account, project=project)
    except MMWError as exc:
        raise_as_http(exc)
        raise
    return export_response(scope)


def _uuid(value: str) -> list[str]:
    try:
        return [str(uuid.UUID(value))]
    except ValueError:
        return []


@login_required
@require_POST
def deletion_cancel(request: HttpRequest, deletion_id: int) -> HttpResponse:
    try:
        cancelled = deletion.account_deletion_cancel(deletion_id=deletion_id, actor=user_of(request))
    except MMWError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, f"Deletion cancelled: {cancelled.account.name} is open again, with its keys.")
    return redirect("datarights:home")


@login_required
@require_POST
def user_delete(request: HttpRequest) -> HttpResponse:
    user = user_of(request)
    try:
        deletion.user_delete(user=user, password=request.POST.get("password", ""))
    except MMWError as exc:
        flash_error(request, exc)
        return redirect("datarights:home")
    logout(request)
    return redirect("/")
