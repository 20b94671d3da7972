"""Invitations: e-mailed, signed, expiring, single-use links into an organisation."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import Account, User
from accounts.services import audit_record
from mmw.errors import Conflict, Forbidden, InvalidInput, Template
from mmw.mail import language_or_default
from orgs.models import Invitation, Membership
from orgs.selectors import acting_membership
from orgs.services._common import (
    clean_email,
    digest,
    lock_account,
    require_organization,
    require_organization_features,
)

Role = Membership.Role

# The refusals a page may show a person (translated there by template: interfaces.people_errors).
ROLE_NOT_INVITABLE = Template("an invitation grants the role admin, member or auditor; owners are made by an owner")
ALREADY_MEMBER = Template("%(email)s is already a member of this organization")
ALREADY_MEMBER_DEACTIVATED = Template(
    "%(email)s is already a member of this organization (deactivated: reactivate the membership instead)"
)
BEING_SENT = Template("an invitation to %(email)s is being sent right now")
NO_LONGER_OPEN = Template("the invitation to %(email)s is no longer open: send a new one instead")
YOU_ARE_A_MEMBER = Template("you are already a member of this organization")
YOU_ARE_DEACTIVATED = Template(
    "your membership of this organization is deactivated: ask an owner or admin to reactivate it"
)
WRONG_USER = Template("this invitation was sent to another e-mail address")
LINK_INVALID = Template("invitation link is invalid")
LINK_USED = Template("invitation link was already used")
REVOKED_OR_REPLACED = Template("invitation was revoked or replaced by a newer one")
LINK_EXPIRED = Template("invitation link has expired: ask for a new one")

INVITATION_TTL = timedelta(days=7)
INVITATION_SALT = "mmw.orgs.invitation"
INVITATION_PATH = "/invitations/accept/"
INVITABLE_ROLES = (Role.ADMIN, Role.MEMBER, Role.AUDITOR)


@dataclass(frozen=True)
class IssuedInvitation:
    """A new invitation. ``token`` (inside ``url``) is the only copy of the secret: it is e-mailed
    to the invitee once the transaction commits and never stored."""

    invitation: Invitation
    token: str
    url: str
    replaced_roles: tuple[str, ...] = ()  # the roles of the open invitations it replaced


@transaction.atomic
def invitation_create(*, account: Account, actor: User, email: str, role: str = Role.MEMBER) -> IssuedInvitation:
    """Invite ``email`` into the organisation with ``role`` (admin, member or auditor).

    An open invitation to the same address is replaced (its link stops working)."""
    require_organization(account, "personal accounts have a single member: invite people into an organization")
    acting_membership(account=account, user=actor, manage=True)
    require_organization_features(account)
    if role not in INVITABLE_ROLES:
        raise InvalidInput(ROLE_NOT_INVITABLE)
    address = clean_email(email)
    existing = Membership.objects.filter(account=account, user__email=address).first()
    if existing is not None:
        raise Conflict(ALREADY_MEMBER if existing.is_active else ALREADY_MEMBER_DEACTIVATED, email=address)
    return _issue(account=account, actor=actor, address=address, role=role, action="invitation.created")


def _issue(*, account: Account, actor: User, address: str, role: str, action: str) -> IssuedInvitation:
    """A new invitation of ``address`` with ``role``, replacing (revoking) the open ones to that
    address, audited as ``action`` (the row names the replaced ones and their roles, so a re-invite
    that changes the role says from what to what), e-mailed at the commit."""
    now = timezone.now()
    open_ones = list(
        Invitation.objects.select_for_update()
        .filter(account=account, email__iexact=address, accepted_at__isnull=True, revoked_at__isnull=True)
        .order_by("pk")
        .values_list("pk", "role")
    )
    replaced = [pk for pk, _ in open_ones]
    Invitation.objects.filter(pk__in=replaced).update(revoked_at=now)
    nonce = secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            invitation = Invitation.objects.create(
                account=account,
                email=address,
                role=role,
                invited_by=actor,
                nonce_digest=digest(nonce),
                expires_at=now + INVITATION_TTL,
            )
    except IntegrityError:
        raise Conflict(BEING_SENT, email=address) from None
    token = signing.dumps({"i": invitation.pk, "n": nonce}, salt=INVITATION_SALT)
    url = f"{settings.PUBLIC_URL}{INVITATION_PATH}?token={quote(token, safe='')}"
    audit_record(
        action=action,
        account=account,
        actor_user=actor,
        target_type="invitation",
        target_id=str(invitation.pk),
        data={"email": address, "role": role, "replaced": replaced, "replaced_roles": [r for _, r in open_ones]},
    )
    transaction.on_commit(lambda: _send_invitation(invitation, url, inviter=actor), robust=True)
    return IssuedInvitation(invitation=invitation, token=token, url=url, replaced_roles=tuple(r for _, r in open_ones))


@transaction.atomic
def invitation_resend(*, invitation: Invitation, actor: User) -> IssuedInvitation:
    """Send an open invitation again: a new link (another 7 days) to the same address with the
    same role, e-mailed at the commit; the old link stops working ("replaced by a newer one").
    Audited as ``invitation.resent``. An open one (expired included) can be resent; a used or
    revoked one cannot (invite again)."""
    account = invitation.account
    acting_membership(account=account, user=actor, manage=True)
    require_organization_features(account)
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if not locked.is_open:
        raise Conflict(NO_LONGER_OPEN, email=locked.email)
    return _issue(account=account, actor=actor, address=locked.email, role=locked.role, action="invitation.resent")


def _send_invitation(invitation: Invitation, url: str, *, inviter: User) -> None:
    """In the invited person's language when they already have an MMW account with a saved one,
    else in the inviter's (the best guess for someone MMW does not know yet)."""
    account = invitation.account
    days = INVITATION_TTL.days
    invited = User.objects.filter(email__iexact=invitation.email).values_list("language", flat=True).first()
    with translation.override(language_or_default(invited or inviter.language)):
        subject = _("You are invited to %(name)s on MMW") % {"name": account.name}
        message = (
            _("%(inviter)s invited you to join %(name)s on MMW as %(role)s.")
            % {"inviter": inviter.email, "name": account.name, "role": invitation.get_role_display()}
            + "\n\n"
            + ngettext(
                "Accept the invitation (the link works once, for %(days)s day, signed in as %(email)s):",
                "Accept the invitation (the link works once, for %(days)s days, signed in as %(email)s):",
                days,
            )
            % {"days": days, "email": invitation.email}
            + f"\n{url}\n\n"
            + _("If you did not expect this e-mail, ignore it.")
            + "\n"
        )
    send_mail(subject=subject, message=message, from_email=None, recipient_list=[invitation.email])


@transaction.atomic
def invitation_accept(*, token: str, user: User) -> Membership:
    """Turn an invitation link into a membership of ``user``, who must be the invited address.

    Refused, with distinct texts: a tampered or unknown token, an expired one, one already used,
    one revoked or replaced, another user's, or a user who is already a member."""
    invitation = _usable_invitation(token, user, lock=True)
    require_organization_features(invitation.account)
    lock_account(invitation.account_id)
    existing = Membership.objects.filter(account_id=invitation.account_id, user=user).first()
    if existing is not None:
        if existing.is_active:
            raise Conflict(YOU_ARE_A_MEMBER)
        raise Conflict(YOU_ARE_DEACTIVATED)
    membership = Membership.objects.create(account_id=invitation.account_id, user=user, role=invitation.role)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    audit_record(
        action="invitation.accepted",
        account=invitation.account,
        actor_user=user,
        target_type="membership",
        target_id=str(membership.pk),
        data={"invitation": invitation.pk, "email": invitation.email, "role": membership.role},
    )
    return membership


def invitation_check(*, token: str, user: User) -> Invitation:
    """The invitation ``token`` names, if ``user`` may accept it now (what the link's page shows
    before the person confirms: organisation, role, inviter); otherwise the same error
    ``invitation_accept`` would raise. Writes nothing."""
    return _usable_invitation(token, user, lock=False)


def invitation_preview(*, token: str) -> Invitation:
    """The invitation ``token`` names while its link can still be used (what the link shows to
    someone not signed in: organisation, role, inviter, the invited address, and that an account
    with that address is needed); the same errors as ``invitation_check`` but the address's.
    Writes nothing."""
    return _open_invitation(token, lock=False)


def _usable_invitation(token: str, user: User, *, lock: bool) -> Invitation:
    invitation = _open_invitation(token, lock=lock)
    if not user.is_active or user.email.lower() != invitation.email.lower():
        raise Forbidden(WRONG_USER, code="invitation_wrong_user")
    return invitation


def _open_invitation(token: str, *, lock: bool) -> Invitation:
    invitation, nonce = _invitation_of(token, lock=lock)
    if not hmac.compare_digest(invitation.nonce_digest, digest(nonce)):
        raise InvalidInput(LINK_INVALID, code="invitation_invalid")
    if invitation.accepted_at is not None:
        raise Conflict(LINK_USED, code="invitation_used")
    if invitation.revoked_at is not None:
        raise InvalidInput(REVOKED_OR_REPLACED, code="invitation_revoked")
    if invitation.expires_at <= timezone.now():
        raise InvalidInput(LINK_EXPIRED, code="invitation_expired")
    return invitation


def _invitation_of(token: str, *, lock: bool = True) -> tuple[Invitation, str]:
    """The (locked) invitation a well-signed, unexpired token names, and the token's nonce."""
    try:
        payload: Any = signing.loads(token.strip(), salt=INVITATION_SALT, max_age=INVITATION_TTL)
    except signing.SignatureExpired:
        raise InvalidInput(LINK_EXPIRED, code="invitation_expired") from None
    except signing.BadSignature:
        raise InvalidInput(LINK_INVALID, code="invitation_invalid") from None
    if not (isinstance(payload, dict) and isinstance(payload.get("i"), int) and isinstance(payload.get("n"), str)):
        raise InvalidInput(LINK_INVALID, code="invitation_invalid")
    rows = Invitation.objects.select_related("account", "invited_by")
    if lock:
        rows = rows.select_for_update(of=("self",))
    invitation = rows.filter(pk=payload["i"]).first()
    if invitation is None:
        raise InvalidInput(LINK_INVALID, code="invitation_invalid")
    return invitation, payload["n"]


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: User) -> Invitation:
    """Withdraw an open invitation (idempotent: a used or revoked one is left as it is)."""
    acting_membership(account=invitation.account, user=actor, manage=True)
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if locked.is_open:
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        audit_record(
            action="invitation.revoked",
            account=invitation.account,
            actor_user=actor,
            target_type="invitation",
            target_id=str(locked.pk),
            data={"email": locked.email},
        )
    return locked
