"""Resolving a workspace argument against the caller's project.

A workspace is named (unique per project) or, as shown by ``list_workspaces``, given by its id.
An id that is not a workspace of the caller's project — another project's, another account's,
or none at all — is answered the same way: ``403 Forbidden: workspace access denied for project``.
A deleted workspace's name can never be used again in that project.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from accounts.keys import Principal
from accounts.models import Workspace
from mmw.errors import Conflict, Forbidden, MMWError

ALL = "*"


@dataclass(frozen=True)
class WorkspaceState:
    """What a workspace argument names: an existing live workspace, a name still free, or a
    problem to report (kept, not raised, so writes can report it in the documented order)."""

    name: str
    workspace: Workspace | None
    problem: MMWError | None = None

    def raise_problem(self) -> None:
        if self.problem is not None:
            raise self.problem


def workspace_state(principal: Principal, argument: str) -> WorkspaceState:
    """Resolve ``argument`` (a name or a workspace id) within the caller's project."""
    as_id = _as_uuid(argument)
    if as_id is not None:
        return _by_id(principal, argument, as_id)
    found = Workspace.objects.filter(project=principal.project, name=argument).first()
    if found is not None and found.deleted_at is not None:
        return WorkspaceState(argument, None, _deleted(argument))
    return WorkspaceState(argument, found)


def _by_id(principal: Principal, argument: str, workspace_id: uuid.UUID) -> WorkspaceState:
    found = Workspace.objects.filter(public_id=workspace_id, project=principal.project).first()
    if found is None:
        return WorkspaceState(argument, None, Forbidden("403 Forbidden: workspace access denied for project"))
    if found.deleted_at is not None:
        return WorkspaceState(found.name, None, _deleted(found.name))
    return WorkspaceState(found.name, found)


def _deleted(name: str) -> MMWError:
    return Conflict(f"workspace '{name}' was deleted and cannot be reused", code="workspace_deleted")


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
