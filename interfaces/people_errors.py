"""A domain error's text for a person, in the page's language (issue #42).

``MMWError.message`` is what agents read, in English, byte for byte (the API and MCP answer it
as it is; docs/reference/errors.md explains each). When a page shows one — a flash message, a
form error, a refusal page — it passes it through ``for_people``: the English text is matched
against the texts the pages can meet (this table, each with its values as named groups) and
answered with the catalogue's translation, the values put back in. A text not in the table is
shown as it is, in English: ``tests/i18n/test_people_errors.py`` holds the table to the texts
the code raises, and English pages read exactly the message.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from mmw.errors import MMWError

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

# (the English text as raised, with its values as named groups) -> the text for people.
TEXTS: list[tuple[re.Pattern[str], Promise]] = [
    (re.compile(p, re.DOTALL), t)
    for p, t in (
        # names (mmw.text)
        (r"(?P<field>[a-z ]+) must not be empty", _("“%(field)s” must not be empty.")),
        (
            r"(?P<field>[a-z ]+) exceeds maximum length of (?P<limit>\d+)",
            _("“%(field)s” is longer than %(limit)s characters."),
        ),
        (r"(?P<field>[a-z ]+) must not contain '\*'", _("“%(field)s” must not contain “*”.")),
        (
            r"(?P<field>[a-z ]+) must be printable text without control or bidi characters",
            _("“%(field)s” must be printable text, without control or text-direction characters."),
        ),
        (
            r"(?P<field>[a-z ]+) must not contain NUL or unpaired surrogate characters",
            _("“%(field)s” contains characters that cannot be stored (NUL or unpaired surrogates)."),
        ),
        (r"invalid e-mail address: (?P<email>.+)", _("This e-mail address is not valid: %(email)s")),
        # projects and keys (accounts.services)
        (r"a project named (?P<name>.+) already exists", _("A project named %(name)s already exists.")),
        (
            r"only an active member of the account can hold its keys",
            _("Only an active member of the account can hold its keys."),
        ),
        (
            r"only the key's holder, an owner or an admin can revoke it",
            _("Only the key's holder, an owner or an admin can revoke it."),
        ),
        (r"this member has no access to the project", _("This member has no access to the project.")),
        (
            r"this person signs in with a second factor: no sign-in link skips it",
            _("This person signs in with a second factor: no sign-in link skips it."),
        ),
        (
            r"expires_in_days must be one of (?P<choices>.+), or absent for a key that never expires",
            _("Choose an expiry among %(choices)s days, or none for a key that never expires."),
        ),
        (r"scopes must be a non-empty subset of (?P<scopes>.+)", _("Choose at least one permission among %(scopes)s.")),
        # organisations (orgs.services)
        (r"a department named (?P<name>.+) already exists", _("A department named %(name)s already exists.")),
        (
            r"an invitation grants the role admin, member or auditor; owners are made by an owner",
            _("An invitation grants the role admin, member or auditor; owners are made by an owner."),
        ),
        (
            r"(?P<email>\S+) is already a member of this organization"
            r" \(deactivated: reactivate the membership instead\)",
            _("%(email)s is already a member of this organisation (deactivated: reactivate the membership instead)."),
        ),
        (
            r"(?P<email>\S+) is already a member of this organization",
            _("%(email)s is already a member of this organisation."),
        ),
        (
            r"an invitation to (?P<email>\S+) is being sent right now",
            _("An invitation to %(email)s is being sent right now."),
        ),
        (
            r"the invitation to (?P<email>\S+) is no longer open: send a new one instead",
            _("The invitation to %(email)s is no longer open: send a new one instead."),
        ),
        (r"you are already a member of this organization", _("You are already a member of this organisation.")),
        (
            r"your membership of this organization is deactivated: ask an owner or admin to reactivate it",
            _("Your membership of this organisation is deactivated: ask an owner or admin to reactivate it."),
        ),
        (
            r"this invitation was sent to another e-mail address",
            _("This invitation was sent to another e-mail address."),
        ),
        (r"invitation link is invalid", _("This invitation link is not valid.")),
        (r"invitation link was already used", _("This invitation link was already used.")),
        (
            r"invitation was revoked or replaced by a newer one",
            _("This invitation was revoked or replaced by a newer one."),
        ),
        (r"invitation link has expired: ask for a new one", _("This invitation link has expired: ask for a new one.")),
        (
            r"admins cannot change, deactivate or remove an owner",
            _("Admins cannot change, deactivate or remove an owner."),
        ),
        (
            r"an organization must keep at least one active owner",
            _("An organisation must keep at least one active owner."),
        ),
        (r"only an owner can grant the owner role", _("Only an owner can grant the owner role.")),
        (r"only an owner can transfer ownership", _("Only an owner can transfer ownership.")),
        (
            r"ownership can only be transferred to another member",
            _("Ownership can only be transferred to another member."),
        ),
        (
            r"ownership can only be transferred to an active member",
            _("Ownership can only be transferred to an active member."),
        ),
        (
            r"the project is open to every member: restrict it to a list of members first",
            _("The project is open to every member: restrict it to a list of members first."),
        ),
        # account deletion (datarights.deletion)
        (r"only an owner can delete the account", _("Only an owner can delete the account.")),
        (r"type the account's name exactly to confirm", _("Type the account's name exactly to confirm.")),
        (r"your password is not correct", _("Your password is not correct.")),
        (
            r"set a password first \(Account settings\): deleting needs it to confirm it is you",
            _("Set a password first (account settings): deleting needs it to confirm it is you."),
        ),
        (r"this account is already being deleted", _("This account is already being deleted.")),
        (
            r"you are the last owner of (?P<name>.+): make someone else an owner, or delete that organisation first",
            _("You are the last owner of %(name)s: make someone else an owner, or delete that organisation first."),
        ),
        # webhooks (webhooks.services)
        (r"choose events among (?P<events>.+)", _("Choose events among %(events)s.")),
        (r"url exceeds maximum length of (?P<limit>\d+)", _("The URL is longer than %(limit)s characters.")),
        (r"webhook URL refused: (?P<reason>.+)", _("This webhook URL is refused: %(reason)s")),
        (
            r"a project has at most (?P<limit>\d+) webhook endpoints",
            _("A project has at most %(limit)s webhook endpoints."),
        ),
    )
]


def for_people(exc: MMWError | str) -> str:
    """``exc``'s text in the page's language: the translation of its English text where the
    table has it, else the English text itself (as it is in English)."""
    message = exc.message if isinstance(exc, MMWError) else exc
    if (get_language() or "en").startswith("en"):
        return message
    for pattern, text in TEXTS:
        match = pattern.fullmatch(message)
        if match is not None:
            values = match.groupdict()
            if "field" in values:
                values["field"] = str(FIELDS.get(values["field"], values["field"]))
            return str(text) % values if values else str(text)
    return message
