"""A project's pages: the memory browser, workspaces, API keys and settings.

Why one module of this length: a project's pages (browser, workspaces, keys, settings), each view
short; they share the project lookup and its context.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import services as account_services
from accounts.selectors import api_keys_for, live_workspace
from accounts.services import api_key_create, api_key_revoke
from billing.selectors import organization_features_gap
from dashboard import graph, selectors
from dashboard.forms import ForgetSourceForm, KeyForm, NameForm, SearchForm
from dashboard.mcp_configs import configs_for, curl_for, mcp_url
from dashboard.templatetags.mmw_dashboard import relation_words
from dashboard.views.common import flash_error, page, query_without, raise_as_http, user_of
from interfaces.people_errors import for_people
from memories import exports
from memories import services as memory_services
from memories.presenters import Record
from memories.selectors import (
    PENDING_COUNT_MAX,
    memory_export,
    memory_get,
    memory_history,
    memory_list,
    memory_previews,
    memory_search,
    workspaces_with_counts,
)
from memories.services import memory_forget
from mmw import streaming
from mmw.errors import MMWError
from orgs.models import Membership
from orgs.selectors import active_members, memberships_among, project_access_of, project_members
from orgs.services import project_access_set

PAGE_SIZE = 20  # records per page of the browser


def _ctx(principal: Any) -> dict[str, Any]:
    return {"account": principal.account, "membership": principal.membership, "project": principal.project}


# --- memory browser ------------------------------------------------------------------------


@login_required
@require_GET
def memories(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    _project, principal = selectors.project_for(user_of(request), project_id)
    form = SearchForm(request.GET or None, initial={"workspace": "*"})
    results: list[Record] = []
    browse = None
    error = ""
    explained: dict[str, Any] | None = None
    elsewhere: list[Any] = []
    time_window: Any = None
    reranked: Any = None
    if form.is_bound and not form.is_valid():
        error = "Fix the filters below."
    else:
        data = form.cleaned_data if form.is_bound else {}
        filters = form.filters() if form.is_bound else {}
        workspace = (data.get("workspace") or "*").strip() or "*"
        try:
            status = data.get("status") or None
            if data.get("q", "").strip():
                answer = memory_search(
                    principal=principal,
                    payload={"query": data["q"], "workspace": workspace, "limit": 50, "explain": bool(data.get("why")),
                             "rerank": bool(data.get("rerank")), **filters},
                )  # fmt: skip
                reranked = answer.get("rerank")
                results = [r for r in answer["results"] if status is None or r["status"] == status]
                explained = answer.get("explain")
                elsewhere = answer["other_workspaces"]
                time_window = answer["time_window"]
            else:
                browse = memory_list(
                    principal=principal,
                    payload={"workspace": workspace, **filters},
                    page=int(request.GET.get("page") or 1),
                    per_page=PAGE_SIZE,
                    status=status,
                    order=data.get("sort") or "newest",
                )
                results = browse.results
        except MMWError as exc:
            error = for_people(exc)
    return page(
        request,
        "dashboard/memories.html",
        **_ctx(principal),
        form=form,
        results=results,
        browse=browse,
        error=error,
        workspaces=workspaces_with_counts(principal),
        pending_cap=PENDING_COUNT_MAX,
        forget_form=ForgetSourceForm(),
        query_string=request.GET.copy().urlencode() if request.GET else "",
        pager_query=query_without(request, "page"),
        export_query=query_without(request, "page", "q"),
        filtered=form.is_bound and _narrowed(request),
        mcp_url=mcp_url(),
        explained=explained,
        reranked=reranked,
        elsewhere=elsewhere,
        time_window=time_window,
        status=400 if error else 200,
    )


@login_required
@require_GET
def memories_export(request: HttpRequest, project_id: uuid.UUID, fmt: str) -> HttpResponseBase:
    """The browser's current filter (workspace, filters, status, sort; not the search words) as
    a streamed JSON Lines or CSV download (``memories.selectors.memory_export``)."""
    project, principal = selectors.project_for(user_of(request), project_id)
    if fmt not in exports.FORMATS:
        raise Http404("unknown export format")
    form = SearchForm(request.GET, initial={"workspace": "*"})
    if not form.is_valid():
        return HttpResponse("Fix the filters: " + form.errors.as_text(), status=400, content_type="text/plain")
    data = form.cleaned_data
    try:
        records = memory_export(
            principal=principal,
            payload={"workspace": (data.get("workspace") or "*").strip() or "*", **form.filters()},
            status=data.get("status") or None,
            order=data.get("sort") or "newest",
        )
    except MMWError as exc:
        raise_as_http(exc)
        return HttpResponse(for_people(exc), status=400, content_type="text/plain")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    return streaming.download(
        streaming.encoded(exports.lines(fmt, records)),
        content_type=exports.FORMATS[fmt],
        filename=f"mmw-{slugify(project.name) or 'project'}-{stamp}.{fmt}",
    )


def _narrowed(request: HttpRequest) -> bool:
    """Whether the person asked for less than every record (a filter, or one workspace), so an
    empty answer means "nothing matches", not "an empty project"."""
    for name in request.GET:
        value = str(request.GET.get(name, "")).strip()
        if name not in ("page", "q") and value and not (name == "workspace" and value == "*"):
            return True
    return False


@login_required
@require_GET
def memory_detail(request: HttpRequest, project_id: uuid.UUID, memory_id: uuid.UUID) -> HttpResponse:
    _project, principal = selectors.project_for(user_of(request), project_id)
    try:
        record = memory_get(principal=principal, memory_id=str(memory_id))["memory"]
        history = memory_history(principal=principal, payload={"memory_id": str(memory_id)})["versions"]
    except MMWError as exc:
        raise_as_http(exc)
        raise Http404(exc.message) from exc
    conflicts = []
    for other in record.get("conflicts_with") or []:
        try:
            conflicts.append(memory_get(principal=principal, memory_id=other)["memory"])
        except MMWError:
            continue
    previews = memory_previews(
        principal=principal, ids=[r["id"] for r in record["graph_relations"]] + list(record["derived_from"])
    )
    return page(
        request,
        "dashboard/memory_detail.html",
        **_ctx(principal),
        record=record,
        history=history,
        conflicts=conflicts,
        previews=previews,
        graph=_relation_graph(record, previews, project_id),
        may_write=principal.membership.may_write,
    )


def _relation_graph(record: Record, previews: dict[str, str], project_id: uuid.UUID) -> str:
    """The record page's SVG graph: its relations (both directions) and the records it was
    derived from, only those the person can read (``previews`` holds exactly those)."""
    edges = [
        graph.Edge(rel["id"], relation_words(rel), rel["direction"], previews[rel["id"]])
        for rel in record["graph_relations"]
        if rel["id"] in previews
    ]
    edges += [
        graph.Edge(source, relation_words({"relation": "derived_from", "direction": "out"}), "out", previews[source])
        for source in record["derived_from"]
        if source in previews
    ]
    return graph.relation_graph(
        record_text=record["content"],
        edges=edges,
        url_for=lambda other: reverse("dashboard:memory", args=[project_id, other]),
        title="Relations of this record",
    )


@login_required
@require_POST
def memory_forget_view(request: HttpRequest, project_id: uuid.UUID, memory_id: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    try:
        answer = memory_forget(principal=principal, payload={"memory_id": str(memory_id), "workspace": "*"})
    except MMWError as exc:
        flash_error(request, exc, refused=_("Not forgotten"))
        return redirect("dashboard:memory", project_id=project.pk, memory_id=memory_id)
    if answer.get("forgotten"):
        messages.success(request, _("Forgotten: the record left search; the deletion is kept for audit."))
    else:
        messages.info(request, _("Nothing to forget: the record was already gone."))
    back = request.POST.get("next", "")
    if back.startswith(f"/p/{project.pk}/"):
        return redirect(back)
    return redirect("dashboard:memories", project_id=project.pk)


BULK_MAX = 100  # records one "Forget selected" may name (the browser shows 20 per page)


@login_required
@require_POST
def memory_forget_selected(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    """Forget the records ticked in the browser, after a review page that lists them (first
    words, only records the person can read). Each goes through ``memory_forget`` (the same
    rules and one audit row per record), all in one transaction."""
    project, principal = selectors.project_for(user_of(request), project_id)
    ids = list(dict.fromkeys(request.POST.getlist("ids")))[:BULK_MAX]
    previews = memory_previews(principal=principal, ids=ids)
    chosen = [i for i in ids if i in previews]
    back = request.POST.get("next", "")
    back = back if back.startswith(f"/p/{project.pk}/") else reverse("dashboard:memories", args=[project.pk])
    if not chosen:
        messages.info(request, _("Tick the records to forget first."))
        return redirect(back)
    if request.POST.get("confirm") != "yes":
        return page(
            request, "dashboard/forget_selected.html", **_ctx(principal), chosen=chosen, previews=previews, back=back
        )
    try:
        with transaction.atomic():
            forgotten = sum(
                bool(memory_forget(principal=principal, payload={"memory_id": i, "workspace": "*"}).get("forgotten"))
                for i in chosen
            )
    except MMWError as exc:
        flash_error(request, exc, refused=_("Nothing forgotten"))
        return redirect(back)
    messages.success(
        request,
        _("Forgot %(forgotten)s record(s): they left search; the deletions are kept for audit.")
        % {"forgotten": forgotten},
    )
    return redirect(back)


@login_required
@require_POST
def memory_keep_view(request: HttpRequest, project_id: uuid.UUID, memory_id: uuid.UUID) -> HttpResponse:
    """ "Keep this version": resolve a conflict with a deliberate new version of this content."""
    project, principal = selectors.project_for(user_of(request), project_id)
    try:
        kept = memory_services.memory_keep_version(principal=principal, memory_id=str(memory_id))
    except MMWError as exc:
        flash_error(request, exc)
        return redirect("dashboard:memory", project_id=project.pk, memory_id=memory_id)
    messages.success(
        request, _("Kept as version %(version)s: the earlier versions are superseded.") % {"version": kept["version"]}
    )
    return redirect("dashboard:memory", project_id=project.pk, memory_id=kept["id"])


@login_required
@require_http_methods(["GET", "POST"])
def forget_source(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    """Forget every record of one source in one workspace, after an explicit confirmation."""
    project, principal = selectors.project_for(user_of(request), project_id)
    form = ForgetSourceForm(request.POST or request.GET or None)
    count = None
    if form.is_bound and form.is_valid():
        source_id, workspace = form.cleaned_data["source_id"], form.cleaned_data["workspace"]
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            try:
                answer = memory_forget(principal=principal, payload={"source_id": source_id, "workspace": workspace})
            except MMWError as exc:
                flash_error(request, exc, refused=_("Not forgotten"))
            else:
                count = answer.get("forgotten_count", 0)
                messages.success(
                    request,
                    _("Forgot %(count)s record(s) of %(source_id)s.") % {"count": count, "source_id": source_id},
                )
                return redirect("dashboard:memories", project_id=project.pk)
        browse = memory_list(
            principal=principal, payload={"workspace": workspace, "source_id": source_id}, page=1, per_page=PAGE_SIZE
        )
        count = browse.page.paginator.count
    return page(
        request,
        "dashboard/forget_source.html",
        **_ctx(principal),
        form=form,
        count=count,
        status=400 if form.is_bound and form.errors else 200,
    )


# --- workspaces ----------------------------------------------------------------------------


@login_required
@require_GET
def workspaces(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    _project, principal = selectors.project_for(user_of(request), project_id)
    rows = workspaces_with_counts(principal)
    return page(request, "dashboard/workspaces.html", **_ctx(principal), rows=rows, pending_cap=PENDING_COUNT_MAX)


@login_required
@require_POST
def workspace_delete(request: HttpRequest, project_id: uuid.UUID, workspace_id: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    workspace = live_workspace(project=project, public_id=workspace_id)
    if workspace is None:
        raise Http404("workspace not found")
    if request.POST.get("confirm") != workspace.name:
        messages.error(
            request, _("Type the workspace name (%(name)s) to confirm the deletion.") % {"name": workspace.name}
        )
        return redirect("dashboard:workspaces", project_id=project.pk)
    try:
        count = memory_services.workspace_delete(workspace=workspace, actor=principal.user)
    except MMWError as exc:
        raise_as_http(exc)
        raise
    messages.success(
        request,
        _("Workspace %(name)s deleted (%(count)s records forgotten); its name stays reserved.")
        % {"name": workspace.name, "count": count},
    )
    return redirect("dashboard:workspaces", project_id=project.pk)


# --- API keys ------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def keys(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    form = KeyForm(request.POST or None, scopes=principal.membership.key_scopes)
    if request.method == "POST" and form.is_valid():
        try:
            issued = api_key_create(
                user=principal.user,
                project=project,
                name=form.cleaned_data["name"],
                device_label=form.cleaned_data["device_label"],
                scopes=form.cleaned_data["scopes"],
                expires_in_days=form.cleaned_data["expires"],
            )
        except MMWError as exc:
            flash_error(request, exc)
            form.add_error(None, for_people(exc))
        else:
            # Rendered once, never stored: a reload of this response cannot show it again.
            response = page(
                request,
                "dashboard/key_created.html",
                **_ctx(principal),
                issued=issued,
                configs=[*configs_for(issued.raw), curl_for(issued.raw, list(issued.api_key.scopes))],
                mcp_url=mcp_url(),
            )
            response["Cache-Control"] = "no-store"
            return response
    project_keys = list(api_keys_for(principal=principal))
    return page(
        request,
        "dashboard/keys.html",
        **_ctx(principal),
        form=form,
        keys=project_keys,
        calls=selectors.key_calls_this_month([k.pk for k in project_keys]),
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def key_first_call(request: HttpRequest, project_id: uuid.UUID, key_id: int) -> HttpResponse:
    """The new-key page's "waiting for the first call… ✓" line (htmx polls it until the key's
    ``last_used_at`` is set; the answer without a trigger ends the polling)."""
    _project, principal = selectors.project_for(user_of(request), project_id)
    api_key = api_keys_for(principal=principal).filter(pk=key_id).first()
    if api_key is None:
        raise Http404("key not found")
    return page(request, "dashboard/_key_first_call.html", **_ctx(principal), key=api_key)


@login_required
@require_POST
def key_revoke(request: HttpRequest, project_id: uuid.UUID, key_id: int) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    api_key = api_keys_for(principal=principal).filter(pk=key_id).first()
    if api_key is None:
        raise Http404("key not found")
    api_key_revoke(api_key=api_key, actor=principal.user)
    if request.headers.get("HX-Request"):  # the swapped row says "revoked"; no flash for a later page
        return page(request, "dashboard/_key_row.html", **_ctx(principal), key=api_key)
    messages.success(request, _("Key mmw_%(prefix)s… revoked: it stopped working now.") % {"prefix": api_key.prefix})
    return redirect("dashboard:keys", project_id=project.pk)


# --- settings ------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def settings_view(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    membership: Membership = principal.membership
    if not membership.manages:
        raise PermissionDenied("only owners and admins can change a project's settings")
    form = NameForm(request.POST if request.POST.get("action") == "rename" else None, initial={"name": project.name})
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "rename" and form.is_valid():
                account_services.project_rename(project=project, actor=principal.user, name=form.cleaned_data["name"])
                messages.success(request, _("Project renamed."))
                return redirect("dashboard:settings", project_id=project.pk)
            if action == "delete":
                if request.POST.get("confirm") != project.name:
                    messages.error(
                        request, _("Type the project name (%(name)s) to confirm the deletion.") % {"name": project.name}
                    )
                    return redirect("dashboard:settings", project_id=project.pk)
                account_services.project_delete(project=project, actor=principal.user)
                messages.success(
                    request, _("Project %(name)s deleted; its keys stopped working.") % {"name": project.name}
                )
                return redirect("dashboard:projects", tenant_id=project.account.tenant_id)
            if action == "access":
                wanted = None
                if request.POST.get("restricted") == "on":
                    wanted = memberships_among(account=project.account, ids=request.POST.getlist("members"))
                project_access_set(project=project, actor=principal.user, members=wanted)
                messages.success(request, _("Project access saved."))
                return redirect("dashboard:settings", project_id=project.pk)
        except MMWError as exc:
            flash_error(request, exc)
            if action == "rename":
                form.add_error("name", for_people(exc))
    access = project_access_of(project)
    org_members = active_members(account=project.account)
    return page(
        request,
        "dashboard/settings.html",
        **_ctx(principal),
        form=form,
        restricted=bool(access and access.restricted),
        listed={m.pk for m in access.members.all()} if access else set(),
        org_members=org_members,
        with_access=project_members(project=project, actor=principal.user),
        is_org=project.account.kind == "organization",
        gap=organization_features_gap(project.account),
        status=400 if form.errors else 200,
        delete_url=reverse("dashboard:settings", args=[project.pk]),
    )
