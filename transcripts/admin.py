"""Support staff's read-only view of uploaded sessions (metadata only: turns are not shown, as
memory contents are not listed), forgotten ones included."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from interfaces.admin import ReadOnlyMixin, labelled
from transcripts.models import Session

if TYPE_CHECKING:
    SessionBase = admin.ModelAdmin[Session]
else:
    SessionBase = admin.ModelAdmin

labelled(Session, _("session"), _("sessions"))


@admin.register(Session)
class SessionAdmin(ReadOnlyMixin, SessionBase):
    list_display = ("client", "client_session_id", "account", "project", "author", "turn_count", "created_at")
    list_select_related = ("account", "project", "author")
    list_filter = (("forgotten_at", admin.EmptyFieldListFilter), "client", "shared_with_project")
    search_fields = ("=id", "client_session_id", "account__tenant_id", "author__email")
    date_hierarchy = "created_at"
    show_full_result_count = False
