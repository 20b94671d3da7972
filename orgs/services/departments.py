"""Departments: created, renamed and deleted by owners and admins, who also add and remove
members. A member's departments decide which ``department`` records they read."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from accounts.models import Account, User
from accounts.services import audit_record
from mmw import text
from mmw.errors import Conflict, NotFound, Template
from orgs.models import Department, Membership
from orgs.selectors import acting_membership
from orgs.services._common import lock_account, require_organization, require_organization_features

MAX_NAME = 200
# The refusals a page may show a person (translated there by template: interfaces.people_errors).
DEPARTMENT_EXISTS = Template("a department named %(name)s already exists")


def _department_name(name: str) -> str:
    return text.clean_label("department name", name, MAX_NAME)


def _unique_department_name(account: Account, name: str, exclude: int | None = None) -> None:
    taken = Department.objects.filter(account=account, name__iexact=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        raise Conflict(DEPARTMENT_EXISTS, name=repr(name))


def _department_audit(action: str, actor: User, department: Department, **data: Any) -> None:
    audit_record(
        action=action,
        account=department.account,
        actor_user=actor,
        target_type="department",
        target_id=str(department.pk),
        data={"name": department.name, **data},
    )


@transaction.atomic
def department_create(*, account: Account, actor: User, name: str) -> Department:
    require_organization(account, "departments exist only in organizations")
    acting_membership(account=account, user=actor, manage=True)
    require_organization_features(account)
    clean = _department_name(name)
    lock_account(account.pk)
    _unique_department_name(account, clean)
    department = Department.objects.create(account=account, name=clean)
    _department_audit("department.created", actor, department)
    return department


@transaction.atomic
def department_rename(*, department: Department, actor: User, name: str) -> Department:
    acting_membership(account=department.account, user=actor, manage=True)
    clean = _department_name(name)
    lock_account(department.account_id)
    _unique_department_name(department.account, clean, exclude=department.pk)
    previous = department.name
    department.name = clean
    department.save(update_fields=["name"])
    _department_audit("department.renamed", actor, department, previous=previous)
    return department


@transaction.atomic
def department_delete(*, department: Department, actor: User) -> None:
    """Delete a department. Records written for it keep its id, which no member holds any more:
    they stay readable by their author (and by members of other departments they name)."""
    acting_membership(account=department.account, user=actor, manage=True)
    _department_audit("department.deleted", actor, department, members=department.members.count())
    department.delete()


def _same_account(department: Department, membership: Membership) -> None:
    if membership.account_id != department.account_id:
        raise NotFound("membership not found")


@transaction.atomic
def department_member_add(*, department: Department, membership: Membership, actor: User) -> None:
    """Add a member; from their next request they read the department's records, old ones too."""
    acting_membership(account=department.account, user=actor, manage=True)
    require_organization_features(department.account)
    _same_account(department, membership)
    if not department.members.filter(pk=membership.pk).exists():
        department.members.add(membership)
        _department_audit("department.member_added", actor, department, user=membership.user.email)


@transaction.atomic
def department_member_remove(*, department: Department, membership: Membership, actor: User) -> None:
    """Remove a member; from their next request they no longer read the department's records
    (except those they wrote themselves)."""
    acting_membership(account=department.account, user=actor, manage=True)
    _same_account(department, membership)
    if department.members.filter(pk=membership.pk).exists():
        department.members.remove(membership)
        _department_audit("department.member_removed", actor, department, user=membership.user.email)
