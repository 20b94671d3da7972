"""Support staff's read-only view of organisations: memberships, departments, invitations and
project access. Changes go through the organisation's owners and admins (``orgs.services``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from interfaces.admin import ReadOnlyMixin, labelled
from orgs.models import Department, Invitation, Membership, ProjectAccess

if TYPE_CHECKING:
    MembershipBase = admin.ModelAdmin[Membership]
    DepartmentBase = admin.ModelAdmin[Department]
    InvitationBase = admin.ModelAdmin[Invitation]
    AccessBase = admin.ModelAdmin[ProjectAccess]
else:
    MembershipBase = DepartmentBase = InvitationBase = AccessBase = admin.ModelAdmin

labelled(Membership, _("membership"), _("memberships"))
labelled(Department, _("department"), _("departments"))
labelled(Invitation, _("invitation"), _("invitations"))
labelled(ProjectAccess, _("project access"), _("project access"))


@admin.register(Membership)
class MembershipAdmin(ReadOnlyMixin, MembershipBase):
    list_display = ("user", "account", "role", "is_active", "created_at")
    list_select_related = ("user", "account")
    list_filter = ("role", "is_active")
    search_fields = ("user__email", "account__tenant_id", "account__name")


@admin.register(Department)
class DepartmentAdmin(ReadOnlyMixin, DepartmentBase):
    list_display = ("name", "account", "created_at")
    search_fields = ("name", "account__tenant_id")


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyMixin, InvitationBase):
    list_display = ("email", "account", "role", "created_at", "expires_at", "accepted_at", "revoked_at")
    search_fields = ("email", "account__tenant_id")
    exclude = ("nonce_digest",)


@admin.register(ProjectAccess)
class ProjectAccessAdmin(ReadOnlyMixin, AccessBase):
    list_display = ("project", "restricted", "updated_at")
