"""What data rights keep of their own: authors an import could not map, account deletions and
import jobs (webhook endpoints and their deliveries are the ``webhooks`` app's).

Everything else an export reads or an import writes lives in the apps that own it (accounts,
memories, transcripts, ledger); this app only reads and writes them through their models and services.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from accounts.models import Account, Project


class AuthorLabel(models.Model):
    """The author of an imported record who has no membership in the account it was imported into:
    the record's ``author`` stays empty and the e-mail is kept here, as a label, so a later export
    names the same author (docs/export-format.md, "Authors")."""

    class Kind(models.TextChoices):
        MEMORY = "memory", "memory"
        SESSION = "session", "session"
        AUDIT_EVENT = "audit_event", "audit event"
        LEDGER_ENTRY = "ledger_entry", "ledger entry"

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


class ImportJob(models.Model):
    """One import into a project by a member (``POST /api/v1/import``, the dashboard's Data page):
    its upload (kept until it has run), its progress, and its outcome (docs/export-format.md,
    "Importing"). A small file is imported inside the request; a large one by the ``imports``
    worker, and the job is how the caller follows it."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    class Via(models.TextChoices):
        API = "api", "API"
        DASHBOARD = "dashboard", "dashboard"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    api_key = models.ForeignKey("accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    via = models.CharField(max_length=16, choices=Via.choices)
    ledger_allowed = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    upload = models.BinaryField(null=True, blank=True)  # the file as sent; cleared once the job has run
    upload_bytes = models.PositiveIntegerField(default=0)
    lines = models.PositiveIntegerField(default=0)  # progress: lines read so far
    bytes_read = models.BigIntegerField(default=0)  # progress: decompressed bytes read so far
    report = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)  # {"code", "message", "status"}
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"], name="import_job_project")]

    def __str__(self) -> str:
        return f"import {self.pk} into {self.project_id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
