"""forget, validate_memory, memory_history, recall_context, get, statuses and tenant isolation."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from memories.models import Memory, MemoryRelation
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db


def deploy_docs(api: Api) -> list[str]:
    return [
        api.ok_remember(
            content="staging deploys via app-staging unit",
            source_id="docs/deploy.md",
            source_hash="h1",
            fact_key="deploy-staging",
        )["id"],
        api.ok_remember(
            content="prod deploys via the release pipeline",
            source_id="docs/deploy.md",
            source_hash="h1",
            fact_key="deploy-prod",
        )["id"],
        api.ok_remember(content="rollbacks need a ticket", source_id="docs/rollback.md", source_hash="r1")["id"],
    ]


def test_forget_by_source_id_of_docs_deploy_md_touches_only_that_source(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = deploy_docs(api)
    code, answer = api.forget(source_id="docs/deploy.md")
    assert code == 200
    assert answer["forgotten_count"] == 2
    assert answer["source_id"] == "docs/deploy.md"
    assert answer["workspace"] == "default"
    assert answer["tenant_id"] == tenancy.alice.account.tenant_id
    assert answer["api_version"] == "1.0"
    assert answer["at"]
    assert [r["id"] for r in api.search(query="deploys rollbacks")["results"]] == [ids[2]]
    assert Memory.objects.filter(forgotten_at__isnull=False).count() == 2, "forget is soft"
    event = AuditEvent.objects.get(action="memory.forgotten")
    assert sorted(event.data["ids"]) == sorted(ids[:2])
    assert api.forget(source_id="docs/deploy.md")[1]["forgotten_count"] == 0


def test_forget_by_id_removes_relations_and_is_false_when_missing(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    base = api.ok_remember(content="the queue is RabbitMQ")["id"]
    summary = api.ok_remember(content="infra summary: RabbitMQ queue", derived_from=[base])["id"]
    assert MemoryRelation.objects.count() == 1
    code, answer = api.call("DELETE", f"/memories/{base}")
    assert (code, answer["forgotten"], answer["id"]) == (200, True, base)
    assert MemoryRelation.objects.count() == 0
    assert api.forget(memory_id=base)[1]["forgotten"] is False
    assert api.forget(memory_id="00000000-0000-0000-0000-000000000000")[1]["forgotten"] is False
    assert api.forget(memory_id="garbage")[1]["forgotten"] is False
    assert api.call("GET", f"/memories/{summary}")[0] == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Either memory_id or source_id must be provided"),
        ({"workspace": "default"}, "Either memory_id or source_id must be provided"),
        (
            {"memory_id": "a", "source_id": "b"},
            "Provide only one of memory_id and source_id: forgetting by source must be explicit",
        ),
    ],
)
def test_forget_needs_exactly_one_target(tenancy: Tenancy, body: dict[str, str], message: str) -> None:
    code, answer = Api(tenancy.alice.key).forget(**body)
    assert (code, answer["error"]["message"]) == (400, message)


def test_validate_memory_reports_stale_and_fresh_and_changes_nothing(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = deploy_docs(api)
    fresh = api.ok_remember(content="deploy window is 10-16 UTC", source_id="docs/deploy.md", source_hash="h2")["id"]
    code, report = api.call("POST", "/memories/validate", {"source_id": "docs/deploy.md", "current_source_hash": "h2"})
    assert code == 200
    assert (report["stale_count"], report["fresh_count"]) == (2, 1)
    assert {r["id"] for r in report["stale"]} == set(ids[:2])
    assert report["fresh"] == [{"id": fresh, "fact_key": None, "source_hash": "h2", "version": 1}]
    assert Memory.objects.filter(forgotten_at__isnull=True).count() == 4


def test_search_marks_stale_records_and_summaries_inherit_stale_and_conflict(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = deploy_docs(api)
    summary = api.ok_remember(content="deploy summary for staging and prod", derived_from=ids[:2])["id"]
    results = {
        r["id"]: r
        for r in api.search(query="deploy staging prod", source_id="docs/deploy.md", current_source_hash="h2")[
            "results"
        ]
    }
    assert {results[i]["status"] for i in ids[:2]} == {"stale"}
    unfiltered = {r["id"]: r for r in api.search(query="deploy summary staging prod")["results"]}
    assert unfiltered[summary]["status"] == "unverified"
    api.ok_remember(content="staging deploys via docker compose", fact_key="deploy-staging")
    after = {r["id"]: r for r in api.search(query="deploy summary staging prod")["results"]}
    assert after[ids[0]]["status"] == "conflict"
    assert after[summary]["status"] == "conflict", "a summary inherits its source's conflict"


def test_memory_history_lists_versions_with_reasons_and_forgotten_stubs(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    v1 = api.ok_remember(content="primary DB is PG 15", fact_key="db", reason="initial setup")["id"]
    v2 = api.ok_remember(content="primary DB is PG 16", fact_key="db", reason="upgraded in May")["id"]
    api.forget(memory_id=v1)
    code, history = api.call("GET", f"/memories/{v2}/history")
    assert code == 200
    assert [v["version"] for v in history["versions"]] == [1, 2]
    assert history["versions"][0]["forgotten"] is True
    assert "content" not in history["versions"][0]
    assert history["versions"][0]["reason"] == "initial setup"
    assert history["versions"][1]["reason"] == "upgraded in May"
    assert history["versions"][1]["author"]["device_label"] == "alice-laptop"
    code, by_key = api.call("GET", "/memories/history?fact_key=db")
    assert by_key["versions"] == history["versions"]


def test_recall_context_orders_by_importance_and_respects_the_budget(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="deploy checklist: run migrations first " + "x" * 1200, tags=["kind:fact"])
    api.ok_remember(content="never deploy on Fridays", tags=["kind:pinned"])
    api.ok_remember(content="deploy incident 12: migrations locked the users table", tags=["kind:incident"])
    code, pack = api.call("POST", "/recall-context", {"task": "deploy the release", "token_budget": 100})
    assert code == 200
    assert [i["content"] for i in pack["items"]] == [
        "never deploy on Fridays",
        "deploy incident 12: migrations locked the users table",
    ]
    assert pack["used_tokens"] <= 100
    assert pack["omitted"] == 1
    assert all(i["status"] == "unverified" for i in pack["items"])


def test_list_workspaces_counts_live_records(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="a", workspace="backend")
    doomed = api.ok_remember(content="b", workspace="backend")["id"]
    api.ok_remember(content="c")
    api.forget(memory_id=doomed, workspace="backend")
    code, answer = api.call("GET", "/workspaces")
    assert code == 200
    assert [(w["name"], w["memory_count"]) for w in answer["workspaces"]] == [("backend", 1), ("default", 1)]


def test_a_new_record_is_found_by_keyword_as_soon_as_remember_returns(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    record = api.ok_remember(content="Le déploiement de la préproduction passe par Ansible")
    assert [r["id"] for r in api.search(query="deploiement preproduction")["results"]] == [record["id"]]


def test_search_filters(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    a = api.ok_remember(
        content="redis cache eviction is allkeys-lru", scope="private", tags=["infra", "cache"], confidence=0.9
    )["id"]
    b = api.ok_remember(
        content="redis cache lives in eu-west-1", tags=["infra"], confidence=0.3, source_id="docs/infra.md"
    )["id"]
    c = api.ok_remember(content="redis cache sizing notes", workspace="ops")["id"]

    def ids(**filters: object) -> set[str]:
        return {r["id"] for r in api.search(query="redis cache", **filters)["results"]}

    assert ids() == {a, b}
    assert ids(workspace="*") == {a, b, c}
    assert ids(scope="private") == {a}
    assert ids(tags=["infra", "cache"]) == {a}
    assert ids(min_confidence=0.5) == {a}
    assert ids(source_id="docs/infra.md") == {b}
    assert ids(workspace="ops") == {c}
    assert ids(workspace="nothing-here") == set()
    assert ids(limit=1) <= {a, b}
    assert len(ids(limit=1)) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": ""}, "query must not be empty"),
        ({"query": "x", "limit": 0}, "limit must be between 1 and 100"),
        ({"query": "x", "limit": 101}, "limit must be between 1 and 100"),
        ({"query": "x", "current_source_hash": "h"}, "source_id is required when current_source_hash is provided"),
        ({"query": "x", "min_confidence": 2}, "min_confidence must be between 0 and 1"),
    ],
)
def test_search_refuses_bad_input(tenancy: Tenancy, body: dict[str, object], message: str) -> None:
    code, answer = Api(tenancy.alice.key).call("POST", "/memories/search", body)
    assert (code, answer["error"]["message"]) == (400, message)


def test_charlie_sees_nothing_of_alices_account(tenancy: Tenancy) -> None:
    alice, charlie = Api(tenancy.alice.key), Api(tenancy.charlie.key)
    ids = deploy_docs(alice)
    assert charlie.search(query="deploys rollbacks", workspace="*")["results"] == []
    for path in (f"/memories/{ids[0]}", f"/memories/{ids[0]}/history"):
        code, answer = charlie.call("GET", path)
        assert (code, answer["error"]["message"]) == (404, "memory not found")
    assert charlie.forget(memory_id=ids[0])[1]["forgotten"] is False
    assert charlie.forget(source_id="docs/deploy.md")[1]["forgotten_count"] == 0
    code, answer = charlie.remember(content="summary", derived_from=[ids[0]])
    assert answer["error"]["message"] == "derived_from contains unknown memory ids"
    code, answer = charlie.call("POST", "/memories/batch", {"records": [{"content": "s", "derived_from": [ids[0]]}]})
    assert answer["results"][0]["error"]["message"] == "derived_from contains unknown memory ids"
    code, report = charlie.call(
        "POST", "/memories/validate", {"source_id": "docs/deploy.md", "current_source_hash": "z"}
    )
    assert (report["stale_count"], report["fresh_count"]) == (0, 0)
    code, pack = charlie.call("POST", "/recall-context", {"task": "deploy"})
    assert pack["items"] == []
    assert charlie.call("GET", "/workspaces")[1]["workspaces"] == []
    assert charlie.call("GET", "/memories/history?fact_key=deploy-staging")[1]["versions"] == []
    assert Memory.objects.filter(forgotten_at__isnull=True).count() == 3


def test_bob_in_alices_org_sees_project_records_but_not_her_drafts(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    shared = alice.ok_remember(content="release train leaves Tuesdays", source_id="notes/release.md")["id"]
    draft = alice.ok_remember(content="release train draft idea", source_id="notes/release.md", visibility="author")[
        "id"
    ]
    assert {r["id"] for r in bob.search(query="release train")["results"]} == {shared}
    assert bob.call("GET", f"/memories/{draft}")[0] == 404
    # forget by source touches only what the caller can read: Alice's draft stays
    assert bob.forget(source_id="notes/release.md")[1]["forgotten_count"] == 1
    assert [r["id"] for r in alice.search(query="release train")["results"]] == [draft]


def test_forget_by_id_looks_only_in_the_given_workspace(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    record = api.ok_remember(content="ops runbook lives in Notion", workspace="ops")["id"]
    assert api.forget(memory_id=record)[1]["forgotten"] is False
    assert api.forget(memory_id=record, workspace="backend")[1]["forgotten"] is False
    code, answer = api.forget(memory_id=record, workspace="*")
    assert (code, answer["forgotten"], answer["workspace"]) == (200, True, "ops")
    code, answer = api.forget(source_id="docs/x.md", workspace="*")
    assert (code, answer["error"]["message"]) == (400, "forget by source_id needs one workspace, not '*'")


def test_key_without_read_scope_cannot_read(tenancy: Tenancy) -> None:
    from accounts.models import SCOPE_WRITE
    from tests.factories import issue_key

    write_only = Api(issue_key(tenancy.alice.user, tenancy.alice.project, scopes=[SCOPE_WRITE]))
    record = write_only.ok_remember(content="write-only keys can still write")["id"]
    for method, path, body in [
        ("POST", "/memories/search", {"query": "keys"}),
        ("GET", f"/memories/{record}", None),
        ("GET", f"/memories/{record}/history", None),
        ("POST", "/memories/validate", {"source_id": "s", "current_source_hash": "h"}),
        ("POST", "/recall-context", {"task": "keys"}),
        ("GET", "/workspaces", None),
    ]:
        code, answer = write_only.call(method, path, body)
        assert (code, answer["error"]["message"]) == (403, "403 Forbidden: key lacks memory:read"), path


def test_a_hidden_newer_draft_neither_hides_nor_reveals_itself(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    shared = alice.ok_remember(content="cache TTL is 5 minutes", fact_key="cache-ttl")["id"]
    alice.ok_remember(content="cache TTL is 7 minutes (draft)", fact_key="cache-ttl", visibility="author")
    latest = bob.search(query="cache TTL", latest_only=True)["results"]
    assert [(r["id"], r["is_latest"], r["status"]) for r in latest] == [(shared, True, "unverified")]
    answer = bob.ok_remember(content="cache TTL is 10 minutes", fact_key="cache-ttl", expected_version=1)
    assert answer["version"] == 3, "numbers are never reused, so a hidden draft leaves a gap"
