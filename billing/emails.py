"""E-mail to the people who manage an account's billing (its active owners and admins).

Mail is sent after the surrounding transaction commits, so a rolled-back change e-mails nobody;
a failing mail server is logged and never undoes the change.
"""

from __future__ import annotations

from collections.abc import Callable

from accounts.models import Account
from mmw.mail import send_in_languages
from orgs.models import Membership
from orgs.selectors import MANAGING_ROLES


def billing_contacts(account: Account) -> list[tuple[str, str]]:
    """(address, saved language) of the account's active owners and admins."""
    return sorted(
        set(
            Membership.objects.filter(
                account=account, is_active=True, role__in=MANAGING_ROLES, user__is_active=True
            ).values_list("user__email", "user__language")
        )
    )


def notify_account(account: Account, *, compose: Callable[[], tuple[str, str]]) -> None:
    """Queue the e-mail ``compose()`` writes (subject, body) to the account's billing contacts for
    when the transaction commits: one per language among them, each written in that language."""

    def framed() -> tuple[str, str]:
        subject, body = compose()
        return f"[MMW] {subject} — {account.name}", body

    send_in_languages(
        recipients=billing_contacts(account), compose=framed, what=f"billing, account {account.tenant_id}"
    )
