"""The dashboard's memory browser lists through the same selector as search, REST and MCP: the
same filters, the same workspace resolution, the same answer for the same person."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.http import QueryDict
from django.urls import reverse

from accounts.models import Workspace
from dashboard.principals import principal_for_user
from memories.selectors import memory_search
from memories.services import memory_remember
from tests.conftest import Actor, Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db


def remember(actor: Actor, content: str, **extra: Any) -> str:
    principal = principal_for_user(actor.user, actor.project)
    assert principal is not None
    return str(memory_remember(principal=principal, payload={"content": content, **extra})["id"])


def listed_ids(actor: Actor, **params: str) -> set[str]:
    url = reverse("dashboard:memories", args=[actor.project.pk])
    page = client_for(actor.user).get(url, params)
    assert page.status_code == 200, page.content[:500]
    return {r["id"] for r in page.context["results"]}


def test_latest_only_ignores_a_newer_version_the_person_cannot_read(tenancy: Tenancy) -> None:
    """Bob's draft v2 (visibility "author") must neither hide Alice's v1 from Alice nor show."""
    v1 = remember(tenancy.alice, "the release train leaves on Mondays", fact_key="release-day")
    remember(tenancy.bob, "the release train leaves on Fridays", fact_key="release-day", visibility="author")
    principal = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    assert principal is not None
    api = memory_search(principal=principal, payload={"query": "release train", "latest_only": True})
    assert [r["id"] for r in api["results"]] == [v1]
    assert listed_ids(tenancy.alice, latest_only="on", workspace="*") == {v1}


def test_a_workspace_is_named_by_name_or_by_id_as_on_the_api(tenancy: Tenancy) -> None:
    kept = remember(tenancy.alice, "ops notes live in the ops workspace", workspace="ops")
    remember(tenancy.alice, "a default-workspace note")
    ops = Workspace.objects.get(project=tenancy.alice.project, name="ops")
    assert listed_ids(tenancy.alice, workspace="ops") == {kept}
    assert listed_ids(tenancy.alice, workspace=str(ops.public_id)) == {kept}


def test_a_deleted_workspace_says_so_instead_of_listing_nothing(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "soon gone", workspace="old")
    Workspace.objects.filter(project=tenancy.alice.project, name="old").update(deleted_at="2026-01-01T00:00:00Z")
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    page = client_for(tenancy.alice.user).get(url, {"workspace": "old"})
    assert page.status_code == 400
    assert b"workspace &#x27;old&#x27; was deleted and cannot be reused" in page.content


def test_the_pager_keeps_every_filter(tenancy: Tenancy) -> None:
    """B1: "Older →" used to link to ``?workspace=*&page=2`` and page 2 listed unfiltered records."""
    shared = {remember(tenancy.alice, f"shared note {i}", scope="shared") for i in range(23)}
    for i in range(5):
        remember(tenancy.alice, f"private note {i}", scope="private")
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    first = client_for(tenancy.alice.user).get(url, {"workspace": "*", "scope": "shared", "latest_only": "on"})
    older = re.search(r'<a href="\?([^"]*)">Older', first.content.decode())
    assert older is not None
    query = QueryDict(html.unescape(older.group(1)))
    assert (query["scope"], query["latest_only"], query["workspace"], query["page"]) == ("shared", "on", "*", "2")
    second = client_for(tenancy.alice.user).get(url, query)
    listed = {r["id"] for r in first.context["results"]} | {r["id"] for r in second.context["results"]}
    assert listed == shared
    newer = re.search(r'<a href="\?([^"]*)">← Newer', second.content.decode())
    assert newer is not None
    assert "scope=shared" in newer.group(1)


@pytest.mark.parametrize("params", [{"tags": "does-not-exist"}, {"workspace": "nonexistent"}, {"scope": "nope"}])
def test_filters_that_match_nothing_say_so_instead_of_an_empty_project(
    tenancy: Tenancy, params: dict[str, str]
) -> None:
    """B2: a filter matching nothing in a project with records said "No memories in this project yet"."""
    remember(tenancy.alice, "the project has records")
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    page = client_for(tenancy.alice.user).get(url, params)
    assert page.status_code == 200
    text = page.content.decode()
    assert "No memories in this project yet" not in text
    assert "Nothing matches these filters" in text
    assert "Clear the filters" in text


def test_the_status_filter_lists_conflicts_or_stale_records_only(tenancy: Tenancy) -> None:
    """Gap 3: triage. Statuses are computed when read (memories.statuses), never stored."""
    first = remember(tenancy.alice, "the office opens at 8", fact_key="office-hours")
    second = remember(tenancy.alice, "the office opens at 9", fact_key="office-hours")
    old = remember(tenancy.alice, "the API has 3 regions", source_id="docs/api.md", source_hash="aaa")
    remember(tenancy.alice, "the API has 4 regions", source_id="docs/api.md", source_hash="bbb")
    remember(tenancy.alice, "a plain note")
    assert listed_ids(tenancy.alice, status="conflict") == {first, second}
    assert listed_ids(tenancy.alice, status="stale") == {old}
    assert len(listed_ids(tenancy.alice)) == 5
    assert listed_ids(tenancy.alice, status="conflict", q="office opens") == {first, second}
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    assert client_for(tenancy.alice.user).get(url, {"status": "forgotten"}).status_code == 400
    empty = client_for(tenancy.alice.user).get(url, {"status": "stale", "workspace": "other"}).content.decode()
    assert "Nothing matches these filters" in empty


def test_times_are_human_with_the_exact_time_on_hover(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "written a moment ago")
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    text = client_for(tenancy.alice.user).get(url).content.decode()
    assert re.search(
        r'<time datetime="\d{4}-\d\d-\d\dT[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">just now</time>', text
    )


def test_the_record_page_shows_importance_expiry_and_names_related_records_with_direction(
    tenancy: Tenancy,
) -> None:
    from memories.models import Memory, MemoryRelation

    base = remember(tenancy.alice, "deploys run from the release branch every Tuesday", tags=["kind:incident"])
    refined = remember(tenancy.alice, "deploys run from release/* at 10:00 UTC", expires_at="2099-01-01T00:00:00Z")
    MemoryRelation.objects.create(
        from_memory=Memory.objects.get(pk=refined), to_memory=Memory.objects.get(pk=base), relation="refines", score=0.8
    )
    alice = client_for(tenancy.alice.user)
    page = alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, refined])).content.decode()
    assert re.search(r'data-testid="expires"><time datetime="2099-01-01T00:00:00\+00:00"', page)
    assert "This record refines</span>" in page
    assert "deploys run from the release branch every Tuesday</a>" in page
    other = alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, base])).content.decode()
    assert 'data-testid="importance">0.85<' in other
    assert 'data-testid="expires">never<' in other
    assert "This record is refined by</span>" in other
    assert "deploys run from release/* at 10:00 UTC</a>" in other


def test_the_list_sorts_by_age_importance_or_confidence(tenancy: Tenancy) -> None:
    first = remember(tenancy.alice, "oldest, plain", confidence=0.2)
    pinned = remember(tenancy.alice, "pinned fact", tags=["kind:pinned"], confidence=0.5)
    last = remember(tenancy.alice, "newest, sure", confidence=0.99)
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    alice = client_for(tenancy.alice.user)

    def order(sort: str) -> list[str]:
        return [r["id"] for r in alice.get(url, {"sort": sort} if sort else {}).context["results"]]

    assert order("") == [last, pinned, first]
    assert order("oldest") == [first, pinned, last]
    assert order("importance")[0] == pinned
    assert order("confidence") == [last, pinned, first]
    assert alice.get(url, {"sort": "random"}).status_code == 400
