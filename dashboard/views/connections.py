"""OAuth consent (``/oauth/consent/<id>``) and Dashboard → Connected apps.

The consent page is where ``/oauth/authorize`` sends the person: it names the client, the host it
will send the answer to and whether the client registered itself; the person picks one project
and the scopes, or refuses. Either answer goes back to the client's redirect URI (RFC 6749
§4.1.2: ``code`` + ``state``, or ``error=access_denied``). Everything is decided by
``oauth.services``; this only parses the form and redirects.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import services as account_services
from accounts.models import Project, User
from dashboard.selectors import memberships_of, projects_of
from dashboard.views.common import flash_error, page, user_of
from mmw import csp
from mmw.errors import MMWError
from oauth import config, selectors, services
from oauth.models import Grant, PendingAuthorization

SCOPE_TEXT = {
    "memory:read": gettext_lazy("Search and read memories in the project"),
    "memory:write": gettext_lazy("Remember and forget memories in the project"),
    "ledger:read": gettext_lazy("List ledger entries, balances and reminders in the project"),
    "ledger:write": gettext_lazy("Record and reverse ledger entries in the project"),
}


def _answer(pending: PendingAuthorization, **params: str) -> HttpResponseRedirect:
    """Redirect to the client's registered redirect URI (it was matched exactly at /oauth/authorize),
    with ``state`` and the issuer as ``iss`` (RFC 9207), on success and refusal alike."""
    if pending.state:
        params["state"] = pending.state
    params["iss"] = config.issuer()
    separator = "&" if urlsplit(pending.redirect_uri).query else "?"
    response = HttpResponseRedirect(pending.redirect_uri + separator + urlencode(params))
    response.allowed_schemes = ["http", "https"]
    return response


@login_required
@require_http_methods(["GET", "POST"])
def consent(request: HttpRequest, public_id: str) -> HttpResponse:
    user = user_of(request)
    pending = selectors.pending_authorization(public_id=public_id[:64])
    if pending is None or pending.answered_at is not None or pending.expires_at <= timezone.now():
        raise Http404("this authorization request has expired or was already answered")
    projects = [p for m in memberships_of(user) for p, _ in projects_of(m)]
    if request.method == "POST":
        if request.POST.get("decision") != "approve":
            try:
                services.authorization_refuse(pending=pending)
            except MMWError as exc:
                raise Http404(exc.message) from exc
            return _answer(pending, error="access_denied", error_description="the person refused")
        try:
            chosen = _chosen_project(request, user, projects)
            if chosen is None:
                messages.error(request, _("choose a project"))
            else:
                approved = services.authorization_approve(
                    pending=pending, user=user, project=chosen, scopes=request.POST.getlist("scopes")
                )
                return _answer(pending, code=approved.code)
        except MMWError as exc:
            flash_error(request, exc)
    scopes = [(s, SCOPE_TEXT.get(s, s)) for s in pending.scopes]
    response = page(
        request,
        "dashboard/consent.html",
        account=None,
        pending=pending,
        client=pending.client,
        redirect_host=urlsplit(pending.redirect_uri).netloc,
        projects=projects,
        scopes=scopes,
    )
    # The form's answer is a redirect to the client: CSP's form-action covers redirects after a
    # submit, so this page (only) also allows the client's redirect origin.
    target = urlsplit(pending.redirect_uri)
    policy = settings.MMW_CONTENT_SECURITY_POLICY.replace(
        "form-action 'self'", f"form-action 'self' {target.scheme}://{target.netloc}", 1
    )
    response[csp.HEADER] = policy
    return response


def _chosen_project(request: HttpRequest, user: User, projects: list[Project]) -> Project | None:
    """The project picked on the form. A person with none yet (who signed up on the way) names
    one instead: it is created in their personal account, under the same rules as on the
    projects page (``project_create``: its name, the plan's number of projects)."""
    if projects:
        return next((p for p in projects if str(p.pk) == request.POST.get("project")), None)
    account = account_services.personal_account(user=user)
    return account_services.project_create(account=account, actor=user, name=request.POST.get("new_project", ""))


@login_required
@require_GET
def connected_apps(request: HttpRequest) -> HttpResponse:
    grants = selectors.grants_of(user=user_of(request))
    return page(request, "dashboard/connected_apps.html", account=None, grants=grants, scope_text=SCOPE_TEXT)


@login_required
@require_POST
def connected_app_revoke(request: HttpRequest, grant_id: int) -> HttpResponse:
    user = user_of(request)
    grant = get_object_or_404(Grant.objects.select_related("client", "project__account"), pk=grant_id, user=user)
    try:
        services.grant_revoke(grant=grant, actor=user)
    except MMWError as exc:
        flash_error(request, exc)
    else:
        messages.success(
            request,
            _("%(client_name)s can no longer reach %(name)s.")
            % {"client_name": grant.client.client_name, "name": grant.project.name},
        )
    return redirect("dashboard:connected-apps")
