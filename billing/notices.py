"""The texts people and agents see when an account may not write, in the documented shape:

``[MMW Notice]: <what happened>; <what still works>; <what to do, with the billing URL>``

The three parts are separated by "; " and contain no ";" themselves, so an agent can split them.
"""

from __future__ import annotations

from datetime import datetime

from django.utils.translation import gettext, gettext_lazy

PREFIX = "[MMW Notice]: "
READS_STILL_WORK = (
    "search, recall_context, validate_memory and reading memories still work but remember and forget do not"
)


def _notice(happened: str, works: str, todo: str) -> str:
    return f"{PREFIX}{happened}; {works}; {todo}"


def grace(*, ends_at: datetime, billing_url: str) -> str:
    return _notice(
        f"the last payment for this account failed and it is read-only during a grace period "
        f"until {ends_at:%Y-%m-%d %H:%M} UTC, after which it will be suspended",
        READS_STILL_WORK,
        f"update the payment method or pay the open invoice at {billing_url} to write again",
    )


def suspended(*, billing_url: str, by_staff: bool) -> str:
    if by_staff:
        return _notice(
            "this account has been suspended by MMW support",
            READS_STILL_WORK,
            f"see {billing_url} or contact support to have it reinstated",
        )
    return _notice(
        "this account is suspended because its grace period ended without payment",
        READS_STILL_WORK,
        f"pay the open invoice or update the payment method at {billing_url} to reactivate it",
    )


def no_subscription(*, billing_url: str) -> str:
    return _notice(
        "this account has no active subscription",
        READS_STILL_WORK,
        f"choose a plan at {billing_url} to write again",
    )


# --- the same states in people's words (the dashboard banner): no agent syntax, no raw URL; the
# page adds the button to the billing page.

# The dashboard shows these in the person's language (docs/i18n.md); the [MMW Notice] texts above
# are what agents read and stay English.
PEOPLE_READS_STILL_WORK = gettext_lazy("Reading and search still work; remembering and forgetting do not.")


def for_people(*, state: str, grace_ends_at: datetime | None, by_staff: bool) -> str:
    """One or two sentences for the dashboard's banner about an account that may not write."""
    if state == "grace" and grace_ends_at is not None:
        happened = gettext(
            "The last payment failed: this account is read-only until %(when)s UTC, then it will be suspended."
        ) % {"when": f"{grace_ends_at:%Y-%m-%d %H:%M}"}
    elif state == "suspended" and by_staff:
        happened = gettext("MMW support suspended this account: it is read-only.")
    elif state == "suspended":
        happened = gettext("This account is suspended (its grace period ended unpaid): it is read-only.")
    else:
        happened = gettext("This account has no active subscription: it is read-only.")
    return f"{happened} {PEOPLE_READS_STILL_WORK}"
