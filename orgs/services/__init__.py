"""Everything that writes organisations: invitations, memberships and roles, departments and
project access.

Every service takes the acting user explicitly (``actor``), checks what that user's membership
allows, runs in one transaction and writes its audit row inside it. Membership changes lock the
account row first, so concurrent changes of one organisation run one after another and the rule
"at least one active owner" cannot be broken by two owners demoting each other at once.

Rules: owners and admins manage the organisation; admins cannot change, deactivate or remove an
owner, nor grant ownership; ownership is granted by an owner (role change or transfer); the last
active owner can never be removed, deactivated or demoted. A personal account is a one-member
organisation: its owner is its only member, so invitations, departments and project lists are
refused there with a clear error.
"""

from orgs.services.departments import (
    department_create,
    department_delete,
    department_member_add,
    department_member_remove,
    department_rename,
)
from orgs.services.invitations import (
    INVITATION_SALT,
    INVITATION_TTL,
    IssuedInvitation,
    invitation_accept,
    invitation_check,
    invitation_create,
    invitation_preview,
    invitation_resend,
    invitation_revoke,
)
from orgs.services.memberships import (
    membership_deactivate,
    membership_reactivate,
    membership_remove,
    membership_role_change,
    ownership_transfer,
)
from orgs.services.project_access import project_access_grant, project_access_revoke, project_access_set

__all__ = [
    "INVITATION_SALT",
    "INVITATION_TTL",
    "IssuedInvitation",
    "department_create",
    "department_delete",
    "department_member_add",
    "department_member_remove",
    "department_rename",
    "invitation_accept",
    "invitation_check",
    "invitation_create",
    "invitation_preview",
    "invitation_resend",
    "invitation_revoke",
    "membership_deactivate",
    "membership_reactivate",
    "membership_remove",
    "membership_role_change",
    "ownership_transfer",
    "project_access_grant",
    "project_access_revoke",
    "project_access_set",
]
