"""Every change to an OAuth grant leaves an audit row in the project's account (docs/oauth.md):
``oauth.grant_created`` when the person approves on the consent page, ``oauth.grant_revoked`` when
it is revoked from Dashboard → Connected apps or the admin (tests/oauth/test_admin.py), and
``oauth.token_family_revoked`` when a rotated refresh token comes back (or the client revokes)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from accounts.keys import resolve_key
from accounts.models import AuditEvent
from oauth import services
from oauth.models import Grant
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.oauth import grants

pytestmark = pytest.mark.django_db


def test_approving_on_the_consent_page_records_grant_created(tenancy: Tenancy) -> None:
    parked = grants.pending(grants.client(), ["memory:read", "memory:write"])
    response = client_for(tenancy.alice.user).post(
        reverse("dashboard:oauth-consent", args=[parked.public_id]),
        {"decision": "approve", "project": tenancy.alice.project.pk, "scopes": ["memory:read"]},
    )
    assert response.status_code == 302
    assert "code" in parse_qs(urlsplit(response["Location"]).query)
    grant = Grant.objects.get()
    event = AuditEvent.objects.get(action="oauth.grant_created")
    assert (event.account, event.actor_user, event.target_type, event.target_id) == (
        tenancy.alice.account,
        tenancy.alice.user,
        "oauth_grant",
        str(grant.pk),
    )
    assert event.data == {"client": "Helpful Assistant", "client_id": "test-client", "scopes": ["memory:read"]}


def test_refusing_on_the_consent_page_records_nothing(tenancy: Tenancy) -> None:
    parked = grants.pending(grants.client())
    response = client_for(tenancy.alice.user).post(
        reverse("dashboard:oauth-consent", args=[parked.public_id]), {"decision": "refuse"}
    )
    assert parse_qs(urlsplit(response["Location"]).query)["error"] == ["access_denied"]
    assert not AuditEvent.objects.filter(action__startswith="oauth.").exists()


def test_revoking_from_connected_apps_records_grant_revoked_once(tenancy: Tenancy) -> None:
    grant, tokens = grants.connected(tenancy)
    browser = client_for(tenancy.alice.user)
    url = reverse("dashboard:connected-app-revoke", args=[grant.pk])
    assert browser.post(url).status_code == 302
    assert resolve_key(tokens.access_token) is None
    browser.post(url)  # a second revoke changes nothing and records nothing
    event = AuditEvent.objects.get(action="oauth.grant_revoked")
    assert (event.account, event.actor_user, event.target_type, event.target_id) == (
        tenancy.alice.account,
        tenancy.alice.user,
        "oauth_grant",
        str(grant.pk),
    )
    assert event.data == {"client": "Helpful Assistant", "client_id": "test-client"}


def test_another_member_cannot_revoke_it_and_nothing_is_recorded(tenancy: Tenancy) -> None:
    grant, tokens = grants.connected(tenancy)
    response = client_for(tenancy.bob.user).post(reverse("dashboard:connected-app-revoke", args=[grant.pk]))
    assert response.status_code == 404  # Connected apps lists one's own grants only
    assert resolve_key(tokens.access_token) is not None
    assert not AuditEvent.objects.filter(action="oauth.grant_revoked").exists()


def test_a_reused_refresh_token_records_token_family_revoked(tenancy: Tenancy) -> None:
    grant, first = grants.connected(tenancy)
    live = services.refresh_find(client_id="test-client", raw_token=first.refresh_token)
    assert live is not None
    second = services.refresh_exchange(token=live, scopes=["memory:read"])
    assert not AuditEvent.objects.filter(action="oauth.token_family_revoked").exists()
    assert services.refresh_find(client_id="test-client", raw_token=first.refresh_token) is None  # reused
    assert resolve_key(second.access_token) is None
    event = AuditEvent.objects.get(action="oauth.token_family_revoked")
    assert (event.account, event.actor_user, event.target_type, event.target_id) == (
        tenancy.alice.account,
        None,
        "oauth_grant",
        str(grant.pk),
    )
    # both pairs of the chain: the spent refresh token, its access token and the new pair
    assert event.data == {"reason": "refresh_token_reused", "tokens": 4}


def test_a_client_revoking_its_token_records_token_family_revoked(tenancy: Tenancy) -> None:
    grant, tokens = grants.connected(tenancy)
    services.token_revoke(raw_token=tokens.refresh_token, client_id="test-client")
    services.token_revoke(raw_token=tokens.refresh_token, client_id="test-client")  # nothing left to revoke
    event = AuditEvent.objects.get(action="oauth.token_family_revoked")
    assert event.target_id == str(grant.pk)
    assert event.data == {"reason": "revoked_by_client", "tokens": 2}
