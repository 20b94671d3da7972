"""What account management reads: a project's API keys as one person may see them, and one live
workspace of a project. Surfaces (the dashboard, commands) list and look up through these, so
"who sees which key" is decided once, beside who may revoke one (``services.api_key_revoke``)."""

from __future__ import annotations

import contextlib
import re
import uuid

from django.db.models import Q, QuerySet

from accounts.keys import KEY_PREFIX, LOOKUP_CHARS, Principal
from accounts.models import Account, ApiKey, Project, Workspace

# A key as people paste it: "Bearer mmw_DtDrnBJw…", "mmw_DtDrnBJw...", "mmw_DtDrnBJw", the whole
# key, or the bare prefix "DtDrnBJw". Keys use letters and digits only after "mmw_".
_PASTED_KEY = re.compile(
    rf"(?:bearer\s+)?(?:{KEY_PREFIX})?(?P<prefix>[A-Za-z0-9]{{{LOOKUP_CHARS},}})(?:…|\.\.\.)?", re.IGNORECASE
)


def api_keys_for(*, principal: Principal) -> QuerySet[ApiKey]:
    """The keys of ``principal``'s project that its person may see and revoke, newest first:
    every key for owners and admins, their own keys for everyone else."""
    keys = ApiKey.objects.filter(project=principal.project).select_related("user").order_by("-created_at")
    if not principal.membership.manages:
        keys = keys.filter(user=principal.user)
    return keys


def live_workspace(*, project: Project, public_id: uuid.UUID) -> Workspace | None:
    """The workspace ``public_id`` of ``project``, unless it was deleted (or is another project's)."""
    return Workspace.objects.filter(project=project, public_id=public_id, deleted_at__isnull=True).first()


def key_prefix_in(term: str) -> str | None:
    """The lookup prefix of a key written in any of the forms people paste (see ``_PASTED_KEY``),
    or None when ``term`` cannot be one."""
    match = _PASTED_KEY.fullmatch(term.strip())
    return match.group("prefix")[:LOOKUP_CHARS] if match else None


def accounts_matching(term: str) -> QuerySet[Account]:
    """Accounts a support search names: a member's e-mail (or part of it), the tenant id, the
    account's name, a project's id, or any form of one of its keys (``key_prefix_in``)."""
    term = term.strip()
    if not term:
        return Account.objects.none()
    found = Q(tenant_id__iexact=term) | Q(name__icontains=term) | Q(memberships__user__email__icontains=term)
    with contextlib.suppress(ValueError):
        found |= Q(projects__id=uuid.UUID(term))
    prefix = key_prefix_in(term)
    if prefix is not None:
        found |= Q(api_keys__prefix=prefix)
    ids = Account.objects.filter(found).values("pk")
    return Account.objects.filter(pk__in=ids)
