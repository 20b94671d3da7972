"""The texts people and agents see when an account may not write, in the documented shape:

``[MMW Notice]: <what happened>; <what still works>; <what to do, with the billing URL>``

The three parts are separated by "; " and contain no ";" themselves, so an agent can split them.
"""

from __future__ import annotations

from datetime import datetime

from django.utils.translation import gettext, gettext_lazy, gettext_noop

PREFIX = "[MMW Notice]: "
READS_STILL_WORK = gettext_noop(
    "search, recall_context, validate_memory and reading memories still work but remember and forget do not"
)


def _notice(happened: str, works: str, todo: str) -> str:
    return f"{PREFIX}{happened}; {works}; {todo}"


# Agents read these in English (the API's and MCP's contract). ``people=True`` is the same text in
# the reader's language, for the e-mails sent to people (the texts are marked with gettext_noop).
def _in(text: str, people: bool) -> str:
    return gettext(text) if people else text


def grace(*, ends_at: datetime, billing_url: str, people: bool = False) -> str:
    return _notice(
        _in(
            gettext_noop(
                "the last payment for this account failed and it is read-only during a grace period "
                "until %(when)s UTC, after which it will be suspended"
            ),
            people,
        )
        % {"when": f"{ends_at:%Y-%m-%d %H:%M}"},
        _in(READS_STILL_WORK, people),
        _in(gettext_noop("update the payment method or pay the open invoice at %(url)s to write again"), people)
        % {"url": billing_url},
    )


def suspended(*, billing_url: str, by_staff: bool, people: bool = False) -> str:
    if by_staff:
        return _notice(
            _in(gettext_noop("this account has been suspended by MMW support"), people),
            _in(READS_STILL_WORK, people),
            _in(gettext_noop("see %(url)s or contact support to have it reinstated"), people) % {"url": billing_url},
        )
    return _notice(
        _in(gettext_noop("this account is suspended because its grace period ended without payment"), people),
        _in(READS_STILL_WORK, people),
        _in(gettext_noop("pay the open invoice or update the payment method at %(url)s to reactivate it"), people)
        % {"url": billing_url},
    )


def no_subscription(*, billing_url: str, people: bool = False) -> str:
    return _notice(
        _in(gettext_noop("this account has no active subscription"), people),
        _in(READS_STILL_WORK, people),
        _in(gettext_noop("choose a plan at %(url)s to write again"), people) % {"url": billing_url},
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
