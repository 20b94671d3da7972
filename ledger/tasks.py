"""Celery entry points of the ledger: the due-reminder e-mails (beat, every five minutes)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from ledger import reminders


@shared_task
def send_due_reminders() -> int:
    """E-mail every reminder occurrence that fell due in the last day and was not e-mailed yet."""
    return reminders.send_due_reminders(now=timezone.now())
