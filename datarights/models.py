"""What data rights keep of their own: authors an import could not map, and account deletions.

Everything else an export reads or an import writes lives in the apps that own it (accounts,
memories, transcripts); this app only reads and writes them through their models and services.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from accounts.models import Account


class AuthorLabel(models.Model):
    """The author of an imported record who has no membership in the account it was imported into:
    the record's ``author`` stays empty and the e-mail is kept here, as a label, so a later export
    names the same author (docs/export-format.md, "Authors")."""

    class Kind(models.TextChoices):
        MEMORY = "memory", "memory"
        SESSION = "session", "session"
        AUDIT_EVENT = "audit_event", "audit event"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    object_id = models.CharField(max_length=64)
    email = models.EmailField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "object_id"], name="author_label_unique")]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}: {self.email}"


class AccountDeletion(models.Model):
    """An owner's request to delete an account. From ``requested_at`` the account is closed (its
    keys revoked, its memberships inactive — both remembered here so a cancel restores exactly
    them); at ``purge_after`` the retention job deletes it for good. One open request per account."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    requested_at = models.DateTimeField()
    purge_after = models.DateTimeField()
    reminded_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # Set when a person deleted their own user: the user goes with their personal account.
    delete_requester = models.BooleanField(default=False)
    revoked_key_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    deactivated_membership_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account"], condition=models.Q(cancelled_at__isnull=True), name="account_deletion_one_open"
            )
        ]

    def __str__(self) -> str:
        return f"deletion of {self.account_id} after {self.purge_after:%Y-%m-%d}"

    @property
    def is_open(self) -> bool:
        return self.cancelled_at is None
