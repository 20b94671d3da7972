"""Grant families (issue #35): every access and refresh token descended from one authorization
code, through any number of refreshes, belongs to that code's family. A replayed code revokes the
whole family (RFC 6749 §4.1.2), not only the first pair; a replayed refresh token revokes its
family too (RFC 9700 §4.14.2). Either revocation survives the refusal that follows it, and a
rotation racing with a revocation cannot leave a live pair behind."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from accounts.keys import resolve_key
from accounts.models import AuditEvent
from mmw.errors import InvalidInput
from oauth import services
from oauth.models import AuthorizationCode, Token
from tests import live
from tests.conftest import Tenancy
from tests.oauth import grants
from tests.oauth.test_flows import consent, exchange, mcp_post, pkce, refresh, register

live_server = live.live_server


def approved_code(tenancy: Tenancy) -> tuple[str, str]:
    """(client_id, raw code) of a fresh consent by Alice, not yet exchanged."""
    parked = grants.pending(grants.client())
    approved = services.authorization_approve(
        pending=parked, user=tenancy.alice.user, project=tenancy.alice.project, scopes=parked.scopes
    )
    return parked.client.client_id, approved.code


def exchanged(client_id: str, raw_code: str) -> services.IssuedTokens:
    code = services.code_find(client_id=client_id, raw_code=raw_code)
    assert code is not None
    return services.code_exchange(code=code)


def rotated(client_id: str, tokens: services.IssuedTokens) -> services.IssuedTokens:
    token = services.refresh_find(client_id=client_id, raw_token=tokens.refresh_token)
    assert token is not None
    return services.refresh_exchange(token=token, scopes=list(token.scopes))


def test_a_replayed_code_revokes_the_tokens_rotated_from_it(tenancy: Tenancy) -> None:
    client_id, raw = approved_code(tenancy)
    first = exchanged(client_id, raw)
    second = rotated(client_id, first)
    third = rotated(client_id, second)
    assert resolve_key(third.access_token) is not None
    assert services.code_find(client_id=client_id, raw_code=raw) is None  # the replay
    assert resolve_key(second.access_token) is None
    assert resolve_key(third.access_token) is None
    assert services.refresh_find(client_id=client_id, raw_token=third.refresh_token) is None
    assert not Token.objects.filter(revoked_at__isnull=True).exists()


def test_every_token_of_a_code_carries_the_codes_family(tenancy: Tenancy) -> None:
    client_id, raw = approved_code(tenancy)
    rotated(client_id, rotated(client_id, exchanged(client_id, raw)))
    family = AuthorizationCode.objects.get().family
    assert Token.objects.count() == 6
    assert set(Token.objects.values_list("family", flat=True)) == {family}


def test_a_code_replay_leaves_other_families_of_the_client_alone(tenancy: Tenancy) -> None:
    client_id, raw = approved_code(tenancy)
    exchanged(client_id, raw)
    parked = grants.pending(AuthorizationCode.objects.get().grant.client)
    other = services.authorization_approve(
        pending=parked, user=tenancy.alice.user, project=tenancy.alice.project, scopes=parked.scopes
    )
    kept = exchanged(client_id, other.code)
    services.code_find(client_id=client_id, raw_code=raw)
    assert resolve_key(kept.access_token) is not None


def test_a_code_replay_records_token_family_revoked(tenancy: Tenancy) -> None:
    client_id, raw = approved_code(tenancy)
    rotated(client_id, exchanged(client_id, raw))
    services.code_find(client_id=client_id, raw_code=raw)
    event = AuditEvent.objects.get(action="oauth.token_family_revoked")
    assert event.data == {"reason": "authorization_code_reused", "tokens": 4}


def test_a_second_exchange_of_a_loaded_code_revokes_what_the_first_issued(tenancy: Tenancy) -> None:
    """Two exchanges of one code that both got past ``code_find`` (a race): the loser is refused
    and the winner's tokens are revoked, and the revocation is not undone by that refusal."""
    client_id, raw = approved_code(tenancy)
    code = services.code_find(client_id=client_id, raw_code=raw)
    assert code is not None
    first = services.code_exchange(code=code)
    with pytest.raises(InvalidInput, match="authorization code was already used"):
        services.code_exchange(code=code)
    assert resolve_key(first.access_token) is None
    assert AuditEvent.objects.filter(action="oauth.token_family_revoked").count() == 1


def test_a_second_rotation_of_a_loaded_refresh_token_revokes_the_family(tenancy: Tenancy) -> None:
    client_id, raw = approved_code(tenancy)
    first = exchanged(client_id, raw)
    token = services.refresh_find(client_id=client_id, raw_token=first.refresh_token)
    assert token is not None
    second = services.refresh_exchange(token=token, scopes=list(token.scopes))
    with pytest.raises(InvalidInput, match="refresh token was already used"):
        services.refresh_exchange(token=token, scopes=list(token.scopes))
    assert resolve_key(second.access_token) is None
    assert services.refresh_find(client_id=client_id, raw_token=second.refresh_token) is None


@pytest.mark.django_db(transaction=True)
def test_a_family_revocation_waits_for_a_rotation_in_flight(tenancy: Tenancy, monkeypatch: Any) -> None:
    """A rotation that has spent its refresh token but not yet committed the new pair, and a
    revocation of the same family meanwhile: the revocation reaches the new pair too."""
    client_id, raw = approved_code(tenancy)
    first = exchanged(client_id, raw)
    token = services.refresh_find(client_id=client_id, raw_token=first.refresh_token)
    assert token is not None
    issuing, release = threading.Event(), threading.Event()
    original_issue = services._issue

    def slow_issue(*args: Any, **kwargs: Any) -> services.IssuedTokens:
        issued = original_issue(*args, **kwargs)
        issuing.set()
        assert release.wait(10)
        return issued

    monkeypatch.setattr(services, "_issue", slow_issue)
    outcome: dict[str, Any] = {}

    def rotate() -> None:
        try:
            outcome["rotated"] = services.refresh_exchange(token=token, scopes=list(token.scopes))
        finally:
            connections.close_all()

    def revoke() -> None:
        try:
            outcome["revoked"] = services.family_revoke(family=token.family, reason="revoked_by_client")
        finally:
            connections.close_all()

    rotation = threading.Thread(target=rotate)
    rotation.start()
    assert issuing.wait(10)
    revocation = threading.Thread(target=revoke)
    revocation.start()
    revocation.join(0.5)  # it waits for the rotation to finish
    release.set()
    rotation.join(10)
    revocation.join(10)
    new_pair = outcome["rotated"]
    assert resolve_key(new_pair.access_token) is None
    assert not Token.objects.filter(family=token.family, revoked_at__isnull=True).exists()


def test_a_replayed_code_stops_the_rotated_tokens_over_http(live_server: Any, tenancy: Tenancy, settings: Any) -> None:
    """The reproduction of issue #35: exchange, refresh once, replay the code."""
    settings.PUBLIC_URL = live_server.url
    client = register(live_server)
    verifier, challenge = pkce()
    code = consent(live_server, tenancy, client["client_id"], challenge, ["memory:read"])
    first = exchange(live_server, client["client_id"], code, verifier)
    assert first.status_code == 200, first.text
    fresh = refresh(live_server, client["client_id"], first.json()["refresh_token"]).json()
    assert mcp_post(live_server, fresh["access_token"], "tools/list", {}).status_code == 200
    replay = exchange(live_server, client["client_id"], code, verifier)
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert mcp_post(live_server, fresh["access_token"], "tools/list", {}).status_code == 401
    refused = refresh(live_server, client["client_id"], fresh["refresh_token"])
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_grant"
