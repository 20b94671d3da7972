"""Support staff's read-only view of pending deletions and webhooks (with their deliveries).

Deletions are requested and cancelled by an account's owners (``datarights.deletion``); webhooks
are managed by the account on its Webhooks page. The signing secret is never shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from datarights.models import AccountDeletion, WebhookDelivery, WebhookEndpoint
from interfaces.admin import ReadOnlyMixin, labelled

if TYPE_CHECKING:
    DeletionBase = admin.ModelAdmin[AccountDeletion]
    EndpointBase = admin.ModelAdmin[WebhookEndpoint]
    DeliveryBase = admin.ModelAdmin[WebhookDelivery]
else:
    DeletionBase = EndpointBase = DeliveryBase = admin.ModelAdmin

labelled(AccountDeletion, _("account deletion"), _("account deletions"))
labelled(WebhookEndpoint, _("webhook endpoint"), _("webhook endpoints"))
labelled(WebhookDelivery, _("webhook delivery"), _("webhook deliveries"))


@admin.register(AccountDeletion)
class AccountDeletionAdmin(ReadOnlyMixin, DeletionBase):
    list_display = ("account", "requested_by", "requested_at", "purge_after", "cancelled_at", "delete_requester")
    list_select_related = ("account", "requested_by")
    list_filter = (("cancelled_at", admin.EmptyFieldListFilter),)
    search_fields = ("account__tenant_id", "account__name", "requested_by__email")
    date_hierarchy = "requested_at"


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
