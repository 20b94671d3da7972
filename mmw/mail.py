"""E-mail sent when the surrounding transaction commits: a rolled-back change e-mails nobody, and
a failing mail server is logged and never undoes the change."""

from __future__ import annotations

import logging
import smtplib

from django.core.mail import send_mail
from django.db import transaction

logger = logging.getLogger(__name__)


def send_on_commit(*, subject: str, body: str, recipients: list[str], what: str) -> None:
    """Queue one e-mail to ``recipients`` for the commit (``what`` names it in a failure's log line)."""
    if not recipients:
        return

    def send() -> None:
        try:
            send_mail(subject, body, None, recipients)
        except (OSError, smtplib.SMTPException):
            logger.exception("e-mail %r (%s) failed", subject, what)

    transaction.on_commit(send)
