"""E-mail sent when the surrounding transaction commits: a rolled-back change e-mails nobody, and
a failing mail server is logged and never undoes the change."""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Callable, Iterable

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import translation

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


def language_or_default(language: str | None) -> str:
    """A recipient's saved language (``User.language``), or the site's (English) when none."""
    return language if language and language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE


def send_in_languages(
    *, recipients: Iterable[tuple[str, str | None]], compose: Callable[[], tuple[str, str]], what: str
) -> None:
    """Queue one e-mail per language among ``recipients`` ((address, saved language) pairs), each
    ``compose()``-d (subject, body) under that language (docs/i18n.md): e-mails are written in
    the recipient's language, never the sender's."""
    by_language: dict[str, list[str]] = {}
    for address, language in recipients:
        by_language.setdefault(language_or_default(language), []).append(address)
    for language, addresses in sorted(by_language.items()):
        with translation.override(language):
            subject, body = compose()
        send_on_commit(subject=subject, body=body, recipients=sorted(set(addresses)), what=what)
