"""Support staff's read-only view of memory records, forgotten ones included.

The list never shows content. Opening one record shows it, and writes an audit row
(``memory.viewed_by_staff``) naming the staff member, in the record's account's audit log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _

from accounts.models import User
from accounts.services import audit_record
from interfaces.admin import ReadOnlyMixin, labelled
from memories.models import Memory

if TYPE_CHECKING:
    MemoryBase = admin.ModelAdmin[Memory]
else:
    MemoryBase = admin.ModelAdmin

labelled(Memory, _("memory"), _("memories"))


@admin.register(Memory)
class MemoryAdmin(ReadOnlyMixin, MemoryBase):
    list_display = ("id", "account", "project", "workspace", "fact_key", "version", "created_at", "forgotten_at")
    list_select_related = ("account", "project", "workspace")
    list_filter = (("forgotten_at", admin.EmptyFieldListFilter), "visibility")
    search_fields = ("=id", "account__tenant_id", "fact_key", "source_id", "author__email")
    date_hierarchy = "created_at"
    exclude = ("embedding", "search_document", "recency_document")
    show_full_result_count = False

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        excluded = {"embedding", "search_document", "recency_document"}
        return [f.name for f in Memory._meta.concrete_fields if f.name not in excluded]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().change_view(request, object_id, form_url, extra_context)
        record = (
            Memory.objects.filter(pk=object_id).select_related("account").first()
            if response.status_code == 200
            else None
        )
        if record is not None and isinstance(request.user, User):
            audit_record(
                action="memory.viewed_by_staff",
                account=record.account,
                actor_user=request.user,
                target_type="memory",
                target_id=str(record.pk),
                data={"staff": request.user.email},
            )
        return response
