"""The visibility rules beyond the matrix: the seed's forget-by-source rule, what departments
mean over time, project scoping of ``org`` records, and visibility changes as new versions."""

from __future__ import annotations

import pytest

from accounts import services as account_services
from accounts.keys import principal_for
from memories import selectors, services
from memories.models import Memory
from orgs import services as org_services
from tests.factories import issue_key
from tests.orgs.world import Person, make_org, write

pytestmark = pytest.mark.django_db


def ids_found(reader: Person, query: str) -> set[str]:
    answer = selectors.memory_search(principal=reader.principal(), payload={"query": query, "limit": 100})
    return {r["id"] for r in answer["results"]}


def forget_source(reader: Person, source_id: str) -> int:
    answer = services.memory_forget(principal=reader.principal(), payload={"source_id": source_id})
    assert "forgotten_count" in answer
    return answer["forgotten_count"]


def live(*ids: str) -> set[str]:
    return {str(i) for i in Memory.objects.filter(id__in=ids, forgotten_at__isnull=True).values_list("id", flat=True)}


def test_forget_by_source_skips_other_authors_drafts_and_unreadable_department_records() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    bob = org.add("bob@acme.test", "member", departments=["blue"])
    source = {"source_id": "docs/plan.md"}
    ann_draft = write(ann, "author", "plan draft by ann", **source)
    red_note = write(ann, "department", "plan note for red", **source)
    shared = write(ann, "project", "plan shared with the project", **source)
    bob_draft = write(bob, "author", "plan draft by bob", **source)

    assert forget_source(bob, "docs/plan.md") == 2  # the shared record and his own draft
    assert live(ann_draft, red_note, shared, bob_draft) == {ann_draft, red_note}
    assert forget_source(org.founder, "docs/plan.md") == 0  # an owner reads neither a draft nor red's note
    assert live(ann_draft, red_note) == {ann_draft, red_note}
    assert forget_source(ann, "docs/plan.md") == 2
    assert live(ann_draft, red_note) == set()


def test_a_member_who_leaves_a_department_loses_its_records_at_once_and_regains_them_on_return() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    cid = org.add("cid@acme.test", "member", departments=["red"])
    note = write(ann, "department", "red roadmap notes")
    assert note in ids_found(cid, "roadmap")

    red = org.departments["red"]
    org_services.department_member_remove(department=red, membership=cid.membership, actor=org.founder.user)
    assert note not in ids_found(cid, "roadmap")
    with pytest.raises(Exception, match="memory not found"):
        selectors.memory_get(principal=cid.principal(), memory_id=note)

    org_services.department_member_add(department=red, membership=cid.membership, actor=org.founder.user)
    assert note in ids_found(cid, "roadmap")


def test_the_author_keeps_their_department_records_after_leaving_the_department() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    note = write(ann, "department", "red roadmap notes")
    org_services.department_member_remove(
        department=org.departments["red"], membership=ann.membership, actor=org.founder.user
    )
    assert note in ids_found(ann, "roadmap")


def test_a_new_department_member_reads_records_written_before_they_joined() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    note = write(ann, "department", "red roadmap notes")
    dan = org.add("dan@acme.test", "member")
    assert note not in ids_found(dan, "roadmap")
    org_services.department_member_add(
        department=org.departments["red"], membership=dan.membership, actor=org.founder.user
    )
    assert note in ids_found(dan, "roadmap")


def test_department_records_name_every_department_of_the_author_at_write_time() -> None:
    org = make_org(departments=("red", "blue", "green"))
    ann = org.add("ann@acme.test", "member", departments=["red", "blue"])
    reds, blues, greens = (org.add(f"{d}@acme.test", "member", departments=[d]) for d in ("red", "blue", "green"))
    note = write(ann, "department", "cross-team roadmap")
    stored = Memory.objects.get(id=note)
    assert sorted(stored.department_ids) == sorted([org.departments["red"].pk, org.departments["blue"].pk])
    assert (note in ids_found(reds, "roadmap"), note in ids_found(blues, "roadmap")) == (True, True)
    assert note not in ids_found(greens, "roadmap")
    # Later department changes of the author do not rewrite the record.
    org_services.department_member_add(
        department=org.departments["green"], membership=ann.membership, actor=org.founder.user
    )
    assert note not in ids_found(greens, "roadmap")


def test_a_deleted_departments_records_stay_readable_by_their_author_only() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    cid = org.add("cid@acme.test", "member", departments=["red"])
    note = write(ann, "department", "red roadmap notes")
    org_services.department_delete(department=org.departments["red"], actor=org.founder.user)
    org_services.department_create(account=org.account, actor=org.founder.user, name="red")
    assert note not in ids_found(cid, "roadmap")
    assert note in ids_found(ann, "roadmap")


def test_a_department_record_by_an_author_in_no_department_is_read_by_the_author_only() -> None:
    org = make_org()
    loner = org.add("loner@acme.test", "member")
    red = org.add("red@acme.test", "member", departments=["red"])
    note = write(loner, "department", "roadmap of nobody")
    assert Memory.objects.get(id=note).department_ids == []
    assert note not in ids_found(red, "roadmap")
    assert note in ids_found(loner, "roadmap")


def test_org_records_stay_inside_their_project() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member")
    note = write(ann, "org", "company holiday calendar")
    beta, _ = account_services.project_get_or_create(account=org.account, name="beta", actor=org.founder.user)
    in_beta = Person(ann.user, ann.membership, issue_key(ann.user, beta))
    assert note not in ids_found(in_beta, "holiday calendar")
    assert note in ids_found(ann, "holiday calendar")


def test_changing_visibility_is_a_new_version_and_the_old_version_keeps_its_own() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    bob = org.add("bob@acme.test", "member", departments=["blue"])
    v1 = write(ann, "project", "release checklist lives in the wiki", fact_key="release-checklist")
    v2 = write(ann, "author", "release checklist lives in the wiki", fact_key="release-checklist")
    rows = {str(m.id): (m.version, m.visibility) for m in Memory.objects.filter(fact_key="release-checklist")}
    assert rows == {v1: (1, "project"), v2: (2, "author")}
    assert ids_found(bob, "release checklist") == {v1}  # the new draft is Ann's alone
    history = selectors.memory_history(principal=bob.principal(), payload={"fact_key": "release-checklist"})
    assert [v["id"] for v in history["versions"]] == [v1]
    # Ann retracts the shared version: now the fact is hers alone.
    services.memory_forget(principal=ann.principal(), payload={"memory_id": v1})
    assert ids_found(bob, "release checklist") == set()
    assert ids_found(ann, "release checklist") == {v2}


def test_statuses_and_relations_never_reveal_hidden_records() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    bob = org.add("bob@acme.test", "member", departments=["blue"])
    shared = write(ann, "project", "the cache is redis", fact_key="cache")
    write(ann, "author", "the cache is memcached", fact_key="cache")  # Ann's conflicting draft
    found = selectors.memory_get(principal=bob.principal(), memory_id=shared)["memory"]
    assert (found["status"], found["conflicts_with"], found["is_latest"]) == ("unverified", [], True)
    mine = selectors.memory_get(principal=ann.principal(), memory_id=shared)["memory"]
    assert mine["status"] == "conflict"


def test_principal_for_applies_the_same_rules_as_keys() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", "member", departments=["red"])
    principal = principal_for(user=ann.user, project=org.project)
    assert principal is not None
    assert principal.department_ids == {org.departments["red"].pk}
    assert principal.api_key is None
    org_services.membership_deactivate(membership=ann.membership, actor=org.founder.user)
    assert principal_for(user=ann.user, project=org.project) is None
