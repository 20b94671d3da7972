"""Support staff's view of people, accounts, projects, keys and the audit log.

Accounts are found by e-mail (of any member) or tenant id. Keys are revoked through
``accounts.services.api_key_revoke`` (which writes the audit row naming the staff member); the
audit log is read-only. Staff need the "Support" group's permissions, not superuser status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from accounts import admin_customer
from accounts.admin_login import ThrottledAdminAuthenticationForm
from accounts.models import Account, ApiKey, AuditEvent, Project, RefusedCall, User, Workspace
from accounts.refusals import LABELS as REFUSALS
from accounts.selectors import accounts_matching, key_prefix_in
from accounts.services import api_key_revoke
from interfaces.admin import ReadOnlyMixin, labelled

if TYPE_CHECKING:  # ModelAdmin is generic only in django-stubs, not at run time
    UserBase = DjangoUserAdmin[User]
    AccountBase = admin.ModelAdmin[Account]
    ProjectBase = admin.ModelAdmin[Project]
    WorkspaceBase = admin.ModelAdmin[Workspace]
    ApiKeyBase = admin.ModelAdmin[ApiKey]
    AuditBase = admin.ModelAdmin[AuditEvent]
    RefusedBase = admin.ModelAdmin[RefusedCall]
else:
    UserBase = DjangoUserAdmin
    AccountBase = ProjectBase = WorkspaceBase = ApiKeyBase = AuditBase = RefusedBase = admin.ModelAdmin

# The admin's login is throttled like the dashboard's (same limiter, same counters).
admin.site.login_form = ThrottledAdminAuthenticationForm

labelled(User)  # Django names the user model and its own fields (translated); MMW's: language
labelled(Account, _("account"), _("accounts"))
labelled(Project, _("project"), _("projects"))
labelled(Workspace, _("workspace"), _("workspaces"))
labelled(ApiKey, _("API key"), _("API keys"))
labelled(AuditEvent, _("audit event"), _("audit events"))
labelled(RefusedCall, _("refused call"), _("refused calls"))


@admin.register(User)
class UserAdmin(UserBase):
    ordering = ("email",)
    list_display = ("email", "is_active", "is_staff", "date_joined", "last_login")
    list_filter = ("is_active", "is_staff", "is_superuser", "groups")
    search_fields = ("email",)
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        (_("Permissions"), {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        (_("Dates"), {"fields": ("last_login", "date_joined")}),
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
    """Accounts, found by a member's e-mail, the tenant id, the name, a project id or any form of a
    key (``mmw_DtDrnBJw…`` as the key list shows it, the whole key, the bare prefix); a search
    that names one account opens its customer page (``accounts.admin_customer``)."""

    list_display = ("tenant_id", "name", "kind", "created_at", "customer_link")
    list_filter = ("kind",)
    search_fields = ("tenant_id", "name", "memberships__user__email")
    search_help_text = _("E-mail, tenant id, name, project id, or a key (mmw_… as shown, or the bare prefix).")
    readonly_fields = ("tenant_id", "kind", "created_at", "customer_link")
    inlines = (ProjectInline,)

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Account], search_term: str) -> Any:
        if not search_term.strip():
            return queryset, False
        return queryset.filter(pk__in=accounts_matching(search_term).values("pk")), False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        term = request.GET.get("q", "").strip()
        if term and self.has_view_permission(request):
            found = list(accounts_matching(term).values_list("pk", flat=True)[:2])
            if len(found) == 1:
                return redirect(_customer_url(found[0], key_prefix_in(term)))
        return super().changelist_view(request, extra_context)

    @admin.display(description=_("customer page"))
    def customer_link(self, obj: Account) -> str:
        return format_html('<a href="{}">{}</a>', _customer_url(obj.pk, None), gettext("Customer page"))

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<int:account_id>/customer/",
                self.admin_site.admin_view(self.customer_view),
                name="accounts_account_customer",
            )
        ]
        return [*own, *super().get_urls()]

    def customer_view(self, request: HttpRequest, account_id: int) -> HttpResponseBase:
        if not self.has_view_permission(request):
            raise PermissionDenied
        account = Account.objects.filter(pk=account_id).first()
        if account is None:
            raise Http404("account not found")
        prefix = key_prefix_in(request.GET.get("key", ""))
        context = {
            **self.admin_site.each_context(request),
            **admin_customer.context(account, prefix),
            "opts": self.model._meta,
            "title": gettext("Customer: %(name)s") % {"name": account.name},
            "searched_prefix": prefix,
        }
        return TemplateResponse(request, "admin/accounts/account/customer.html", context)


def _customer_url(account_id: int, prefix: str | None) -> str:
    url = reverse("admin:accounts_account_customer", args=[account_id])
    return f"{url}?key={prefix}" if prefix else url


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
        "state",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_select_related = ("user", "account", "project")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("prefix", "user__email", "account__tenant_id", "device_label")
    search_help_text = _(
        "A key as shown (mmw_DtDrnBJw…), the whole key, its prefix, an e-mail, a tenant id or a device."
    )

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[ApiKey], search_term: str) -> Any:
        prefix = key_prefix_in(search_term)
        if prefix is not None:  # "mmw_DtDrnBJw…" found nothing before: only the bare prefix matched
            return queryset.filter(prefix=prefix), False
        return super().get_search_results(request, queryset, search_term)

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

    @admin.display(description=_("key"))
    def prefix_display(self, obj: ApiKey) -> str:
        return f"mmw_{obj.prefix}…"

    @admin.display(description=_("state"))
    def state(self, obj: ApiKey) -> str:
        return str(admin_customer.STATE_LABELS[admin_customer.key_state(obj)])

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued to their holder, shown once; never by staff

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: the row stays for audit

    @admin.action(description=_("Revoke the selected keys"), permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        staff = request.user
        assert isinstance(staff, User)
        count = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=key, actor=staff)
            count += 1
        done = ngettext("Revoked %(count)d key.", "Revoked %(count)d keys.", count)
        messages.success(request, done % {"count": count})


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyMixin, AuditBase):
    list_display = ("created_at", "action", "account", "actor_user", "target", "target_id")
    fields = ("created_at", "action", "account", "actor_user", "actor_key", "target", "target_id", "data")
    readonly_fields = ("created_at", "target")
    list_select_related = ("account", "actor_user")
    list_filter = ("action",)
    search_fields = ("action", "account__tenant_id", "actor_user__email", "target_id")
    date_hierarchy = "created_at"

    @admin.display(description=_("target type"), ordering="target_type")
    def target(self, obj: AuditEvent) -> str:
        return format_html("<code>{}</code>", obj.target_type)  # a code, as the audit log's CSV has it


class RefusalFilter(admin.SimpleListFilter):
    """The reasons by name, in the staff member's language (the rows hold their codes)."""

    title = _("reason")
    parameter_name = "reason"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [(code, label) for code, label in REFUSALS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[RefusedCall]) -> QuerySet[RefusedCall]:
        return queryset.filter(reason=self.value()) if self.value() else queryset


@admin.register(RefusedCall)
class RefusedCallAdmin(ReadOnlyMixin, RefusedBase):
    """Calls refused with a key of ours, per key and reason (``accounts.refused_calls``)."""

    list_display = ("last_at", "key", "why", "count", "first_at", "account")
    fields = ("api_key", "account", "why", "count", "first_at", "last_at")
    readonly_fields = ("why",)
    list_select_related = ("api_key", "account")
    list_filter = (RefusalFilter,)
    search_fields = ("api_key__prefix", "account__tenant_id")

    @admin.display(description=_("key"))
    def key(self, obj: RefusedCall) -> str:
        return f"mmw_{obj.api_key.prefix}…"

    @admin.display(description=_("reason"), ordering="reason")
    def why(self, obj: RefusedCall) -> str:
        return format_html("{} (<code>{}</code>)", REFUSALS.get(obj.reason, obj.reason), obj.reason)

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[RefusedCall], search_term: str) -> Any:
        prefix = key_prefix_in(search_term)
        if prefix is not None:
            return queryset.filter(api_key__prefix=prefix), False
        return super().get_search_results(request, queryset, search_term)
