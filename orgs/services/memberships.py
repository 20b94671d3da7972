"""Memberships and roles: deactivate, reactivate, remove (or leave), change role, transfer
ownership. Each locks the account row first (see ``orgs.services``)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Account, ApiKey, User
from accounts.services import audit_record
from mmw.errors import Conflict, Forbidden, InvalidInput, NotFound, Template
from orgs.models import Membership
from orgs.selectors import acting_membership, is_last_owner
from orgs.services._common import lock_account, require_organization_features

Role = Membership.Role

# The refusals a page may show a person (translated there by template: interfaces.people_errors).
OWNER_UNTOUCHABLE = Template("admins cannot change, deactivate or remove an owner")
LAST_OWNER = Template("an organization must keep at least one active owner")
OWNER_GRANTS_OWNER = Template("only an owner can grant the owner role")
OWNER_TRANSFERS = Template("only an owner can transfer ownership")
TRANSFER_TO_ANOTHER = Template("ownership can only be transferred to another member")
TRANSFER_TO_ACTIVE = Template("ownership can only be transferred to an active member")


def _target(membership: Membership) -> Membership:
    """Lock the account, then re-read the target membership (the caller's copy may be stale)."""
    lock_account(membership.account_id)
    return Membership.objects.select_related("account", "user").get(pk=membership.pk)


def _authorise(actor: User, target: Membership) -> Membership:
    """The actor's membership, if it may act on ``target``: owners on anyone, admins on non-owners."""
    acting = acting_membership(account=target.account, user=actor, manage=True)
    if target.role == Role.OWNER and acting.role != Role.OWNER:
        raise Forbidden(OWNER_UNTOUCHABLE)
    return acting


def _keep_an_owner(target: Membership) -> None:
    """Refuse when ``target`` is the last active owner (call before it stops being one)."""
    if is_last_owner(target):
        raise Conflict(LAST_OWNER, code="last_owner")


def _membership_audit(action: str, actor: User, target: Membership, **data: Any) -> None:
    audit_record(
        action=action,
        account=target.account,
        actor_user=actor,
        target_type="membership",
        target_id=str(target.pk),
        data={"user": target.user.email, **data},
    )


@transaction.atomic
def membership_remove(*, membership: Membership, actor: User) -> None:
    """Remove a member (or, with ``actor`` the member, leave): the membership, its departments and
    project-access entries go, and the member's keys of this account are revoked. Their records
    stay (a removed author's ``author``-visibility drafts are then seen by no one)."""
    target = _target(membership)
    leaving = target.user_id == actor.pk and target.is_active
    if not leaving:
        _authorise(actor, target)
    _keep_an_owner(target)
    now = timezone.now()
    live_keys = ApiKey.objects.filter(account_id=target.account_id, user_id=target.user_id, revoked_at__isnull=True)
    revoked = list(live_keys.values_list("prefix", flat=True))
    live_keys.update(revoked_at=now)
    _membership_audit("membership.removed", actor, target, role=target.role, revoked_keys=revoked, left=leaving)
    target.delete()


@transaction.atomic
def membership_deactivate(*, membership: Membership, actor: User) -> Membership:
    """Deactivate a membership: from the next request on, its keys resolve to nothing and it can
    neither read nor write (idempotent)."""
    target = _target(membership)
    _authorise(actor, target)
    if target.is_active:
        _keep_an_owner(target)
        target.is_active = False
        target.save(update_fields=["is_active"])
        _membership_audit("membership.deactivated", actor, target, role=target.role)
    return target


@transaction.atomic
def membership_reactivate(*, membership: Membership, actor: User) -> Membership:
    """Reactivate a membership; its unrevoked keys work again (idempotent)."""
    target = _target(membership)
    _authorise(actor, target)
    if not target.is_active:
        require_organization_features(target.account)
        target.is_active = True
        target.save(update_fields=["is_active"])
        _membership_audit("membership.reactivated", actor, target, role=target.role)
    return target


@transaction.atomic
def membership_role_change(*, membership: Membership, actor: User, role: str) -> Membership:
    """Give ``membership`` another role. Only an owner grants or takes away ownership."""
    if role not in Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Role.values)}")
    target = _target(membership)
    acting = _authorise(actor, target)
    if role == Role.OWNER and acting.role != Role.OWNER:
        raise Forbidden(OWNER_GRANTS_OWNER)
    if target.role == role:
        return target
    if role != Role.MEMBER:  # a plain member is what every plan has: stepping down is always allowed
        require_organization_features(target.account)
    _keep_an_owner(target)
    previous = target.role
    target.role = role
    target.save(update_fields=["role"])
    _membership_audit("membership.role_changed", actor, target, previous=previous, role=role)
    return target


@transaction.atomic
def ownership_transfer(*, account: Account, actor: User, to: Membership) -> Membership:
    """Make ``to`` (an active member) an owner and the acting owner an admin, in one step."""
    lock_account(account.pk)
    acting = acting_membership(account=account, user=actor, manage=True)
    if acting.role != Role.OWNER:
        raise Forbidden(OWNER_TRANSFERS)
    target = Membership.objects.select_related("account", "user").filter(pk=to.pk, account=account).first()
    if target is None:
        raise NotFound("membership not found")
    if target.pk == acting.pk:
        raise InvalidInput(TRANSFER_TO_ANOTHER)
    if not target.is_active:
        raise Conflict(TRANSFER_TO_ACTIVE)
    previous = target.role
    target.role = Role.OWNER
    target.save(update_fields=["role"])
    acting.role = Role.ADMIN
    acting.save(update_fields=["role"])
    audit_record(
        action="ownership.transferred",
        account=account,
        actor_user=actor,
        target_type="membership",
        target_id=str(target.pk),
        data={"from": actor.email, "to": target.user.email, "previous_role": previous},
    )
    return target
