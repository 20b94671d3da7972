"""Project access: every member by default, or a list of members (plus owners and admins)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from accounts.models import Project, User
from accounts.services import audit_record
from mmw.errors import Conflict, NotFound, Template
from orgs.models import Membership, ProjectAccess
from orgs.selectors import acting_membership
from orgs.services._common import require_organization, require_organization_features

# The refusals a page may show a person (translated there by template: interfaces.people_errors).
OPEN_TO_EVERY_MEMBER = Template("the project is open to every member: restrict it to a list of members first")


def _project_for_access(project: Project, actor: User) -> ProjectAccess:
    if project.deleted_at is not None:
        raise NotFound("project not found")
    require_organization(project.account, "project access lists exist only in organizations")
    acting_membership(account=project.account, user=actor, manage=True)
    access, _ = ProjectAccess.objects.select_for_update().get_or_create(project=project)
    return access


def _access_audit(actor: User, project: Project, access: ProjectAccess, **data: Any) -> None:
    audit_record(
        action="project_access.changed",
        account=project.account,
        actor_user=actor,
        target_type="project",
        target_id=str(project.pk),
        data={
            "restricted": access.restricted,
            "members": sorted(access.members.values_list("user__email", flat=True)),
            **data,
        },
    )


@transaction.atomic
def project_access_set(*, project: Project, actor: User, members: Iterable[Membership] | None) -> ProjectAccess:
    """``members=None``: every member of the account may use the project (the default).
    A list: only those memberships, plus owners and admins. Keys of members left out stop
    working at once (they work again if access is given back)."""
    access = _project_for_access(project, actor)
    if members is None:
        access.restricted = False
        access.save(update_fields=["restricted", "updated_at"])
        access.members.clear()
    else:
        require_organization_features(project.account)
        chosen = list(members)
        if any(m.account_id != project.account_id for m in chosen):
            raise NotFound("membership not found")
        access.restricted = True
        access.save(update_fields=["restricted", "updated_at"])
        access.members.set(chosen)
    _access_audit(actor, project, access)
    return access


@transaction.atomic
def project_access_grant(*, project: Project, membership: Membership, actor: User) -> ProjectAccess:
    """Add one membership to a restricted project's list (nothing to do on an open project)."""
    access = _project_for_access(project, actor)
    if membership.account_id != project.account_id:
        raise NotFound("membership not found")
    if access.restricted and not access.members.filter(pk=membership.pk).exists():
        require_organization_features(project.account)
        access.members.add(membership)
        _access_audit(actor, project, access, granted=membership.user.email)
    return access


@transaction.atomic
def project_access_revoke(*, project: Project, membership: Membership, actor: User) -> ProjectAccess:
    """Take one membership off a restricted project's list; an open project must first be
    restricted to a list (``project_access_set``), so no one loses access by surprise."""
    access = _project_for_access(project, actor)
    if membership.account_id != project.account_id:
        raise NotFound("membership not found")
    if not access.restricted:
        raise Conflict(OPEN_TO_EVERY_MEMBER)
    if access.members.filter(pk=membership.pk).exists():
        access.members.remove(membership)
        _access_audit(actor, project, access, revoked=membership.user.email)
    return access
