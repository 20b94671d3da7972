"""E-mail to the people who manage an account's billing (its active owners and admins).

Mail is sent after the surrounding transaction commits, so a rolled-back change e-mails nobody;
a failing mail server is logged and never undoes the change.
"""

from __future__ import annotations

from accounts.models import Account
from mmw.mail import send_on_commit
from orgs.models import Membership
from orgs.selectors import MANAGING_ROLES


def billing_contacts(account: Account) -> list[str]:
    return sorted(
        set(
            Membership.objects.filter(
                account=account, is_active=True, role__in=MANAGING_ROLES, user__is_active=True
            ).values_list("user__email", flat=True)
        )
    )


def notify_account(account: Account, *, subject: str, body: str) -> None:
    """Queue one e-mail to the account's billing contacts for when the transaction commits."""
    send_on_commit(
        subject=f"[MMW] {subject} — {account.name}",
        body=body,
        recipients=billing_contacts(account),
        what=f"billing, account {account.tenant_id}",
    )
