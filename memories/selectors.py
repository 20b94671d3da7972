"""Everything that reads memories, always scoped to the calling principal."""

from __future__ import annotations

from typing import Any

from accounts.keys import Principal
from accounts.models import Workspace
from memories.models import Memory

API_VERSION = "1.0"


def envelope(principal: Principal, workspace: str) -> dict[str, Any]:
    """The fields every response carries."""
    return {
        "api_version": API_VERSION,
        "tenant_id": principal.account.tenant_id,
        "project_id": str(principal.project.id),
        "workspace": workspace,
    }


def workspace_list(*, principal: Principal) -> dict[str, Any]:
    """The live workspaces of the caller's project, with their live record counts."""
    rows = []
    for ws in Workspace.objects.filter(project=principal.project, deleted_at__isnull=True).order_by("name"):
        count = Memory.objects.live().filter(workspace=ws).count()
        rows.append({"name": ws.name, "memory_count": count, "created_at": ws.created_at.isoformat()})
    return {**envelope(principal, "*"), "workspaces": rows}
