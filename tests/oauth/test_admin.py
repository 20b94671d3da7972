"""Support staff (the Support group, not superusers) see OAuth clients and grants in the Django
admin and revoke grants there (issue #18: "Support admin sees and revokes grants"): the admin
action goes through ``oauth.services.grant_revoke``, so the tokens stop at once and it is audited."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.management.sql import emit_post_migrate_signal
from django.urls import reverse

from accounts.keys import resolve_key
from accounts.models import AuditEvent, User
from dashboard.support import SUPPORT_GROUP
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for, staff
from tests.oauth.grants import connected

pytestmark = pytest.mark.django_db
__all__ = ["staff"]  # the support engineer fixture, imported to be used here


def test_support_staff_see_grants_and_clients_and_revoke_a_grant(staff: User, tenancy: Tenancy) -> None:
    grant, tokens = connected(tenancy)
    token = tokens.access_token
    assert resolve_key(token) is not None
    client = client_for(staff)
    listing = client.get(reverse("admin:oauth_grant_changelist"))
    assert listing.status_code == 200
    assert b"Helpful Assistant" in listing.content
    assert b'value="revoke"' in listing.content  # the action is offered
    assert client.get(reverse("admin:oauth_client_changelist")).status_code == 200
    response = client.post(
        reverse("admin:oauth_grant_changelist"), {"action": "revoke", "_selected_action": [grant.pk]}
    )
    assert response.status_code == 302
    assert resolve_key(token) is None  # at once
    grant.refresh_from_db()
    assert grant.revoked_at is not None
    event = AuditEvent.objects.get(action="oauth.grant_revoked", actor_user=staff)
    assert event.target_id == str(grant.pk)
    assert event.account == tenancy.alice.account
    assert event.data == {"client": "Helpful Assistant", "client_id": "test-client"}


def test_support_staff_may_not_add_or_delete_grants_or_change_clients(staff: User) -> None:
    staff = User.objects.get(pk=staff.pk)  # permissions are cached per instance
    assert staff.has_perm("oauth.view_grant")
    assert staff.has_perm("oauth.change_grant")
    assert staff.has_perm("oauth.view_client")
    for perm in ("oauth.add_grant", "oauth.delete_grant", "oauth.add_client", "oauth.change_client"):
        assert not staff.has_perm(perm), perm
    assert not staff.has_perm("oauth.delete_client")


def test_a_fresh_migrate_gives_the_support_group_the_oauth_permissions(tenancy: Tenancy) -> None:
    Group.objects.filter(name=SUPPORT_GROUP).delete()
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")  # what `migrate` sends
    codenames = set(Group.objects.get(name=SUPPORT_GROUP).permissions.values_list("codename", flat=True))
    assert {"view_grant", "change_grant", "view_client"} <= codenames
    assert not {"add_grant", "delete_grant", "change_client", "delete_client"} & codenames
