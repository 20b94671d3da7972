"""The dashboard acts for a signed-in person: it builds their ``Principal`` for one project."""

from __future__ import annotations

from accounts.keys import VIA_DASHBOARD, Principal, principal_for
from accounts.models import ALL_SCOPES, Project, User


def principal_for_user(user: User, project: Project) -> Principal | None:
    """The principal of ``user`` in ``project`` (no key; read and write scopes, so what a person
    may do is decided by their membership alone), or ``None`` when they may not use the project:
    no active membership, no project access, a deleted project or an inactive user. The principal
    says it comes ``via`` the dashboard: a person browsing is not an API call, so billing neither
    meters nor rate-limits it (quotas and the account's billing state still apply)."""
    return principal_for(user=user, project=project, api_key=None, scopes=frozenset(ALL_SCOPES), via=VIA_DASHBOARD)
