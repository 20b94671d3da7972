"""Webhook endpoints of a project and their deliveries (docs/reference/webhooks.md).

The two models moved here from ``datarights`` (issue #39) without touching the database: their
tables keep the names ``datarights`` created (``Meta.db_table``), and the migrations
``webhooks.0001`` / ``datarights.0004`` only move them in Django's migration state
(``SeparateDatabaseAndState``), renaming their content types so permissions and admin history
follow them (docs/architecture.md, "Webhooks").
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.models import Project


class WebhookEndpoint(models.Model):
    """An https URL of a project that is told about chosen events, signed with ``secret``
    (docs/reference/webhooks.md). ``cursor``: events up to this time have been turned into deliveries."""

    EVENTS = ("memory.created", "memory.forgotten", "memory.conflict", "session.uploaded")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=64)
    events = ArrayField(models.CharField(max_length=32))
    include_content = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    cursor = models.DateTimeField()
    is_active = models.BooleanField(default=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "datarights_webhookendpoint"  # created by datarights.0001; the table kept its name

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event for one endpoint, and what became of it (the delivery log)."""

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        SUCCEEDED = "succeeded", _("succeeded")
        GAVE_UP = "gave_up", _("gave up")

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(default=uuid.uuid4, unique=True)
    event_key = models.CharField(max_length=200)  # what happened, once: "memory.created:<id>"
    event_type = models.CharField(max_length=32)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    response_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "datarights_webhookdelivery"  # created by datarights.0001; the table kept its name
        constraints = [models.UniqueConstraint(fields=["endpoint", "event_key"], name="webhook_delivery_once")]
        indexes = [
            models.Index(fields=["next_attempt_at"], name="webhook_delivery_due", condition=models.Q(status="pending")),
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_log"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.endpoint_id} ({self.status})"
