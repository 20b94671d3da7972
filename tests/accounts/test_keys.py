from __future__ import annotations

import pytest
from django.test import Client

from accounts import keys, services
from accounts.models import SCOPE_READ, SCOPE_WRITE, ApiKey, AuditEvent
from orgs.models import Membership
from tests.conftest import Tenancy


@pytest.mark.django_db
def test_key_is_shown_once_and_stored_only_as_a_digest(tenancy: Tenancy) -> None:
    stored = ApiKey.objects.get(prefix=tenancy.alice.key[4:12])
    assert tenancy.alice.key.startswith("mmw_")
    assert tenancy.alice.key not in {stored.digest, stored.prefix}
    assert stored.digest == keys.digest(tenancy.alice.key)
    assert not any(tenancy.alice.key in str(getattr(stored, f.attname)) for f in ApiKey._meta.fields)


@pytest.mark.django_db
def test_valid_key_resolves_to_its_principal(tenancy: Tenancy) -> None:
    principal = keys.resolve_bearer(f"Bearer {tenancy.bob.key}")
    assert principal is not None
    assert principal.user == tenancy.bob.user
    assert principal.account == tenancy.alice.account
    assert principal.project == tenancy.alice.project
    assert principal.membership.role == Membership.Role.MEMBER
    assert principal.scopes == {SCOPE_READ, SCOPE_WRITE}
    assert principal.device_label == "bob-desktop"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    ["", "Bearer", "Bearer mmw_", "Bearer mmw_unknownkeyunknownkey", "Basic abc", "Token mmw_x", "bearer nope"],
)
def test_unknown_or_malformed_keys_resolve_to_nothing(tenancy: Tenancy, header: str) -> None:
    assert keys.resolve_bearer(header) is None


@pytest.mark.django_db
def test_key_with_right_prefix_but_wrong_secret_is_refused(tenancy: Tenancy) -> None:
    forged = tenancy.alice.key[:-4] + ("AAAA" if not tenancy.alice.key.endswith("AAAA") else "BBBB")
    assert keys.resolve_key(forged) is None


@pytest.mark.django_db
def test_revoked_key_stops_working_and_is_audited(tenancy: Tenancy) -> None:
    api_key = ApiKey.objects.get(prefix=tenancy.alice.key[4:12])
    services.api_key_revoke(api_key=api_key, actor=tenancy.alice.user)
    assert keys.resolve_key(tenancy.alice.key) is None
    assert AuditEvent.objects.filter(action="api_key.revoked", target_id=str(api_key.pk)).count() == 1
    services.api_key_revoke(api_key=api_key, actor=tenancy.alice.user)
    assert AuditEvent.objects.filter(action="api_key.revoked", target_id=str(api_key.pk)).count() == 1


@pytest.mark.django_db
def test_deactivated_member_key_stops_working_at_once(tenancy: Tenancy) -> None:
    Membership.objects.filter(user=tenancy.bob.user).update(is_active=False)
    assert keys.resolve_key(tenancy.bob.key) is None


@pytest.mark.django_db
def test_key_creation_refuses_unknown_scopes(tenancy: Tenancy) -> None:
    from mmw.errors import InvalidInput

    with pytest.raises(InvalidInput, match="scopes must be"):
        services.api_key_create(user=tenancy.alice.user, project=tenancy.alice.project, scopes=["memory:admin"])


@pytest.mark.django_db
def test_last_used_time_is_recorded(tenancy: Tenancy) -> None:
    keys.resolve_key(tenancy.charlie.key)
    assert ApiKey.objects.get(prefix=tenancy.charlie.key[4:12]).last_used_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize("header", [None, "Bearer mmw_notarealkeyatall", "Bearer "])
def test_rest_without_a_valid_key_is_401_with_www_authenticate(tenancy: Tenancy, header: str | None) -> None:
    client = Client()
    headers = {"Authorization": header} if header is not None else {}
    response = client.get("/api/v1/workspaces", headers=headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.django_db
def test_rest_with_a_valid_key_passes_authentication(tenancy: Tenancy) -> None:
    response = Client().get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {tenancy.alice.key}")
    assert response.status_code == 200


@pytest.mark.django_db
def test_healthz_needs_no_key() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


@pytest.mark.django_db
def test_a_resolved_key_is_reused_without_sql(tenancy: Tenancy, django_assert_num_queries: object) -> None:
    first = keys.resolve_key(tenancy.bob.key)
    with django_assert_num_queries(0):  # type: ignore[operator]
        assert keys.resolve_key(tenancy.bob.key) is first


@pytest.mark.django_db
def test_revoking_through_the_service_stops_the_key_at_once(tenancy: Tenancy) -> None:
    assert keys.resolve_key(tenancy.alice.key) is not None  # cached
    api_key = ApiKey.objects.get(prefix=tenancy.alice.key[4:12])
    services.api_key_revoke(api_key=api_key, actor=tenancy.alice.user)
    assert keys.resolve_key(tenancy.alice.key) is None


@pytest.mark.django_db
def test_deactivating_through_the_service_stops_the_members_key_at_once(tenancy: Tenancy) -> None:
    from orgs.services import membership_deactivate

    assert keys.resolve_key(tenancy.bob.key) is not None  # cached
    membership = Membership.objects.get(user=tenancy.bob.user, account=tenancy.alice.account)
    membership_deactivate(membership=membership, actor=tenancy.alice.user)
    assert keys.resolve_key(tenancy.bob.key) is None


@pytest.mark.django_db
def test_a_revocation_the_process_did_not_see_stops_the_key_within_a_second(
    tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another web process revoked it (here: an UPDATE, which sends no signal): the cached
    principal lives at most MMW_KEY_CACHE_SECONDS (1 s)."""
    from accounts import key_cache

    now = [1000.0]
    monkeypatch.setattr(key_cache, "CACHE", key_cache.PrincipalCache(clock=lambda: now[0]))
    assert keys.resolve_key(tenancy.alice.key) is not None
    ApiKey.objects.filter(prefix=tenancy.alice.key[4:12]).update(revoked_at="2026-01-01T00:00:00Z")
    now[0] += 0.5
    assert keys.resolve_key(tenancy.alice.key) is not None  # still within the second
    now[0] += 0.5
    assert keys.resolve_key(tenancy.alice.key) is None  # one second after it was resolved


def test_the_cache_lives_one_second_by_default() -> None:
    from django.conf import settings

    assert settings.MMW_KEY_CACHE_SECONDS == 1.0
