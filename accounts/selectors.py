"""What account management reads: a project's API keys as one person may see them, and one live
workspace of a project. Surfaces (the dashboard, commands) list and look up through these, so
"who sees which key" is decided once, beside who may revoke one (``services.api_key_revoke``)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from accounts.keys import Principal
from accounts.models import ApiKey, Project, Workspace


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
