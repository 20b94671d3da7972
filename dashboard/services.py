"""Writes the dashboard needs that no other app offers yet: creating (within the plan), renaming and
deleting projects (workspaces: ``memories.services.workspace_delete``). Each checks the actor's
membership, runs in one transaction and writes its audit row inside it."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Account, Project, User
from accounts.services import audit_record, project_get_or_create
from billing import gate
from memories.services import MANAGE_REFUSAL
from mmw import text
from mmw.errors import Conflict
from orgs.selectors import acting_membership


@transaction.atomic
def project_create(*, account: Account, actor: User, name: str) -> Project:
    """A new project, within the plan's number of projects; an existing name is a clear error."""
    acting_membership(account=account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    clean = text.clean_label("project name", name)
    if Project.objects.filter(account=account, name__iexact=clean, deleted_at__isnull=True).exists():
        raise Conflict(f"a project named {clean!r} already exists")
    gate.check_project_limit(account)
    project, _ = project_get_or_create(account=account, name=clean, actor=actor)
    return project


@transaction.atomic
def project_rename(*, project: Project, actor: User, name: str) -> Project:
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    clean = text.clean_label("project name", name)
    clash = Project.objects.filter(account=project.account, name__iexact=clean, deleted_at__isnull=True)
    if clash.exclude(pk=project.pk).exists():
        raise Conflict(f"a project named {clean!r} already exists")
    old = project.name
    project.name = clean
    try:
        with transaction.atomic():
            project.save(update_fields=["name"])
    except IntegrityError:
        raise Conflict(f"a project named {clean!r} already exists") from None
    audit_record(
        action="project.renamed",
        account=project.account,
        actor_user=actor,
        target_type="project",
        target_id=str(project.pk),
        data={"from": old, "to": clean},
    )
    return project


@transaction.atomic
def project_delete(*, project: Project, actor: User) -> Project:
    """Soft-delete the project: its keys stop working at once (the key resolver refuses keys of a
    deleted project) and its records leave every read. Idempotent."""
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    if project.deleted_at is None:
        project.deleted_at = timezone.now()
        project.save(update_fields=["deleted_at"])
        audit_record(
            action="project.deleted",
            account=project.account,
            actor_user=actor,
            target_type="project",
            target_id=str(project.pk),
            data={"name": project.name},
        )
    return project
