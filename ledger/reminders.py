"""Due reminders reach their author by e-mail: ``send_due_reminders`` runs from beat
(``ledger.tasks``) and sends one e-mail per occurrence that fell due within the look-back window,
once: a ``ReminderNotice`` row per (reminder, occurrence) is inserted in the same transaction
that queues the e-mail (``mmw.mail.send_on_commit``), under a unique constraint, so a restart, a
late run or two overlapping runs never send an occurrence twice. The look-back (a day) bounds
what a stopped beat catches up on: an occurrence older than that is not e-mailed late.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import translation
from django.utils.translation import gettext as _

from ledger.currencies import format_amount
from ledger.models import Entry, Kind, ReminderNotice
from ledger.repeat import occurrences, parse_repeat
from ledger.selectors import completed_occurrences
from mmw.mail import language_or_default, send_on_commit

LOOKBACK = timedelta(days=1)


def due_occurrences(*, now: datetime, lookback: timedelta = LOOKBACK) -> list[tuple[Entry, datetime]]:
    """Occurrences in ``(now - lookback, now]`` of live reminders (not reversed, not a reversal)
    whose author is still an active user, less the occurrences already completed."""
    start = now - lookback
    reminders = (
        Entry.objects.filter(kind=Kind.REMINDER, reverses__isnull=True, due_at__lte=now, author__is_active=True)
        .exclude(Exists(Entry.objects.filter(reverses=OuterRef("pk"))))
        .select_related("author", "project")
    )
    done = completed_occurrences(reminders)
    found = []
    for reminder in reminders.iterator():
        assert reminder.due_at is not None
        rule = parse_repeat(reminder.repeat) if reminder.repeat else None
        found += [
            (reminder, at)
            for at in occurrences(reminder.due_at, rule, start=start, end=now)
            if at > start and (reminder.pk, at) not in done
        ]
    return found


def send_due_reminders(*, now: datetime, lookback: timedelta = LOOKBACK) -> int:
    """E-mail each due occurrence not e-mailed yet; returns how many e-mails were queued."""
    sent = 0
    for reminder, at in due_occurrences(now=now, lookback=lookback):
        try:
            with transaction.atomic():
                _notice, created = ReminderNotice.objects.get_or_create(entry=reminder, due_at=at)
                if created:
                    _mail(reminder, at)
                    sent += 1
        except IntegrityError:
            continue  # another run inserted it first: that run sends the e-mail
    return sent


def _mail(reminder: Entry, at: datetime) -> None:
    """In the author's saved language (the reminder's fields are theirs, as written)."""
    assert reminder.author is not None
    amount = f"{format_amount(reminder.amount, reminder.currency)} {reminder.currency}"
    with translation.override(language_or_default(reminder.author.language)):
        who = " " + _("to %(counterparty)s") % {"counterparty": reminder.counterparty} if reminder.counterparty else ""
        body = (
            _("A payment reminder in project %(project)s is due %(when)s:")
            % {"project": reminder.project.name, "when": at.isoformat()}
            + f"\n\n  {amount}{who}\n  {reminder.category}\n  {reminder.memo}\n\n"
            + _("Reminder id: %(id)s. Cancel it with ledger_reverse; list what is due with ledger_upcoming.")
            % {"id": reminder.id}
            + "\n"
        )
        subject = "[MMW] " + _("Due: %(amount)s%(who)s") % {"amount": amount, "who": who}
    send_on_commit(subject=subject, body=body, recipients=[reminder.author.email], what=f"reminder {reminder.id}")
