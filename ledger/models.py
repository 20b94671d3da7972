"""Ledger entries (docs/ledger.md): append-only financial records and reminders.

An entry is never edited or deleted: a correction is a new entry that ``reverses`` the original
(``ledger.services.ledger_reverse``); the one-to-one link makes a second reversal impossible in
the database too. A reminder's occurrence is completed by a transaction that ``completes`` it
(``ledger.services.ledger_complete``): one per (reminder, occurrence), unique in the database.
Amounts are ``numeric`` — exact, never a float.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from accounts.models import Account, ApiKey, Project
from memories.models import Visibility, visibility_rule

if TYPE_CHECKING:
    from accounts.keys import Principal


class Kind(models.TextChoices):
    TRANSACTION = "transaction", "Transaction"
    REMINDER = "reminder", "Reminder"


class EntryQuerySet(models.QuerySet["Entry"]):
    def visible_to(self, principal: Principal) -> EntryQuerySet:
        """THE scoping rule of entries: the memory records' rule (``memories.models.visibility_rule``)."""
        rule = visibility_rule(principal)
        return self.none() if rule is None else self.filter(rule)


class AppendOnly(Exception):
    """Raised by any attempt to change or delete a stored entry."""


class Entry(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="ledger_entries")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    amount = models.DecimalField(max_digits=22, decimal_places=4)
    currency = models.CharField(max_length=3)
    occurred_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    repeat = models.CharField(max_length=200, blank=True)
    counterparty = models.CharField(max_length=200, blank=True)
    category = models.CharField(max_length=200, blank=True)
    memo = models.TextField(blank=True)
    reference = models.CharField(max_length=1000, null=True, blank=True)  # noqa: DJ001 - null: no reference, unique when given
    content_digest = models.CharField(max_length=64)
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.PROJECT)
    department_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    device_label = models.CharField(max_length=200, blank=True)
    reverses = models.OneToOneField("self", null=True, blank=True, on_delete=models.CASCADE, related_name="reversed_by")
    completes = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="completions")
    completes_due_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = EntryQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["project", "kind", "occurred_at"], name="ledger_entry_occurred"),
            models.Index(fields=["project", "kind", "due_at"], name="ledger_entry_due"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "author", "reference"],
                condition=Q(reference__isnull=False),
                name="ledger_entry_reference_unique",
            ),
            models.CheckConstraint(
                condition=Q(kind="transaction", occurred_at__isnull=False, due_at__isnull=True, repeat="")
                | Q(kind="reminder", due_at__isnull=False, occurred_at__isnull=True),
                name="ledger_entry_kind_times",
            ),
            models.CheckConstraint(condition=~Q(amount=0), name="ledger_entry_amount_not_zero"),
            models.UniqueConstraint(fields=["completes", "completes_due_at"], name="ledger_entry_complete_once"),
            models.CheckConstraint(
                condition=Q(completes__isnull=True, completes_due_at__isnull=True)
                | Q(kind="transaction", completes__isnull=False, completes_due_at__isnull=False),
                name="ledger_entry_completes_pair",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.currency} {self.counterparty}".strip()

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("ledger entries are append-only: record a reversal instead")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("ledger entries are append-only: record a reversal instead")


class ReminderNotice(models.Model):
    """One e-mail sent for one occurrence of a reminder: the unique pair makes the due-reminder
    job send each occurrence once, across restarts and overlapping runs."""

    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="notices")
    due_at = models.DateTimeField()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["entry", "due_at"], name="ledger_notice_once")]

    def __str__(self) -> str:
        return f"{self.entry_id} due {self.due_at.isoformat()}"
