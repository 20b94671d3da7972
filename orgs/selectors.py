"""Everything that reads organisations: memberships, project access, departments, the audit log.

The key resolver (``accounts.keys``) asks ``has_project_access`` and ``department_ids_of`` for
every request; the org services ask ``acting_membership`` who the caller is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from django.db.models import QuerySet

from accounts.models import Account, AuditEvent, Project, User
from mmw.errors import Forbidden, NotFound, Template
from orgs.models import Department, Invitation, Membership, ProjectAccess

_M = TypeVar("_M", Membership, Department, Invitation)

MANAGING_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)
AUDIT_PAGE_MAX = 500
AUDIT_EXPORT_MAX = 50_000  # rows one CSV download of the audit log may hold
AUDIT_REFUSAL = "only owners and admins can read the audit log"


def active_membership(*, account: Account, user: User) -> Membership | None:
    """The user's active membership in the account, or None (not a member, or deactivated)."""
    return Membership.objects.filter(account=account, user=user, is_active=True).first()


def is_last_owner(membership: Membership) -> bool:
    """Whether ``membership`` is its account's only active owner (who may not leave or step down)."""
    if membership.role != Membership.Role.OWNER or not membership.is_active:
        return False
    others = Membership.objects.filter(account_id=membership.account_id, role=Membership.Role.OWNER, is_active=True)
    return not others.exclude(pk=membership.pk).exists()


def may_revoke(actor: User, *, holder_id: int, account: Account, staff_permission: str) -> bool:
    """Whether ``actor`` may revoke a credential (an API key, an OAuth grant) held by user
    ``holder_id`` in ``account``: its holder, support staff with ``staff_permission``, or an
    active owner or admin of the account."""
    if actor.pk == holder_id:
        return True
    if actor.is_active and actor.is_staff and actor.has_perm(staff_permission):
        return True
    membership = active_membership(account=account, user=actor)
    return membership is not None and membership.manages


def acting_membership(
    *,
    account: Account,
    user: User,
    manage: bool,
    refusal: str | Template = "only owners and admins can manage this organization",
) -> Membership:
    """The caller's active membership, which must be an owner's or admin's when ``manage``.

    A caller who is not an active member gets the same answer as for an account that does not
    exist (404), so nothing about the account leaks."""
    membership = active_membership(account=account, user=user)
    if membership is None:
        raise NotFound("organization not found")
    if manage and not membership.manages:
        raise Forbidden(refusal)
    return membership


def has_project_access(*, membership: Membership, project: Project) -> bool:
    """May this (active) membership use the project? One query at most.

    Owners and admins always may; other roles may unless the project is restricted to a list
    that does not name them. A project of another account is never accessible."""
    if not membership.is_active or membership.account_id != project.account_id or project.deleted_at is not None:
        return False
    if membership.role in MANAGING_ROLES:
        return True
    return not ProjectAccess.objects.filter(project_id=project.pk, restricted=True).exclude(members=membership).exists()


def department_ids_of(*, membership: Membership) -> frozenset[int]:
    """The departments the membership belongs to now."""
    return frozenset(
        Department.members.through.objects.filter(membership_id=membership.pk).values_list("department_id", flat=True)
    )


def membership_list(*, account: Account, actor: User) -> QuerySet[Membership]:
    """The account's memberships (active and deactivated), for any active member to see."""
    acting_membership(account=account, user=actor, manage=False)
    return Membership.objects.filter(account=account).select_related("user").order_by("created_at", "pk")


def department_list(*, account: Account, actor: User) -> QuerySet[Department]:
    acting_membership(account=account, user=actor, manage=False)
    return Department.objects.filter(account=account).prefetch_related("members__user").order_by("name")


def project_members(*, project: Project, actor: User) -> QuerySet[Membership]:
    """The active memberships that may use the project (owners/admins included)."""
    acting_membership(account=project.account, user=actor, manage=False)
    members = Membership.objects.filter(account_id=project.account_id, is_active=True)
    access = ProjectAccess.objects.filter(project=project, restricted=True).first()
    if access is not None:
        listed = access.members.values("pk")
        members = members.filter(role__in=MANAGING_ROLES) | members.filter(pk__in=listed)
    return members.select_related("user").order_by("created_at", "pk")


@dataclass(frozen=True)
class AuditFilters:
    """What the audit log may be narrowed by: who acted (an e-mail, or ``system`` for rows no
    person wrote), the action (exact, or a family ending in ``.``: ``api_key.``), and a range of
    UTC days, both ends included."""

    actor: str | None = None
    action: str | None = None
    since: dt.date | None = None
    until: dt.date | None = None


SYSTEM_ACTOR = "system"


def audit_events_for(
    *, account: Account, actor: User, limit: int = 100, filters: AuditFilters | None = None
) -> QuerySet[AuditEvent]:
    """The account's audit events, newest first, narrowed by ``filters``, at most ``limit``
    (capped at ``AUDIT_PAGE_MAX``; ``AUDIT_EXPORT_MAX`` for ``audit_events_export``). Owners and
    admins only: members and auditors are refused (403), non-members get 404."""
    return _audit_rows(account=account, actor=actor, filters=filters)[: max(1, min(limit, AUDIT_PAGE_MAX))]


def audit_events_export(*, account: Account, actor: User, filters: AuditFilters | None = None) -> Iterator[AuditEvent]:
    """Every event ``filters`` select (at most ``AUDIT_EXPORT_MAX``), newest first, read in
    chunks for a streamed download; the same access rule as ``audit_events_for``, checked
    before the first row."""
    rows = _audit_rows(account=account, actor=actor, filters=filters)[:AUDIT_EXPORT_MAX]
    return rows.iterator(chunk_size=500)


def audit_actions(*, account: Account, actor: User) -> list[str]:
    """The actions the account's log holds, sorted (the filter's choices)."""
    acting_membership(account=account, user=actor, manage=True, refusal=AUDIT_REFUSAL)
    return sorted(set(AuditEvent.objects.filter(account=account).values_list("action", flat=True).distinct()))


def _day_start(day: dt.date) -> dt.datetime:
    """Midnight UTC starting ``day``."""
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def _audit_rows(*, account: Account, actor: User, filters: AuditFilters | None) -> QuerySet[AuditEvent]:
    acting_membership(account=account, user=actor, manage=True, refusal=AUDIT_REFUSAL)
    rows = AuditEvent.objects.filter(account=account)
    f = filters or AuditFilters()
    if f.actor:
        rows = (
            rows.filter(actor_user__isnull=True)
            if f.actor.lower() == SYSTEM_ACTOR
            else rows.filter(actor_user__email__iexact=f.actor)
        )
    if f.action:
        rows = rows.filter(action__startswith=f.action) if f.action.endswith(".") else rows.filter(action=f.action)
    if f.since is not None:
        rows = rows.filter(created_at__gte=_day_start(f.since))
    if f.until is not None:
        rows = rows.filter(created_at__lt=_day_start(f.until + dt.timedelta(days=1)))
    return rows.select_related("actor_user", "actor_key").order_by("-created_at", "-pk")


# --- one object of an account, by id (None when it is not that account's) -------------------


def membership_of(*, account: Account, membership_id: object) -> Membership | None:
    """The membership ``membership_id`` of ``account`` (a foreign or malformed id is None)."""
    return _of_account(Membership.objects.select_related("user"), account, membership_id)


def memberships_among(*, account: Account, ids: Iterable[object]) -> list[Membership]:
    """The memberships of ``account`` among ``ids`` (others' ids are dropped)."""
    wanted = [int(str(i)) for i in ids if str(i).isdigit()]
    return list(Membership.objects.filter(account=account, pk__in=wanted))


def active_members(*, account: Account) -> QuerySet[Membership]:
    """The active memberships of ``account`` (to pick from: departments, project access)."""
    return Membership.objects.filter(account=account, is_active=True).select_related("user").order_by("created_at")


def department_of(*, account: Account, department_id: object) -> Department | None:
    return _of_account(Department.objects.all(), account, department_id)


def invitation_of(*, account: Account, invitation_id: object) -> Invitation | None:
    return _of_account(Invitation.objects.all(), account, invitation_id)


def open_invitations(*, account: Account, actor: User) -> QuerySet[Invitation]:
    """Invitations neither accepted nor revoked, newest first; only owners and admins see them."""
    membership = acting_membership(account=account, user=actor, manage=False)
    if not membership.manages:
        return Invitation.objects.none()
    return Invitation.objects.filter(account=account, accepted_at__isnull=True, revoked_at__isnull=True).order_by(
        "-created_at"
    )


def project_access_of(project: Project) -> ProjectAccess | None:
    return ProjectAccess.objects.filter(project=project).first()


def _of_account(qs: QuerySet[_M], account: Account, pk: object) -> _M | None:
    if not str(pk).isdigit():
        return None
    return qs.filter(account=account, pk=int(str(pk))).first()
