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
