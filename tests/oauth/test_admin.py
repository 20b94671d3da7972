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
from dashboard.support import SUPPORT_GROUP, ensure_support_group
from oauth import services
from oauth.models import Grant
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db

REDIRECT = "http://127.0.0.1:9/callback"


def connected(tenancy: Tenancy) -> tuple[Grant, str]:
    """Alice connects a client to her project: the grant and a live access token of it."""
    client = services.client_register(
        info=services.ClientInput(
            client_id="support-test-client",
            client_name="Helpful Assistant",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
            scope="",
            client_uri="",
            client_secret=None,
        )
    )
    pending = services.authorization_begin(
        client=client,
        redirect_uri=REDIRECT,
        redirect_uri_explicit=True,
        code_challenge="c" * 43,
        state="st",
        scopes=["memory:read"],
        resource="http://testserver/mcp",
    )
    approved = services.authorization_approve(
        pending=pending, user=tenancy.alice.user, project=tenancy.alice.project, scopes=["memory:read"]
    )
    code = services.code_find(client_id=client.client_id, raw_code=approved.code)
    assert code is not None
    return approved.grant, services.code_exchange(code=code).access_token


@pytest.fixture
def staff(tenancy: Tenancy) -> User:
    user = User.objects.create_user("support@example.com", "pw", is_staff=True)
    user.groups.add(ensure_support_group())
    return user


def test_support_staff_see_grants_and_clients_and_revoke_a_grant(staff: User, tenancy: Tenancy) -> None:
    grant, token = connected(tenancy)
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
