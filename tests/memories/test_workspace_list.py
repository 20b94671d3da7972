"""list_workspaces reads a constant number of queries, however many workspaces a project has."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.keys import resolve_key
from memories.presenters import Workspaces
from memories.selectors import workspace_list
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db


def queries_of_listing(tenancy: Tenancy) -> tuple[int, Workspaces]:
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    with CaptureQueriesContext(connection) as captured:
        answer = workspace_list(principal=principal)
    return len(captured.captured_queries), answer


def test_the_count_of_queries_does_not_grow_with_the_workspaces(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="one", workspace="w1")
    few, _ = queries_of_listing(tenancy)
    for i in range(2, 8):
        api.ok_remember(content=f"note {i}", workspace=f"w{i}")
        api.ok_remember(content=f"other {i}", workspace=f"w{i}")
    many, answer = queries_of_listing(tenancy)
    assert many == few
    counts = {w["name"]: w["memory_count"] for w in answer["workspaces"]}
    assert counts == {"w1": 1, **{f"w{i}": 2 for i in range(2, 8)}}


def test_counts_are_what_the_caller_reads_without_counting_every_record(tenancy: Tenancy) -> None:
    """LiveCount minus what the caller cannot read: others' drafts, forgotten and expired records."""
    import datetime as dt

    from django.db.models import Count
    from django.utils import timezone

    from memories.models import Memory

    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    for i in range(3):
        alice.ok_remember(content=f"shared {i}", workspace="w1")
    bob.ok_remember(content="bob's draft", workspace="w1", visibility="author")
    alice.ok_remember(content="alice's draft", workspace="w2", visibility="author")
    expired = alice.ok_remember(content="expired, not yet forgotten", workspace="w2")
    gone = alice.ok_remember(content="forgotten", workspace="w2")
    Memory.objects.filter(pk=expired["id"]).update(expires_at=timezone.now() - dt.timedelta(minutes=1))
    assert alice.forget(memory_id=gone["id"], workspace="w2")[0] == 200
    for key, expected in ((tenancy.alice.key, {"w1": 3, "w2": 1}), (tenancy.bob.key, {"w1": 4, "w2": 0})):
        principal = resolve_key(key)
        assert principal is not None
        listed = {w["name"]: w["memory_count"] for w in workspace_list(principal=principal)["workspaces"]}
        reference = dict(
            Memory.objects.visible_to(principal)
            .live()
            .values("workspace__name")
            .annotate(n=Count("id"))
            .values_list("workspace__name", "n")
        )
        assert listed == expected == {name: reference.get(name, 0) for name in listed}


def test_workspaces_their_live_counts_and_the_hidden_records_are_one_statement(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    api.ok_remember(content="one", workspace="w1")
    api.ok_remember(content="a draft", workspace="w2", visibility="author")
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    with CaptureQueriesContext(connection) as captured:
        answer = workspace_list(principal=principal)
    reads = [q["sql"] for q in captured.captured_queries if "accounts_workspace" in q["sql"] or "memories_" in q["sql"]]
    assert len(reads) == 1, reads  # the workspaces with their LiveCount less the hidden records
    assert {w["name"]: w["memory_count"] for w in answer["workspaces"]} == {"w1": 1, "w2": 1}
