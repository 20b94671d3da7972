"""remember over REST: the seed's examples, every rule of docs/reference/remember.md, versions and idempotency."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from accounts import services as account_services
from accounts.models import SCOPE_READ, Workspace
from memories.models import IdempotencyRecord, Memory, MemoryRelation
from orgs.models import Membership
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

STAGING = {
    "content": "staging выкатывается через systemd-юнит app-staging",
    "workspace": "default",
    "source": "agent",
    "source_id": "docs/deploy.md",
    "source_hash": "sha256:9f2c4e1a",
    "source_revision": "a1b2c3d",
    "fact_key": "deploy-staging",
    "confidence": 0.9,
}


def test_seed_example_staging_deploy_record_answers_the_documented_shape(tenancy: Tenancy) -> None:
    answer = Api(tenancy.alice.key).ok_remember(**STAGING)
    assert uuid.UUID(answer["id"])
    assert answer["api_version"] == "1.0"
    assert answer["workspace"] == "default"
    assert answer["tenant_id"] == tenancy.alice.account.tenant_id
    assert answer["project_id"] == str(tenancy.alice.project.id)
    assert answer["scope"] == "shared"
    assert answer["status"] == "unverified"
    assert answer["source_id"] == "docs/deploy.md"
    assert answer["source_hash"] == "sha256:9f2c4e1a"
    assert answer["derived_from"] == []
    assert answer["fact_key"] == "deploy-staging"
    assert answer["version"] == 1
    assert answer["created_at"].endswith("+00:00")
    stored = Memory.objects.get(id=answer["id"])
    assert stored.author == tenancy.alice.user
    assert stored.device_label == "alice-laptop"
    assert Workspace.objects.filter(project=tenancy.alice.project, name="default").exists()


def test_seed_example_summary_lists_its_sources_sorted(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    first = api.ok_remember(**STAGING)["id"]
    second = api.ok_remember(content="prod выкатывается через релизный пайплайн", fact_key="deploy-prod")["id"]
    summary = api.ok_remember(
        content="Деплой: staging — systemd-юнит app-staging, prod — через релизный пайплайн",
        fact_key="deploy-summary",
        derived_from=[second, first],
    )
    assert summary["derived_from"] == sorted([first, second])
    relations = MemoryRelation.objects.filter(from_memory_id=summary["id"], relation="derived_from")
    assert {str(r.to_memory_id) for r in relations} == {first, second}


LONG = "x" * 100_001
OK = {"content": "ordinary fact"}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"content": ""}, 400, "content must not be empty"),
        ({"content": "   \n\t"}, 400, "content must not be empty"),
        ({"content": LONG}, 413, "content exceeds maximum allowed length"),
        ({**OK, "workspace": ""}, 400, "workspace and scope must not be empty"),
        ({**OK, "scope": " "}, 400, "workspace and scope must not be empty"),
        ({**OK, "confidence": 1.5}, 400, "confidence must be between 0 and 1"),
        ({**OK, "confidence": -0.1}, 400, "confidence must be between 0 and 1"),
        ({**OK, "source_hash": "sha256:1"}, 400, "source_id is required when source_hash is provided"),
        (
            {**OK, "derived_from": [str(uuid.uuid4()) for _ in range(51)]},
            400,
            "derived_from accepts at most 50 memory ids",
        ),
        ({**OK, "derived_from": [str(uuid.uuid4())]}, 400, "derived_from contains unknown memory ids"),
        ({**OK, "derived_from": ["not-a-uuid"]}, 400, "derived_from contains unknown memory ids"),
        # several rules broken at once: the first in the documented order wins
        ({"content": "", "confidence": 7, "workspace": ""}, 400, "content must not be empty"),
        ({**OK, "workspace": "", "confidence": 7}, 400, "workspace and scope must not be empty"),
        ({**OK, "confidence": 7, "source_hash": "h"}, 400, "confidence must be between 0 and 1"),
        # shapes
        ({}, 400, "content is required"),
        ({**OK, "confidence": "high"}, 400, "confidence must be a number"),
        ({**OK, "tags": "kind:fact"}, 400, "tags must be a list of strings"),
        ({**OK, "colour": "blue"}, 400, "unknown parameter(s): colour"),
        ({**OK, "visibility": "everyone"}, 400, "visibility must be one of author, department, project, org"),
        ({**OK, "expires_at": "tomorrow"}, 400, 'expires_at must be an RFC 3339 time or a duration like "72h"'),
        ({**OK, "expires_at": "2001-01-01T00:00:00Z"}, 400, "expires_at must lie in the future"),
    ],
)
def test_remember_refuses_bad_input_with_the_exact_text(
    tenancy: Tenancy, body: dict[str, Any], status: int, message: str
) -> None:
    code, answer = Api(tenancy.alice.key).remember(**body)
    assert (code, answer["error"]["message"]) == (status, message)
    assert Memory.objects.count() == 0


def test_saving_the_same_fact_key_adds_versions_and_differing_versions_conflict(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    v1 = api.ok_remember(content="staging uses app-staging unit", fact_key="deploy-staging", reason="first note")
    v2 = api.ok_remember(content="staging uses app-stage2 unit", fact_key="deploy-staging", reason="unit renamed")
    assert (v1["version"], v2["version"]) == (1, 2)
    results = {r["id"]: r for r in api.search(query="staging unit")["results"]}
    assert set(results) == {v1["id"], v2["id"]}
    assert results[v1["id"]]["is_latest"] is False
    assert results[v2["id"]]["is_latest"] is True
    assert results[v1["id"]]["status"] == results[v2["id"]]["status"] == "conflict"
    assert results[v1["id"]]["conflicts_with"] == [v2["id"]]
    assert Memory.objects.get(id=v1["id"]).superseded_at is not None
    latest = api.search(query="staging unit", latest_only=True)["results"]
    assert [r["id"] for r in latest] == [v2["id"]]
    # a person resolves it by forgetting the wrong one
    assert api.forget(memory_id=v1["id"])[1]["forgotten"] is True
    remaining = api.search(query="staging unit")["results"]
    assert [(r["id"], r["status"], r["conflicts_with"]) for r in remaining] == [(v2["id"], "unverified", [])]


def test_same_content_under_one_fact_key_is_not_a_conflict(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="retention is 30 days", fact_key="retention")
    api.ok_remember(content="retention is 30 days", fact_key="retention")
    assert {r["status"] for r in api.search(query="retention")["results"]} == {"unverified"}


def test_expected_version_guards_against_lost_updates(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="limit is 10", fact_key="limit")
    assert api.ok_remember(content="limit is 20", fact_key="limit", expected_version=1)["version"] == 2
    code, answer = api.remember(content="limit is 30", fact_key="limit", expected_version=1)
    assert (code, answer["error"]["message"]) == (409, "version conflict: expected version 1 but the latest is 2")
    code, answer = api.remember(content="new topic", fact_key="fresh-key", expected_version=3)
    assert answer["error"]["message"] == "version conflict: expected version 3 but the latest is 0"


def test_idempotent_replay_returns_the_same_answer_and_stores_nothing_new(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    headers = {"X-Idempotency-Key": "retry-42"}
    code1, first = api.remember(headers=headers, content="cache TTL is 5 minutes")
    code2, second = api.remember(headers=headers, content="cache TTL is 5 minutes")
    assert code1 == code2 == 201
    assert first == second
    assert Memory.objects.count() == 1
    code3, third = api.remember(headers=headers, content="cache TTL is 10 minutes")
    assert (code3, third["error"]["message"]) == (409, "409 Conflict: idempotency key was used with different input")
    # the same key in another workspace, or with another API key, is a different request
    assert api.remember(headers=headers, content="cache TTL is 5 minutes", workspace="other")[0] == 201
    assert Api(tenancy.bob.key).remember(headers=headers, content="cache TTL is 5 minutes")[0] == 201
    assert Memory.objects.count() == 3
    assert IdempotencyRecord.objects.count() == 3


@pytest.mark.parametrize("key", ["", "x" * 257, "clé-é", "tab\there"])
def test_invalid_idempotency_keys_are_refused(tenancy: Tenancy, key: str) -> None:
    code, answer = Api(tenancy.alice.key).remember(headers={"X-Idempotency-Key": key}, content="a fact")
    assert (code, answer["error"]["message"]) == (400, "invalid X-Idempotency-Key")


def test_key_without_write_scope_is_refused(tenancy: Tenancy) -> None:
    read_only = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=[SCOPE_READ])
    code, answer = Api(read_only).remember(content="a fact")
    assert (code, answer["error"]["message"]) == (403, "403 Forbidden: key lacks memory:write")
    assert Api(read_only).search(query="fact")["results"] == []


def test_auditor_may_read_but_not_write(tenancy: Tenancy) -> None:
    Api(tenancy.alice.key).ok_remember(content="the audit trail lives in S3")
    Membership.objects.filter(user=tenancy.bob.user).update(role=Membership.Role.AUDITOR)
    bob = Api(tenancy.bob.key)
    code, answer = bob.remember(content="auditors cannot write")
    assert (code, answer["error"]["message"]) == (403, "membership may not write in this organization")
    assert len(bob.search(query="audit trail")["results"]) == 1


def test_deleted_workspace_name_cannot_be_reused(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="old notes", workspace="legacy")
    Workspace.objects.filter(name="legacy").update(deleted_at="2026-01-01T00:00:00Z")
    code, answer = api.remember(content="new notes", workspace="legacy")
    assert (code, answer["error"]["message"]) == (409, "workspace 'legacy' was deleted and cannot be reused")


def test_workspace_of_another_project_is_forbidden(tenancy: Tenancy) -> None:
    other, _ = account_services.project_get_or_create(
        account=tenancy.alice.account, name="beta", actor=tenancy.alice.user
    )
    beta_ws = Workspace.objects.create(project=other, name="ops")
    charlie_ws = Workspace.objects.create(project=tenancy.charlie.project, name="private")
    api = Api(tenancy.alice.key)
    for ws in (beta_ws, charlie_ws):
        code, answer = api.remember(content="x", workspace=str(ws.public_id))
        assert (code, answer["error"]["message"]) == (403, "403 Forbidden: workspace access denied for project")
    code, answer = api.remember(content="x", workspace=str(uuid.uuid4()))
    assert (code, answer["error"]["message"]) == (403, "403 Forbidden: workspace access denied for project")


def test_workspace_can_be_named_by_its_id(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="first", workspace="backend")
    ws = Workspace.objects.get(name="backend")
    assert api.ok_remember(content="second", workspace=str(ws.public_id))["workspace"] == "backend"


def test_kind_tags_set_importance_and_checkpoint_overrides(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    cases = {
        "pinned rule": (["kind:pinned"], 1.0),
        "incident note": (["kind:incident", "kind:fact"], 0.85),
        "plain note": (["team:web"], 0.5),
        "checkpoint note": (["kind:pinned", "kind:session-checkpoint"], 0.3),
    }
    for content, (tags, _) in cases.items():
        api.ok_remember(content=content, tags=tags)
    got = {m.content: m.importance for m in Memory.objects.all()}
    assert got == {content: importance for content, (_, importance) in cases.items()}
    assert {r["content"] for r in api.search(query="note rule", min_importance=0.8)["results"]} == {
        "pinned rule",
        "incident note",
    }


def test_expires_at_accepts_durations_and_hides_expired_records(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    answer = api.ok_remember(content="temporary freeze of deploys", expires_at="72h")
    assert answer["expires_at"] is not None
    Memory.objects.filter(id=answer["id"]).update(expires_at="2020-01-01T00:00:00Z")
    assert api.search(query="freeze deploys")["results"] == []
