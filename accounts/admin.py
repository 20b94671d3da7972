"""Support staff's view of people, accounts, projects, keys and the audit log.

Accounts are found by e-mail (of any member) or tenant id. Keys are revoked through
``accounts.services.api_key_revoke`` (which writes the audit row naming the staff member); the
audit log is read-only. Staff need the "Support" group's permissions, not superuser status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.admin_login import ThrottledAdminAuthenticationForm
from accounts.models import Account, ApiKey, AuditEvent, Project, User, Workspace
from accounts.services import api_key_revoke

if TYPE_CHECKING:  # ModelAdmin is generic only in django-stubs, not at run time
    UserBase = DjangoUserAdmin[User]
    AccountBase = admin.ModelAdmin[Account]
    ProjectBase = admin.ModelAdmin[Project]
    WorkspaceBase = admin.ModelAdmin[Workspace]
    ApiKeyBase = admin.ModelAdmin[ApiKey]
    AuditBase = admin.ModelAdmin[AuditEvent]
else:
    UserBase = DjangoUserAdmin
    AccountBase = ProjectBase = WorkspaceBase = ApiKeyBase = AuditBase = admin.ModelAdmin

# The admin's login is throttled like the dashboard's (same limiter, same counters).
admin.site.login_form = ThrottledAdminAuthenticationForm


class ReadOnlyMixin:
    """Rows written only by services: staff may look, never add, change or delete."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(User)
class UserAdmin(UserBase):
    ordering = ("email",)
    list_display = ("email", "is_active", "is_staff", "date_joined", "last_login")
    list_filter = ("is_active", "is_staff", "is_superuser", "groups")
    search_fields = ("email",)
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


class ProjectInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Project
    fields = ("name", "created_at", "deleted_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Account)
class AccountAdmin(AccountBase):
    list_display = ("tenant_id", "name", "kind", "created_at")
    list_filter = ("kind",)
    search_fields = ("tenant_id", "name", "memberships__user__email")
    readonly_fields = ("tenant_id", "kind", "created_at")
    inlines = (ProjectInline,)

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Account], search_term: str) -> Any:
        results, _ = super().get_search_results(request, queryset, search_term)
        return results.distinct(), False


@admin.register(Project)
class ProjectAdmin(ProjectBase):
    list_display = ("name", "account", "created_at", "deleted_at")
    list_select_related = ("account",)
    search_fields = ("name", "account__tenant_id", "id")
    readonly_fields = ("id", "account", "created_at", "deleted_at")
    list_filter = (("deleted_at", admin.EmptyFieldListFilter),)


@admin.register(Workspace)
class WorkspaceAdmin(ReadOnlyMixin, WorkspaceBase):
    list_display = ("name", "project", "created_at", "deleted_at")
    list_select_related = ("project",)
    search_fields = ("name", "public_id", "project__account__tenant_id")


@admin.register(ApiKey)
class ApiKeyAdmin(ApiKeyBase):
    list_display = (
        "prefix_display",
        "user",
        "account",
        "project",
        "device_label",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_select_related = ("user", "account", "project")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("prefix", "user__email", "account__tenant_id", "device_label")
    exclude = ("digest",)
    readonly_fields = (
        "account",
        "project",
        "user",
        "name",
        "device_label",
        "prefix",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    actions = ("revoke",)

    @admin.display(description="key")
    def prefix_display(self, obj: ApiKey) -> str:
        return f"mmw_{obj.prefix}…"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued to their holder, shown once; never by staff

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: the row stays for audit

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        staff = request.user
        assert isinstance(staff, User)
        count = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=key, actor=staff)
            count += 1
        messages.success(request, f"Revoked {count} key(s).")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyMixin, AuditBase):
    list_display = ("created_at", "action", "account", "actor_user", "target_type", "target_id")
    list_select_related = ("account", "actor_user")
    list_filter = ("action",)
    search_fields = ("action", "account__tenant_id", "actor_user__email", "target_id")
    date_hierarchy = "created_at"
