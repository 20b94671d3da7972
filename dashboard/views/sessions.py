"""A project's uploaded sessions: the list, one session read as a conversation, search within
sessions, share with the project, forget. Each view parses, calls ``transcripts``, renders."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from dashboard import selectors
from dashboard.views.common import flash_error, page, raise_as_http, user_of
from interfaces.people_errors import for_people
from memories.inputs import QUERY_CHARS
from mmw.errors import MMWError
from transcripts import inputs
from transcripts.presenters import SessionHit
from transcripts.selectors import session_list, session_read_by_id, session_search
from transcripts.services import session_forget_by_id, session_share

PAGE_SIZE = 50
TURNS_PER_PAGE = 200


class SessionSearchForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=QUERY_CHARS,
        label=gettext_lazy("Search"),
        widget=forms.TextInput(attrs={"type": "search"}),
    )
    client = forms.CharField(required=False, max_length=inputs.CLIENT_CHARS, label=gettext_lazy("Client"))


def _ctx(principal: Any) -> dict[str, Any]:
    return {"account": principal.account, "membership": principal.membership, "project": principal.project}


@login_required
@require_GET
def sessions(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    _project, principal = selectors.project_for(user_of(request), project_id)
    form = SessionSearchForm(request.GET or None)
    listing: dict[str, Any] = {"sessions": [], "total": 0}
    hits: list[SessionHit] = []
    error = ""
    offset = _int(request.GET.get("offset"), 0)
    if form.is_bound and not form.is_valid():
        error = "Fix the search below."
    else:
        data = form.cleaned_data if form.is_bound else {}
        client = (data.get("client") or "").strip() or None
        try:
            if (data.get("q") or "").strip():
                payload = {"query": data["q"], "limit": 20, "context": 1, "client": client}
                hits = session_search(principal=principal, payload=payload)["results"]
            else:
                payload = {"client": client, "limit": PAGE_SIZE, "offset": offset}
                listing = session_list(principal=principal, payload=payload)
        except MMWError as exc:
            error = for_people(exc)
    return page(
        request,
        "dashboard/sessions.html",
        **_ctx(principal),
        form=form,
        listing=listing,
        hits=hits,
        error=error,
        offset=offset,
        next_offset=offset + PAGE_SIZE if offset + PAGE_SIZE < listing["total"] else None,
        previous_offset=max(0, offset - PAGE_SIZE) if offset else None,
        status=400 if error else 200,
    )


@login_required
@require_GET
def session_detail(request: HttpRequest, project_id: uuid.UUID, session_pk: uuid.UUID) -> HttpResponse:
    _project, principal = selectors.project_for(user_of(request), project_id)
    after = _int(request.GET.get("after"), None)
    try:
        answer = session_read_by_id(principal=principal, session_pk=session_pk, after=after, limit=TURNS_PER_PAGE)
    except MMWError as exc:
        raise_as_http(exc)
        raise
    return page(
        request,
        "dashboard/session_detail.html",
        **_ctx(principal),
        session=answer["session"],
        turns=answer["turns"],
        next_after=answer["next_after"],
        is_author=answer["session"]["author"] == principal.user.email,
        may_write=principal.membership.may_write,
    )


@login_required
@require_POST
def session_share_view(request: HttpRequest, project_id: uuid.UUID, session_pk: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    shared = request.POST.get("shared") == "1"
    try:
        session_share(principal=principal, session_pk=session_pk, shared=shared)
    except MMWError as exc:
        flash_error(request, exc)
    else:
        messages.success(
            request, _("Shared with the project.") if shared else _("Private again: only you see this session.")
        )
    return redirect("dashboard:session", project_id=project.pk, session_pk=session_pk)


@login_required
@require_POST
def session_forget_view(request: HttpRequest, project_id: uuid.UUID, session_pk: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    try:
        forgotten = session_forget_by_id(principal=principal, session_pk=session_pk)
    except MMWError as exc:
        flash_error(request, exc, refused=_("Not forgotten"))
        return redirect("dashboard:session", project_id=project.pk, session_pk=session_pk)
    if forgotten:
        messages.success(request, _("Forgotten: the session left search; the deletion is kept for audit."))
    return redirect("dashboard:sessions", project_id=project.pk)


def _int(raw: str | None, default: int | None) -> Any:
    try:
        return max(-1, int(raw)) if raw is not None else default
    except ValueError:
        return default
