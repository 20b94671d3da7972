"""A domain error's text for a person, in the page's language (issue #42).

``MMWError.message`` is what agents read, in English, byte for byte (the API and MCP answer it
as it is; docs/reference/errors.md explains each). When a page shows one — a flash message, a
form error, a refusal page — it passes it through ``for_people``: an error raised from one of
the templates of this table (``mmw.errors.Template``, defined beside the code that raises it) is
answered with the catalogue's translation, its values put back in. The error is recognised by
the template it was raised from, never by its English words, so rewording a text cannot make
the page fall back to English. An error raised from another template, or from a plain text, is
shown as it is, in English.

Each row also keeps the English text its translation was written for:
``tests/i18n/test_people_errors.py`` fails when a template's text changes and the row (and its
translation) is not looked at again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from accounts import services as accounts
from datarights import deletion
from mmw import text
from mmw.errors import MMWError, Template
from orgs.services import departments, invitations, memberships, project_access
from webhooks import services as webhooks

if TYPE_CHECKING:  # the lazy string's type is named only in django-stubs
    from django.utils.functional import _StrPromise as Promise

# The names services give the field they refuse (``mmw.text``), in the reader's language.
FIELDS: dict[str, Promise] = {
    "name": _("name"),
    "key name": _("key name"),
    "device label": _("device label"),
    "project name": _("project name"),
    "account name": _("account name"),
    "organization name": _("organization name"),
    "department name": _("department name"),
    "workspace": _("workspace"),
}

# (the template an error is raised from) -> (the English text its translation was written for,
# the text for people).
TEXTS: dict[Template, tuple[str, Promise]] = {
    # names (mmw.text)
    text.EMPTY: ("%(field)s must not be empty", _("“%(field)s” must not be empty.")),
    text.TOO_LONG: (
        "%(field)s exceeds maximum length of %(limit)s",
        _("“%(field)s” is longer than %(limit)s characters."),
    ),
    text.WILDCARD_IN_NAME: ("%(field)s must not contain '*'", _("“%(field)s” must not contain “*”.")),
    text.UNPRINTABLE_NAME: (
        "%(field)s must be printable text without control or bidi characters",
        _("“%(field)s” must be printable text, without control or text-direction characters."),
    ),
    text.UNSTORABLE: (
        "%(field)s must not contain NUL or unpaired surrogate characters",
        _("“%(field)s” contains characters that cannot be stored (NUL or unpaired surrogates)."),
    ),
    text.INVALID_EMAIL: ("invalid e-mail address: %(email)s", _("This e-mail address is not valid: %(email)s")),
    # projects and keys (accounts.services)
    accounts.PROJECT_EXISTS: ("a project named %(name)s already exists", _("A project named %(name)s already exists.")),
    accounts.KEY_HOLDER_NOT_MEMBER: (
        "only an active member of the account can hold its keys",
        _("Only an active member of the account can hold its keys."),
    ),
    accounts.KEY_REVOKE_REFUSED: (
        "only the key's holder, an owner or an admin can revoke it",
        _("Only the key's holder, an owner or an admin can revoke it."),
    ),
    accounts.KEY_HOLDER_NO_ACCESS: (
        "this member has no access to the project",
        _("This member has no access to the project."),
    ),
    accounts.SIGN_IN_LINK_SECOND_FACTOR: (
        "this person signs in with a second factor: no sign-in link skips it",
        _("This person signs in with a second factor: no sign-in link skips it."),
    ),
    accounts.KEY_LIFETIME: (
        "expires_in_days must be one of %(choices)s, or absent for a key that never expires",
        _("Choose an expiry among %(choices)s days, or none for a key that never expires."),
    ),
    accounts.KEY_SCOPES: (
        "scopes must be a non-empty subset of %(scopes)s",
        _("Choose at least one permission among %(scopes)s."),
    ),
    # organisations (orgs.services)
    departments.DEPARTMENT_EXISTS: (
        "a department named %(name)s already exists",
        _("A department named %(name)s already exists."),
    ),
    invitations.ROLE_NOT_INVITABLE: (
        "an invitation grants the role admin, member or auditor; owners are made by an owner",
        _("An invitation grants the role admin, member or auditor; owners are made by an owner."),
    ),
    invitations.ALREADY_MEMBER_DEACTIVATED: (
        "%(email)s is already a member of this organization (deactivated: reactivate the membership instead)",
        _("%(email)s is already a member of this organisation (deactivated: reactivate the membership instead)."),
    ),
    invitations.ALREADY_MEMBER: (
        "%(email)s is already a member of this organization",
        _("%(email)s is already a member of this organisation."),
    ),
    invitations.BEING_SENT: (
        "an invitation to %(email)s is being sent right now",
        _("An invitation to %(email)s is being sent right now."),
    ),
    invitations.NO_LONGER_OPEN: (
        "the invitation to %(email)s is no longer open: send a new one instead",
        _("The invitation to %(email)s is no longer open: send a new one instead."),
    ),
    invitations.YOU_ARE_A_MEMBER: (
        "you are already a member of this organization",
        _("You are already a member of this organisation."),
    ),
    invitations.YOU_ARE_DEACTIVATED: (
        "your membership of this organization is deactivated: ask an owner or admin to reactivate it",
        _("Your membership of this organisation is deactivated: ask an owner or admin to reactivate it."),
    ),
    invitations.WRONG_USER: (
        "this invitation was sent to another e-mail address",
        _("This invitation was sent to another e-mail address."),
    ),
    invitations.LINK_INVALID: ("invitation link is invalid", _("This invitation link is not valid.")),
    invitations.LINK_USED: ("invitation link was already used", _("This invitation link was already used.")),
    invitations.REVOKED_OR_REPLACED: (
        "invitation was revoked or replaced by a newer one",
        _("This invitation was revoked or replaced by a newer one."),
    ),
    invitations.LINK_EXPIRED: (
        "invitation link has expired: ask for a new one",
        _("This invitation link has expired: ask for a new one."),
    ),
    memberships.OWNER_UNTOUCHABLE: (
        "admins cannot change, deactivate or remove an owner",
        _("Admins cannot change, deactivate or remove an owner."),
    ),
    memberships.LAST_OWNER: (
        "an organization must keep at least one active owner",
        _("An organisation must keep at least one active owner."),
    ),
    memberships.OWNER_GRANTS_OWNER: (
        "only an owner can grant the owner role",
        _("Only an owner can grant the owner role."),
    ),
    memberships.OWNER_TRANSFERS: ("only an owner can transfer ownership", _("Only an owner can transfer ownership.")),
    memberships.TRANSFER_TO_ANOTHER: (
        "ownership can only be transferred to another member",
        _("Ownership can only be transferred to another member."),
    ),
    memberships.TRANSFER_TO_ACTIVE: (
        "ownership can only be transferred to an active member",
        _("Ownership can only be transferred to an active member."),
    ),
    project_access.OPEN_TO_EVERY_MEMBER: (
        "the project is open to every member: restrict it to a list of members first",
        _("The project is open to every member: restrict it to a list of members first."),
    ),
    # account deletion (datarights.deletion)
    deletion.OWNER_ONLY: ("only an owner can delete the account", _("Only an owner can delete the account.")),
    deletion.WRONG_NAME: (
        "type the account's name exactly to confirm",
        _("Type the account's name exactly to confirm."),
    ),
    deletion.REAUTH_FAILED: ("your password is not correct", _("Your password is not correct.")),
    deletion.REAUTH_UNAVAILABLE: (
        "set a password first (Account settings): deleting needs it to confirm it is you",
        _("Set a password first (account settings): deleting needs it to confirm it is you."),
    ),
    deletion.ALREADY: ("this account is already being deleted", _("This account is already being deleted.")),
    deletion.LAST_OWNER: (
        "you are the last owner of %(name)s: make someone else an owner, or delete that organisation first",
        _("You are the last owner of %(name)s: make someone else an owner, or delete that organisation first."),
    ),
    # webhooks (webhooks.services)
    webhooks.EVENTS_AMONG: ("choose events among %(events)s", _("Choose events among %(events)s.")),
    webhooks.URL_TOO_LONG: (
        "url exceeds maximum length of %(limit)s",
        _("The URL is longer than %(limit)s characters."),
    ),
    webhooks.URL_REFUSED: ("webhook URL refused: %(reason)s", _("This webhook URL is refused: %(reason)s")),
    webhooks.TOO_MANY_ENDPOINTS: (
        "a project has at most %(limit)s webhook endpoints",
        _("A project has at most %(limit)s webhook endpoints."),
    ),
}


def for_people(exc: MMWError) -> str:
    """``exc``'s text in the page's language: the translation of the template it was raised from
    where the table has it, else its English text (as it is in English)."""
    if (get_language() or "en").startswith("en") or exc.template is None or exc.template not in TEXTS:
        return exc.message
    values = {name: str(value) for name, value in exc.values.items()}
    if "field" in values:
        values["field"] = str(FIELDS.get(values["field"], values["field"]))
    return str(TEXTS[exc.template][1]) % values
