"""Support staff's read-only view of webhooks and their deliveries. Webhooks are managed by the
account on its Webhooks page; the signing secret and the payloads are never shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from interfaces.admin import ReadOnlyMixin, labelled
from webhooks.models import WebhookDelivery, WebhookEndpoint

if TYPE_CHECKING:
    EndpointBase = admin.ModelAdmin[WebhookEndpoint]
    DeliveryBase = admin.ModelAdmin[WebhookDelivery]
else:
    EndpointBase = DeliveryBase = admin.ModelAdmin

labelled(WebhookEndpoint, _("webhook endpoint"), _("webhook endpoints"))
labelled(WebhookDelivery, _("webhook delivery"), _("webhook deliveries"))


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyMixin, EndpointBase):
    list_display = ("url", "project", "is_active", "consecutive_failures", "disabled_at", "disabled_reason")
    list_select_related = ("project",)
    list_filter = ("is_active",)
    search_fields = ("url", "project__account__tenant_id", "project__id")
    exclude = ("secret",)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyMixin, DeliveryBase):
    list_display = ("created_at", "event_type", "endpoint", "status", "attempts", "last_status_code", "last_error")
    list_select_related = ("endpoint",)
    list_filter = ("status", "event_type")
    search_fields = ("endpoint__url", "endpoint__project__account__tenant_id", "event_key")
    exclude = ("payload",)  # record content may be in it (endpoints that include content)
