"""Why a bearer credential was refused, in words the caller can act on (docs/reference/errors.md).

A refused key says why only to someone who holds it: "revoked", "expired" or "account pending
deletion" need the whole key (its digest matched), so they reveal nothing an attacker could not
already see. Anything that is not a key of ours — unknown, malformed, the right prefix with the
wrong secret, an OAuth token that is not live — answers the same generic text, so the answers
cannot be used to find keys or prefixes. ``wrong_secret`` exists only for support (the refused-call
record ties it to the key whose prefix it carried); the caller reads ``unknown``'s text.

The pending-deletion check reaches ``datarights`` through this seam (installed by its app), as
billing's limits reach accounts through ``accounts.limits``: accounts never import datarights.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


class Refusal(enum.StrEnum):
    UNKNOWN = "unknown"
    WRONG_SECRET = "wrong_secret"  # noqa: S105 - a reason, not a secret
    REVOKED = "revoked"
    EXPIRED = "expired"
    PENDING_DELETION = "pending_deletion"
    PROJECT_DELETED = "project_deleted"
    NO_ACCESS = "no_access"


# Each reason in a staff member's language (the admin; the caller reads ``TEXTS``, in English).
LABELS: dict[str, Promise] = {
    Refusal.UNKNOWN: _("unknown key"),
    Refusal.WRONG_SECRET: _("wrong secret"),
    Refusal.REVOKED: _("revoked"),
    Refusal.EXPIRED: _("expired"),
    Refusal.PENDING_DELETION: _("account pending deletion"),
    Refusal.PROJECT_DELETED: _("project deleted"),
    Refusal.NO_ACCESS: _("no access"),
}

UNKNOWN_TEXT = "invalid API key"
TEXTS: dict[Refusal, str] = {
    Refusal.UNKNOWN: UNKNOWN_TEXT,
    Refusal.WRONG_SECRET: UNKNOWN_TEXT,
    Refusal.REVOKED: "API key revoked",
    Refusal.EXPIRED: "API key expired",
    Refusal.PENDING_DELETION: "API key refused: its account is pending deletion",
    Refusal.PROJECT_DELETED: "API key refused: its project was deleted",
    Refusal.NO_ACCESS: "API key refused: its holder is no longer an active member with access to its project",
}
# What support reads beside a refused call (the admin's customer page).
SUPPORT_TEXTS: dict[Refusal, str] = {
    **TEXTS,
    Refusal.WRONG_SECRET: "the key's prefix with another secret (a typo or a cut-off copy)",
}


def text_of(refusal: Refusal) -> str:
    return TEXTS[refusal]


def _never(account_id: int) -> bool:
    return False


_pending_deletion: Callable[[int], bool] = _never


def install(*, pending_deletion: Callable[[int], bool]) -> None:
    """``datarights`` answers whether an account has an open deletion request."""
    global _pending_deletion
    _pending_deletion = pending_deletion


def pending_deletion(account_id: int) -> bool:
    return _pending_deletion(account_id)
