"""Celery entry points of the ledger: the due-reminder e-mails (beat, every five minutes)."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.utils import timezone

from ledger import reminders


@shared_task
def send_due_reminders(now: str | None = None) -> int:
    """E-mail every reminder occurrence that fell due in the last day and was not e-mailed yet;
    returns how many were queued. ``now`` (an RFC 3339 time with an offset) stands in for the
    clock — beat passes nothing; tests pass a frozen time to a real worker."""
    at = timezone.now() if now is None else datetime.fromisoformat(now)
    if timezone.is_naive(at):
        raise ValueError("now needs a UTC offset")
    return reminders.send_due_reminders(now=at)
