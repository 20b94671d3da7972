"""E-mail to the people who manage an account's billing (its active owners and admins).

Mail is sent after the surrounding transaction commits, so a rolled-back change e-mails nobody;
a failing mail server is logged and never undoes the change.
"""

from __future__ import annotations

import logging
import smtplib

from django.core.mail import send_mail
from django.db import transaction

from accounts.models import Account
from orgs.models import Membership
from orgs.selectors import MANAGING_ROLES

logger = logging.getLogger(__name__)


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
    recipients = billing_contacts(account)
    if not recipients:
        return
    full_subject = f"[MMW] {subject} — {account.name}"

    def send() -> None:
        try:
            send_mail(full_subject, body, None, recipients)
        except (OSError, smtplib.SMTPException):
            logger.exception("billing e-mail %r to account %s failed", subject, account.tenant_id)

    transaction.on_commit(send)
