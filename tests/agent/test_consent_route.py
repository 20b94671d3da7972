"""``POST /api/v1/agent/consent``: an audit row in the caller's own account, bounded input,
nothing about anyone else (Alice / Bob / Charlie)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from tests.conftest import Tenancy


def post(key: str | None, body: object) -> tuple[int, Any]:
    client = APIClient()
    if key is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.post("/api/v1/agent/consent", body, format="json")
    return response.status_code, response.json()


def test_consent_and_revocation_are_audit_rows_of_the_callers_account(tenancy: Tenancy) -> None:
    status, answer = post(tenancy.bob.key, {"given": True, "sources": ["claude-code", "codex"]})
    assert status == 201, answer
    assert answer["given"] is True
    assert answer["sources"] == ["claude-code", "codex"]
    assert answer["tenant_id"] == tenancy.bob.account.tenant_id
    status, _ = post(tenancy.bob.key, {"given": False})
    assert status == 201
    rows = list(AuditEvent.objects.filter(action__startswith="agent.consent").order_by("id"))
    assert [r.action for r in rows] == ["agent.consent_given", "agent.consent_revoked"]
    assert {r.account_id for r in rows} == {tenancy.bob.account.pk}
    assert {r.actor_user_id for r in rows} == {tenancy.bob.user.pk}
    assert rows[0].data["sources"] == ["claude-code", "codex"]


def test_charlies_consent_lands_in_charlies_account_only(tenancy: Tenancy) -> None:
    status, answer = post(tenancy.charlie.key, {"given": True, "sources": ["codex"]})
    assert status == 201
    assert answer["tenant_id"] == tenancy.charlie.account.tenant_id
    assert answer["project_id"] == str(tenancy.charlie.project.pk)
    assert not AuditEvent.objects.filter(account=tenancy.alice.account, action__startswith="agent.").exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "given must be true or false"),
        ({"given": "yes"}, "given must be true or false"),
        (
            {"given": True, "sources": "codex"},
            "sources must be a list of at most 10 names of 1-100 printable characters",
        ),
        (
            {"given": True, "sources": ["x"] * 11},
            "sources must be a list of at most 10 names of 1-100 printable characters",
        ),
        (
            {"given": True, "sources": ["a\nb"]},
            "sources must be a list of at most 10 names of 1-100 printable characters",
        ),
        ({"given": True, "extra": 1}, "unknown parameter(s): extra"),
        ([1], "the request body must be a JSON object"),
    ],
)
def test_bad_input_is_refused_with_its_text(tenancy: Tenancy, body: object, message: str) -> None:
    status, answer = post(tenancy.alice.key, body)
    assert status == 400
    assert answer["error"]["message"] == message
    assert not AuditEvent.objects.filter(action__startswith="agent.").exists()


def test_no_key_is_401(tenancy: Tenancy) -> None:
    status, _ = post(None, {"given": True})
    assert status == 401
