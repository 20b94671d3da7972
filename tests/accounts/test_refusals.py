"""A refused key says why (issue #40, item 5) — revoked, expired, account pending deletion — on
REST and MCP in the same words, while anything that is not one of our keys (unknown, malformed,
a real prefix with the wrong secret) answers one generic text; and refused calls with our keys
are counted for support cheaply and within bounds (item 4)."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts import refused_calls, services
from accounts.models import ApiKey, Project, RefusedCall
from datarights.models import AccountDeletion
from orgs.models import Membership
from tests import live
from tests.conftest import Tenancy

GENERIC = "invalid API key"


def key_row(raw: str) -> ApiKey:
    return ApiKey.objects.get(prefix=raw[4:12])


def revoke(t: Tenancy) -> str:
    services.api_key_revoke(api_key=key_row(t.alice.key), actor=t.alice.user)
    return t.alice.key


def expire(t: Tenancy) -> str:
    ApiKey.objects.filter(pk=key_row(t.alice.key).pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    return t.alice.key


def pending_deletion(t: Tenancy) -> str:
    """What ``datarights.deletion`` does when an owner asks to delete the account."""
    now = timezone.now()
    ApiKey.objects.filter(account=t.charlie.account).update(revoked_at=now)
    Membership.objects.filter(account=t.charlie.account).update(is_active=False)
    AccountDeletion.objects.create(account=t.charlie.account, requested_at=now, purge_after=now + dt.timedelta(days=30))
    return t.charlie.key


def project_deleted(t: Tenancy) -> str:
    Project.objects.filter(pk=t.alice.project.pk).update(deleted_at=timezone.now())
    return t.alice.key


def member_deactivated(t: Tenancy) -> str:
    Membership.objects.filter(user=t.bob.user, account=t.bob.account).update(is_active=False)
    return t.bob.key


def restore(t: Tenancy) -> None:
    """Undo every case above (the live-server test runs them one after another)."""
    ApiKey.objects.update(revoked_at=None, expires_at=None)
    Project.objects.update(deleted_at=None)
    Membership.objects.update(is_active=True)
    AccountDeletion.objects.all().delete()


def unknown(t: Tenancy) -> str:
    return "mmw_" + secrets.token_urlsafe(32)


def malformed(t: Tenancy) -> str:
    return "not-a-key"


def wrong_secret(t: Tenancy) -> str:
    return t.alice.key[:12] + "x" * (len(t.alice.key) - 12)


CASES: dict[str, tuple[Callable[[Tenancy], str], str]] = {
    "revoked": (revoke, "API key revoked"),
    "expired": (expire, "API key expired"),
    "pending deletion": (pending_deletion, "API key refused: its account is pending deletion"),
    "project deleted": (project_deleted, "API key refused: its project was deleted"),
    "member deactivated": (
        member_deactivated,
        "API key refused: its holder is no longer an active member with access to its project",
    ),
    "unknown": (unknown, GENERIC),
    "malformed": (malformed, GENERIC),
    "right prefix, wrong secret": (wrong_secret, GENERIC),
}


@pytest.fixture(autouse=True)
def _no_counts_left_over() -> None:
    refused_calls.flush()


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(CASES))
def test_rest_says_why_a_key_is_refused(tenancy: Tenancy, case: str) -> None:
    make, text = CASES[case]
    key = make(tenancy)
    response = Client().get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "not_authenticated", "message": text}}


@pytest.mark.slow  # the real ASGI app over HTTP: /mcp answers from the SDK's middleware
def test_mcp_answers_each_refusal_in_rest_s_words(live_server: live.LiveServer, tenancy: Tenancy) -> None:
    live_server_answers: dict[str, tuple[str, str]] = {}
    for case, (make, text) in CASES.items():
        restore(tenancy)
        key = make(tenancy)
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        mcp = httpx.post(f"{live_server}/mcp", json=body, headers=headers, timeout=30)
        rest = httpx.get(f"{live_server}/api/v1/workspaces", headers=headers, timeout=30)
        assert mcp.status_code == rest.status_code == 401, case
        assert 'error="invalid_token"' in mcp.headers["WWW-Authenticate"]
        live_server_answers[case] = (mcp.json()["error_description"], rest.json()["error"]["message"])
        assert live_server_answers[case] == (text, text), case
    nothing = httpx.post(f"{live_server}/mcp", json={}, headers={"Accept": "application/json"}, timeout=30)
    assert nothing.json()["error_description"] == "Authentication required"


live_server = live.live_server


@pytest.mark.django_db
def test_a_flood_of_refused_calls_writes_once_per_interval_and_counts_them_all(tenancy: Tenancy, settings: Any) -> None:
    settings.MMW_REFUSED_CALLS_FLUSH_SECONDS = 3600.0
    key = revoke(tenancy)
    client = Client()
    with CaptureQueriesContext(connection) as queries:
        for _ in range(200):
            assert client.get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 401
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE"))]
    assert writes == []  # nothing written on the 401 path within the interval
    assert refused_calls.flush() == 1  # one pair (key, reason), one statement
    row = RefusedCall.objects.get()
    assert (row.api_key_id, row.account_id, row.reason, row.count) == (
        key_row(key).pk,
        tenancy.alice.account.pk,
        "revoked",
        200,
    )
    for _ in range(5):
        client.get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {key}")
    refused_calls.flush()
    assert RefusedCall.objects.get().count == 205


@pytest.mark.django_db
def test_the_interval_passing_writes_on_the_next_refusal(tenancy: Tenancy, settings: Any) -> None:
    settings.MMW_REFUSED_CALLS_FLUSH_SECONDS = 0.0
    key = expire(tenancy)
    Client().get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert RefusedCall.objects.get().reason == "expired"


@pytest.mark.django_db
def test_keys_that_are_not_ours_leave_nothing_and_a_wrong_secret_is_tied_to_its_prefix(
    tenancy: Tenancy, settings: Any
) -> None:
    settings.MMW_REFUSED_CALLS_FLUSH_SECONDS = 0.0
    client = Client()
    for _ in range(300):
        client.get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {unknown(tenancy)}")
    client.get("/api/v1/workspaces", HTTP_AUTHORIZATION="Bearer not-a-key")
    assert not RefusedCall.objects.exists()
    client.get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {wrong_secret(tenancy)}")
    row = RefusedCall.objects.get()
    assert (row.api_key_id, row.reason) == (key_row(tenancy.alice.key).pk, "wrong_secret")


@pytest.mark.django_db
def test_every_refusal_text_is_on_the_errors_page() -> None:
    from pathlib import Path

    from accounts.refusals import TEXTS

    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "errors.md").read_text()
    for text in set(TEXTS.values()):
        assert f"`{text}`" in page, text
