"""The dashboard's "Data and deletion" pages: export (owners and admins), account deletion and its
cancel (owners), deleting one's own user; and a project's webhooks and imports (an MMW export, or
another service's: ``datarights.importers``). Parse, call, render."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.keys import Principal
from accounts.models import Project, User
from dashboard import selectors
from dashboard.views.common import flash_error, page, raise_as_http, user_of
from datarights import deletion, export, presenters
from datarights.export import export_response
from datarights.importers.items import Upload
from datarights.importers.services import SERVICES, peer_import
from datarights.models import ImportJob
from datarights.restore import jobs
from mmw.boundary import BULK_BODY_BYTES
from mmw.errors import Forbidden, InvalidInput, MMWError, PayloadTooLarge
from webhooks import services as webhooks
from webhooks import tasks as webhook_tasks
from webhooks.models import WebhookEndpoint


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


@login_required
@require_http_methods(["GET", "POST"])
def project_webhooks(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    """A project's webhook endpoints (owners and admins): add, send a test event, turn back on,
    delete; and each endpoint's delivery log."""
    user = user_of(request)
    project, principal = selectors.project_for(user, project_id)
    if request.method == "POST":
        _webhook_action(request, project, user)
        return redirect("datarights:webhooks", project_id=project.pk)
    try:
        endpoints = list(webhooks.endpoints_of(project=project, actor=user))
    except MMWError as exc:
        raise_as_http(exc)
        raise
    return page(
        request,
        "webhooks/endpoints.html",
        account=project.account,
        membership=principal.membership,
        project=project,
        tab="webhooks",
        events=WebhookEndpoint.EVENTS,
        endpoints=[(e, webhooks.delivery_log(endpoint=e)) for e in endpoints],
    )


def _webhook_action(request: HttpRequest, project: Project, user: User) -> None:
    action = request.POST.get("action", "")
    endpoint_id = _int(request.POST.get("endpoint"))
    try:
        if action == "create":
            webhooks.endpoint_create(
                project=project,
                actor=user,
                url=request.POST.get("url", "").strip(),
                events=request.POST.getlist("events"),
                include_content=request.POST.get("include_content") == "on",
            )
            messages.success(request, "Webhook added. Its secret is shown below: verify MMW-Signature with it.")
        elif action == "test":
            webhooks.endpoint_send_test(project=project, actor=user, endpoint_id=endpoint_id)
            transaction.on_commit(lambda: webhook_tasks.deliver_webhooks.delay())
            messages.success(request, "Test event queued; its delivery appears in the log below.")
        elif action == "enable":
            webhooks.endpoint_enable(project=project, actor=user, endpoint_id=endpoint_id)
            messages.success(request, "Webhook turned back on.")
        elif action == "delete":
            webhooks.endpoint_delete(project=project, actor=user, endpoint_id=endpoint_id)
            messages.success(request, "Webhook deleted.")
        else:
            raise InvalidInput("unknown webhook action: choose create, test, enable or delete")
    except MMWError as exc:
        if isinstance(exc, Forbidden):
            raise_as_http(exc)
        flash_error(request, exc)


def _int(value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        return 0


@login_required
@require_http_methods(["GET", "POST"])
def project_import(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    """Import an export file into this project (owners and admins): the upload, then the
    project's latest imports with their progress (followed live while one runs)."""
    project, principal = selectors.project_for(user_of(request), project_id)
    try:
        if request.method == "POST":
            job = _start_import(request, principal)
            if job is not None:
                return redirect("datarights:import", project_id=project.pk)
        recent = jobs.import_jobs_of(principal=principal)
    except MMWError as exc:
        if isinstance(exc, Forbidden):
            raise_as_http(exc)
        flash_error(request, exc)
        return redirect("datarights:import", project_id=project.pk)
    return page(
        request,
        "datarights/import.html",
        account=project.account,
        membership=principal.membership,
        project=project,
        tab="import",
        jobs=[presenters.import_job(j) for j in recent],
        max_mb=BULK_BODY_BYTES // (1024 * 1024),
        services=SERVICES,
    )


def _start_import(request: HttpRequest, principal: Principal) -> ImportJob | None:
    """The uploaded file as a job; its size is checked before it is read whole."""
    upload = request.FILES.get("file")
    if upload is None:
        flash_error(request, InvalidInput("choose an export file (.jsonl.gz) to import"))
        return None
    if upload.size is None or upload.size > BULK_BODY_BYTES:
        flash_error(request, PayloadTooLarge(f"the file exceeds {BULK_BODY_BYTES // (1024 * 1024)} MB"))
        return None
    job = jobs.import_start(principal=principal, upload=upload.read(), run_async=True)
    messages.success(request, "Import started; its progress is shown below.")
    return job


@login_required
@require_POST
def project_import_from(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    """Import another service's export into this project (owners and admins), inside the
    request: the outcome is shown on the Import tab. All or nothing unless "partial" is ticked."""
    project, principal = selectors.project_for(user_of(request), project_id)
    upload = request.FILES.get("file")
    if upload is None:
        flash_error(request, InvalidInput("choose the other service's export file to import"))
    elif upload.size is None or upload.size > BULK_BODY_BYTES:
        flash_error(request, PayloadTooLarge(f"the file exceeds {BULK_BODY_BYTES // (1024 * 1024)} MB"))
    else:
        try:
            report = peer_import(
                principal=principal,
                service=request.POST.get("service", ""),
                upload=Upload.of_bytes(upload.read(), upload.name or "upload"),
                workspace=request.POST.get("workspace", "").strip() or "default",
                partial=request.POST.get("partial") == "on",
            )
        except MMWError as exc:
            if isinstance(exc, Forbidden):
                raise_as_http(exc)
            flash_error(request, exc, refused="Not imported")
        else:
            messages.success(request, f"Imported from {report.summary()}.")
            if report.refused_count:
                messages.warning(request, f"Not imported ({report.refused_count}): " + "; ".join(report.refused))
    return redirect("datarights:import", project_id=project.pk)


@login_required
@require_GET
def import_job_status(request: HttpRequest, project_id: uuid.UUID, job_id: uuid.UUID) -> HttpResponse:
    """One import's row, polled while it runs."""
    _, principal = selectors.project_for(user_of(request), project_id)
    try:
        job = jobs.import_job_get(principal=principal, job_id=str(job_id))
    except MMWError as exc:
        raise_as_http(exc)
        raise
    return render(request, "datarights/_import_job.html", {"job": presenters.import_job(job), "project_id": project_id})
