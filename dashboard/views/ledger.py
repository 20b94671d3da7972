"""A project's Ledger tab (docs/ledger.md): entries with filters, balances per currency, upcoming
reminders with a Complete button, a confirmed Reverse, and the CSV export. Each view passes the
query's values to ``ledger.selectors`` / ``ledger.services`` raw (they validate, as on REST and
MCP) and renders; the person acts with their dashboard principal."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from dashboard import selectors
from dashboard.templatetags.mmw_dashboard import exact_date, money
from dashboard.views.common import flash_error, page, raise_as_http, user_of
from interfaces.people_errors import for_people
from ledger import inputs
from ledger.selectors import ledger_balance, ledger_list, ledger_rows, ledger_upcoming
from ledger.services import ledger_complete, ledger_reverse
from mmw import streaming
from mmw.errors import MMWError

PAGE_SIZE = 50
FILTERS = ("kind", "currency", "category", "counterparty", "text", "since", "until")


def _filters(request: HttpRequest) -> dict[str, str]:
    """The filters the page was asked for: the non-blank query values of ``FILTERS``."""
    return {name: request.GET[name].strip() for name in FILTERS if request.GET.get(name, "").strip()}


def _offset(request: HttpRequest) -> int:
    try:
        return max(0, min(int(request.GET.get("offset", "0")), inputs.MAX_OFFSET))
    except ValueError:
        return 0


@login_required
@require_GET
def ledger(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    _project, principal = selectors.project_for(user_of(request), project_id)
    filters = _filters(request)
    offset = _offset(request)
    error = ""
    listing: dict[str, Any] = {"entries": [], "next_offset": None}
    balances: list[Any] = []
    upcoming: list[Any] = []
    try:
        listing = dict(ledger_list(principal=principal, payload={**filters, "limit": PAGE_SIZE, "offset": offset}))
        narrowing = {k: v for k, v in filters.items() if k in ("currency", "category")}
        balances = list(ledger_balance(principal=principal, payload=narrowing)["balances"])
        upcoming = list(ledger_upcoming(principal=principal, payload={})["reminders"])
    except MMWError as exc:
        raise_as_http(exc)
        error = for_people(exc)
    query = urlencode(filters)
    return page(
        request,
        "dashboard/ledger.html",
        account=principal.account,
        membership=principal.membership,
        project=principal.project,
        filters=filters,
        kinds=inputs.KINDS,
        entries=listing["entries"],
        balances=balances,
        upcoming=upcoming,
        error=error,
        may_write=principal.membership.may_write,
        next_offset=listing["next_offset"],
        previous_offset=max(0, offset - PAGE_SIZE) if offset else None,
        query=query,
        status=400 if error else 200,
    )


@login_required
@require_GET
def ledger_export(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse | StreamingHttpResponse:
    """Every entry matching the page's filters as CSV, streamed; cells escaped for spreadsheets."""
    project, principal = selectors.project_for(user_of(request), project_id)
    try:
        rows = ledger_rows(principal=principal, payload=_filters(request))
    except MMWError as exc:
        raise_as_http(exc)
        return HttpResponse(for_people(exc), status=400, content_type="text/plain; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    return streaming.download(
        streaming.encoded(rows), content_type="text/csv; charset=utf-8", filename=f"mmw-ledger-{project.pk}-{stamp}.csv"
    )


@login_required
@require_POST
def ledger_complete_view(request: HttpRequest, project_id: uuid.UUID, entry_id: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    payload = {"entry_id": str(entry_id), "due_at": request.POST.get("due_at") or None}
    try:
        answer = ledger_complete(principal=principal, payload=payload)
    except MMWError as exc:
        flash_error(request, exc, refused=_("Not completed"))
    else:
        entry = answer["entry"]
        messages.success(
            request,
            _("Completed: %(amount)s %(currency)s due %(completes_due_at)s.")
            % {
                "amount": money(entry["amount"]),
                "currency": entry["currency"],
                "completes_due_at": exact_date(entry["completes_due_at"]),
            },
        )
    return redirect("dashboard:ledger", project_id=project.pk)


@login_required
@require_POST
def ledger_reverse_view(request: HttpRequest, project_id: uuid.UUID, entry_id: uuid.UUID) -> HttpResponse:
    project, principal = selectors.project_for(user_of(request), project_id)
    if request.POST.get("confirm") != "1":
        messages.error(request, _("Not reversed: tick the box to confirm the reversal."))
        return redirect("dashboard:ledger", project_id=project.pk)
    try:
        ledger_reverse(principal=principal, payload={"entry_id": str(entry_id), "reason": request.POST.get("reason")})
    except MMWError as exc:
        flash_error(request, exc, refused=_("Not reversed"))
    else:
        messages.success(request, _("Reversed: a reversing entry was added."))
    return redirect("dashboard:ledger", project_id=project.pk)
