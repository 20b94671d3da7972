"""Support staff see clients and grants, and revoke grants (through ``oauth.services``, audited)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.models import User
from interfaces.admin import labelled
from oauth import services
from oauth.models import Client, Grant

if TYPE_CHECKING:  # ModelAdmin is generic only in django-stubs, not at run time
    ClientBase = admin.ModelAdmin[Client]
    GrantBase = admin.ModelAdmin[Grant]
else:
    ClientBase = GrantBase = admin.ModelAdmin

labelled(Client, _("OAuth client"), _("OAuth clients"))
labelled(Grant, _("grant"), _("grants"))


@admin.register(Client)
class ClientAdmin(ClientBase):
    list_display = ("client_name", "client_id", "self_registered", "created_at")
    search_fields = ("client_name", "client_id")
    readonly_fields = ("secret_digest",)


@admin.register(Grant)
class GrantAdmin(GrantBase):
    list_display = ("client", "user", "project", "scopes", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__email", "client__client_name")
    readonly_fields = ("client", "user", "project", "scopes", "resource", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Revoke the selected grants (their tokens stop at once)"), permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[Grant]) -> None:
        assert isinstance(request.user, User)
        for grant in queryset.select_related("client", "project__account"):
            services.grant_revoke(grant=grant, actor=request.user)
        count = queryset.count()
        done = ngettext("%(count)d grant revoked.", "%(count)d grants revoked.", count)
        messages.success(request, done % {"count": count})
