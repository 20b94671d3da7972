"""A ``contradicts`` relation and a record's status tell one story, on every surface: search, get,
the browser's conflict filter and the dashboard's record page (docs/background.md, "Contradictions
and statuses")."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.urls import reverse

from billing.models import Plan
from billing.seeds import DEFAULT_PLANS
from memories import archivist
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _plans(db: None) -> None:
    if not Plan.objects.exists():
        Plan.objects.bulk_create([Plan(**row) for row in DEFAULT_PLANS])


@pytest.fixture
def alice(tenancy: Tenancy) -> Api:
    return Api(tenancy.alice.key)


def _write(api: Api, content: str, **fields: Any) -> str:
    record = api.ok_remember(content=content, **fields)["id"]
    assert archivist.archive(uuid.UUID(record)) == archivist.ARCHIVED
    return str(record)


def _got(api: Api, record: str) -> dict[str, Any]:
    status, answer = api.call("GET", f"/memories/{record}")
    assert status == 200, answer
    return dict(answer["memory"])


def _hit(api: Api, query: str, record: str) -> dict[str, Any]:
    return next(r for r in api.search(query=query)["results"] if r["id"] == record)


def _contradicted(shown: dict[str, Any]) -> list[str]:
    return sorted(e["id"] for e in shown["graph_relations"] if e["relation"] == "contradicts")


def test_a_contradiction_puts_both_records_in_conflict_on_search_and_get(alice: Api) -> None:
    tuesday = _write(alice, "Staging deploys go out on Tuesdays.")
    thursday = _write(alice, "Staging deploys go out on Thursdays.")
    for mine, other in ((tuesday, thursday), (thursday, tuesday)):
        for shown in (_got(alice, mine), _hit(alice, "staging deploys", mine)):
            assert shown["status"] == "conflict"
            assert shown["conflicts_with"] == [other]
            assert _contradicted(shown) == [other]
            assert other in shown["status_reason"]


def test_records_that_do_not_contradict_stay_unverified_with_no_contradiction(alice: Api) -> None:
    m7 = _write(alice, "Module m7 owns /api/m7.")
    m8 = _write(alice, "Module m8 owns /api/m8.")
    for record in (m7, m8):
        shown = _got(alice, record)
        assert (shown["status"], shown["conflicts_with"], _contradicted(shown)) == ("unverified", [], [])
        assert [e["relation"] for e in shown["graph_relations"]] == ["related"]


def test_forgetting_one_side_ends_the_conflict_of_the_other(alice: Api) -> None:
    older = _write(alice, "The database port is 5432.")
    newer = _write(alice, "The database port is 6432.")
    assert _got(alice, older)["status"] == "conflict"
    alice.forget(memory_id=newer)
    shown = _got(alice, older)
    assert (shown["status"], shown["conflicts_with"], shown["graph_relations"]) == ("unverified", [], [])


def test_a_contradiction_from_a_record_the_caller_cannot_read_changes_nothing_for_them(tenancy: Tenancy) -> None:
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    shared = _write(alice, "The database port is 5432.")
    draft = _write(bob, "The database port is 6432.", visibility="author")
    mine = _got(alice, shared)
    assert (mine["status"], mine["conflicts_with"], mine["graph_relations"]) == ("unverified", [], [])
    theirs = _got(bob, shared)
    assert (theirs["status"], theirs["conflicts_with"], _contradicted(theirs)) == ("conflict", [draft], [draft])


def test_the_conflict_filter_lists_records_in_conflict_through_a_contradiction(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    tuesday = _write(alice, "Staging deploys go out on Tuesdays.")
    thursday = _write(alice, "Staging deploys go out on Thursdays.")
    _write(alice, "Module m7 owns /api/m7.")
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    page = client_for(tenancy.alice.user).get(url, {"status": "conflict"})
    assert page.status_code == 200
    assert {r["id"] for r in page.context["results"]} == {tuesday, thursday}


def test_the_record_page_shows_the_contradiction_as_the_conflict_it_is(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    tuesday = _write(alice, "Staging deploys go out on Tuesdays.")
    thursday = _write(alice, "Staging deploys go out on Thursdays.")
    url = reverse("dashboard:memory", args=[tenancy.alice.project.pk, tuesday])
    page = client_for(tenancy.alice.user).get(url).content.decode()
    assert 'class="badge badge-conflict"' in page
    assert "Conflict — these records disagree" in page
    assert "Staging deploys go out on Thursdays." in page.split("Conflict — these records disagree")[1]
    assert "is contradicted by" in page  # the relations list names the same record
    assert f"/memories/{thursday}/" in page
    assert "Keep this version" not in page  # only versions of one fact_key can be kept; forget the wrong one
    assert "Forget this one" in page


def test_the_record_page_of_a_template_note_shows_no_conflict(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    m7 = _write(alice, "Module m7 owns /api/m7.")
    _write(alice, "Module m8 owns /api/m8.")
    page = client_for(tenancy.alice.user).get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, m7]))
    text = page.content.decode()
    assert "Conflict" not in text
    listed = text.split('data-testid="relations"')[1]
    assert "contradict" not in listed
    assert "This record related to" in listed
