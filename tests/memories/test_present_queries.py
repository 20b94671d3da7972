"""Presenting records reads each record's workspace row with the record (one joined query), not in
a statement of its own: counted on ``get``, ``history``, ``search`` and on ``selectors.present``."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.keys import resolve_key
from memories import selectors
from memories.models import Memory
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

# A statement reading workspace rows by id (a record's workspace): the join into the record's
# query is fine, and so is resolving a workspace *name* the caller gave (by project and name).
WORKSPACE_ALONE = re.compile(r'FROM "accounts_workspace" WHERE \(?"accounts_workspace"\."id" (IN|=)')


def workspace_reads(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if WORKSPACE_ALONE.search(q["sql"])]


def seeded(tenancy: Tenancy) -> tuple[Api, str]:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="The staging database is PostgreSQL 15.", fact_key="staging-db")
    second = api.ok_remember(content="The staging database is PostgreSQL 16 now.", fact_key="staging-db")
    api.ok_remember(content="Backups are kept thirty days.", workspace="ops")
    return api, second["id"]


def test_present_uses_the_workspace_loaded_with_the_record(tenancy: Tenancy) -> None:
    seeded(tenancy)
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    qs = selectors.memory_queryset(principal=principal, workspace="*")
    assert qs is not None
    joined = list(qs.order_by("created_at"))
    plain = list(  # the same rows, loaded as before: author and key joined, not the workspace
        Memory.objects.filter(id__in=[r.id for r in joined]).select_related("author", "api_key").order_by("created_at")
    )
    with CaptureQueriesContext(connection) as with_join:
        presented_joined = selectors.present(principal, joined)
    with CaptureQueriesContext(connection) as without_join:
        presented_plain = selectors.present(principal, plain)
    assert presented_joined == presented_plain
    assert {p["workspace"] for p in presented_joined} == {"default", "ops"}
    assert workspace_reads(with_join) == []
    assert len(workspace_reads(without_join)) == 1
    assert len(with_join.captured_queries) == len(without_join.captured_queries) - 1


@pytest.mark.parametrize(
    "call",
    [
        lambda api, rid: api.call("GET", f"/memories/{rid}"),
        lambda api, rid: api.call("GET", f"/memories/{rid}/history"),
        lambda api, rid: api.call("POST", "/memories/search", {"query": "staging database"}),
        lambda api, rid: api.call("POST", "/memories/search", {"query": "staging database", "workspace": "*"}),
    ],
    ids=["get", "history", "search", "search-all-workspaces"],
)
def test_reads_present_without_a_workspace_statement(tenancy: Tenancy, call: object) -> None:
    api, record_id = seeded(tenancy)
    call(api, record_id)  # type: ignore[operator]  # warm: the key cache, the billing state
    with CaptureQueriesContext(connection) as captured:
        code, answer = call(api, record_id)  # type: ignore[operator]
    assert code == 200, answer
    assert "staging" in str(answer)
    assert workspace_reads(captured) == [], workspace_reads(captured)


def test_the_browser_export_presents_with_the_workspace_loaded_too(tenancy: Tenancy) -> None:
    seeded(tenancy)
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    with CaptureQueriesContext(connection) as captured:
        exported = list(selectors.memory_export(principal=principal, payload={"workspace": "*"}))
    assert {r["workspace"] for r in exported} == {"default", "ops"}
    assert workspace_reads(captured) == []


# A statement sending a record's vector or keyword index back (in its select list).
HEAVY_COLUMN = re.compile(r'"memories_memory"\."(embedding|search_document|context_document)"(,| FROM)')


@pytest.mark.parametrize(
    "call",
    [
        lambda api, rid: api.call("GET", f"/memories/{rid}"),
        lambda api, rid: api.call("GET", f"/memories/{rid}/history"),
        lambda api, rid: api.call("POST", "/memories/search", {"query": "staging database"}),
        lambda api, rid: api.call("POST", "/recall-context", {"task": "upgrade the staging database"}),
    ],
    ids=["get", "history", "search", "recall"],
)
def test_reads_do_not_load_vectors_or_keyword_indexes(tenancy: Tenancy, call: object) -> None:
    api, record_id = seeded(tenancy)
    with CaptureQueriesContext(connection) as captured:
        code, answer = call(api, record_id)  # type: ignore[operator]
    assert code == 200, answer
    assert "staging" in str(answer)
    heavy = [q["sql"][:300] for q in captured.captured_queries if HEAVY_COLUMN.search(q["sql"])]
    assert heavy == []
