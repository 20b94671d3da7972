"""Support staff's read-only view of pending deletions (webhooks: ``webhooks.admin``).

Deletions are requested and cancelled by an account's owners (``datarights.deletion``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from datarights.models import AccountDeletion
from interfaces.admin import ReadOnlyMixin, labelled

if TYPE_CHECKING:
    DeletionBase = admin.ModelAdmin[AccountDeletion]
else:
    DeletionBase = admin.ModelAdmin

labelled(AccountDeletion, _("account deletion"), _("account deletions"))


@admin.register(AccountDeletion)
class AccountDeletionAdmin(ReadOnlyMixin, DeletionBase):
    list_display = ("account", "requested_by", "requested_at", "purge_after", "cancelled_at", "delete_requester")
    list_select_related = ("account", "requested_by")
    list_filter = (("cancelled_at", admin.EmptyFieldListFilter),)
    search_fields = ("account__tenant_id", "account__name", "requested_by__email")
    date_hierarchy = "requested_at"
