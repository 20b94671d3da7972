"""The MCP endpoint verifies a key that ``accounts.key_cache`` holds on the event loop, without a
thread hop (``interfaces.mcp_server.auth.ApiKeyVerifier``); anything else still goes through
``resolve_key`` in a worker thread, so a revoked or expired key is refused as before."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from accounts import key_cache, keys
from accounts.models import ApiKey
from interfaces.mcp_server import auth
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """The functions the verifier sent to a worker thread (run here, in the test's thread, so
    they see the test's transaction)."""
    sent: list[Callable[..., Any]] = []

    async def run_here(fn: Callable[..., Any], *args: Any) -> Any:
        sent.append(fn)
        return fn(*args)

    monkeypatch.setattr(auth, "run_sync", run_here)
    return sent


def verify(token: str) -> Any:
    """``verify_token`` driven to its end in this thread (no event loop: with ``hops`` it never
    waits), so its SQL runs on the test's connection."""
    coroutine = auth.ApiKeyVerifier().verify_token(token)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise AssertionError("verify_token waited on something")


def test_a_cached_key_is_verified_without_a_thread_hop(tenancy: Tenancy, hops: list[Any]) -> None:
    principal = keys.resolve_key(tenancy.alice.key)  # now cached
    verified = verify(tenancy.alice.key)
    assert verified is not None
    assert verified.principal is principal
    assert hops == []


def test_a_key_not_cached_is_resolved_in_a_worker_thread(tenancy: Tenancy, hops: list[Any]) -> None:
    verified = verify(tenancy.bob.key)
    assert verified is not None
    assert verified.principal.user == tenancy.bob.user
    assert hops == [keys.resolve_key_or_refusal]
    assert verify(tenancy.bob.key) is not None
    assert hops == [keys.resolve_key_or_refusal]  # the second call hit the cache


def test_a_cached_key_that_expired_is_refused(tenancy: Tenancy, hops: list[Any]) -> None:
    assert verify(tenancy.alice.key) is not None  # cached
    ApiKey.objects.filter(prefix=tenancy.alice.key[4:12]).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    cached = key_cache.CACHE.get(keys.digest(tenancy.alice.key))
    assert cached is not None
    assert cached.api_key is not None
    cached.api_key.expires_at = timezone.now() - dt.timedelta(seconds=1)  # as the row now says
    assert verify(tenancy.alice.key) is None


def test_a_revoked_key_is_refused_at_once(tenancy: Tenancy, hops: list[Any]) -> None:
    from accounts import services

    assert verify(tenancy.alice.key) is not None  # cached
    services.api_key_revoke(api_key=ApiKey.objects.get(prefix=tenancy.alice.key[4:12]), actor=tenancy.alice.user)
    assert verify(tenancy.alice.key) is None
