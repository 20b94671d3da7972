"""Property: in random organisations (members with random roles, departments, project access and
deactivations, records of random visibility), no operation ever returns or deletes a record the
rules hide, and every operation returns what they show.

The expected visible set is computed by ``Oracle``, a pure-Python statement of README, "Who sees what" that
shares no code with ``Memory.objects.visible_to``. Each example builds its world inside a
savepoint that is rolled back at its end, so examples never see each other's rows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.keys import Principal, resolve_key
from accounts.models import Account, Project, User
from accounts.services import api_key_create
from memories import selectors, services
from memories.models import Memory
from mmw.errors import Forbidden, MMWError, NotFound
from orgs import services as org_services
from orgs.models import Department, Membership
from tests.factories import on_plan

pytestmark = pytest.mark.django_db

ROLES = ("owner", "admin", "member", "auditor")
VISIBILITIES = ("author", "department", "project", "org")
MAX_DEPARTMENTS = 3
MAX_PROJECTS = 2
SOURCES = ("docs/a.md", "docs/b.md")


# --- the world, as data ---------------------------------------------------------------------


@dataclass(frozen=True)
class MemberSpec:
    role: str
    departments_at_write: frozenset[int]
    departments_later: frozenset[int]
    active_later: bool
    listed_on: frozenset[int]  # projects whose access list (if restricted) names this member


@dataclass(frozen=True)
class RecordSpec:
    author: int
    project: int
    visibility: str
    source: int


@dataclass(frozen=True)
class ForgetSpec:
    caller: int
    project: int
    by_source: bool
    target: int  # a record index (by id) or a source index


@dataclass(frozen=True)
class WorldSpec:
    departments: int
    projects: int
    restricted: tuple[bool, ...]
    members: tuple[MemberSpec, ...]  # members[0] is the founder: an owner, always active
    records: tuple[RecordSpec, ...]
    forgets: tuple[ForgetSpec, ...]


@st.composite
def worlds(draw: st.DrawFn) -> WorldSpec:
    departments = draw(st.integers(0, MAX_DEPARTMENTS))
    projects = draw(st.integers(1, MAX_PROJECTS))
    dept_sets = st.frozensets(st.integers(0, departments - 1)) if departments else st.just(frozenset[int]())
    project_sets = st.frozensets(st.integers(0, projects - 1))

    def member(role: st.SearchStrategy[str], active: st.SearchStrategy[bool]) -> st.SearchStrategy[MemberSpec]:
        return st.builds(MemberSpec, role, dept_sets, dept_sets, active, project_sets)

    founder = draw(member(st.just("owner"), st.just(True)))
    others = draw(st.lists(member(st.sampled_from(ROLES), st.booleans()), min_size=1, max_size=4))
    members = (founder, *others)
    index = st.integers(0, len(members) - 1)
    project = st.integers(0, projects - 1)
    records = draw(
        st.lists(
            st.builds(RecordSpec, index, project, st.sampled_from(VISIBILITIES), st.integers(0, len(SOURCES) - 1)),
            min_size=1,
            max_size=8,
        )
    )
    forgets = draw(
        st.lists(
            st.builds(ForgetSpec, index, project, st.booleans(), st.integers(0, max(len(records), len(SOURCES)) - 1)),
            max_size=3,
        )
    )
    restricted = tuple(draw(st.lists(st.booleans(), min_size=projects, max_size=projects)))
    return WorldSpec(departments, projects, restricted, members, tuple(records), tuple(forgets))


# --- the oracle: README, "Who sees what" in plain Python ------------------------------------------------------


@dataclass
class Oracle:
    spec: WorldSpec
    written: dict[int, str] = field(default_factory=dict)  # record index -> id, for stored records
    forgotten: set[str] = field(default_factory=set)

    def may_use(self, member: int, project: int) -> bool:
        m = self.spec.members[member]
        if not m.active_later:
            return False
        return m.role in ("owner", "admin") or not self.spec.restricted[project] or project in m.listed_on

    def may_write(self, member: int) -> bool:
        m = self.spec.members[member]
        return m.active_later and m.role != "auditor"

    def reads(self, member: int, project: int, record: int) -> bool:
        r = self.spec.records[record]
        if record not in self.written or self.written[record] in self.forgotten:
            return False
        if not self.may_use(member, project) or r.project != project:
            return False
        if r.author == member or r.visibility in ("project", "org"):
            return True
        if r.visibility == "department":
            author_departments = self.spec.members[r.author].departments_at_write
            return bool(author_departments & self.spec.members[member].departments_later)
        return False

    def visible_ids(self, member: int, project: int) -> set[str]:
        return {self.written[i] for i in self.written if self.reads(member, project, i)}


# --- building the world through the real code -------------------------------------------------


@dataclass
class Built:
    account: Account
    projects: list[Project]
    users: list[User]
    memberships: list[Membership]
    departments: list[Department]
    keys: dict[tuple[int, int], str]  # (member, project) -> raw key
    outsider_key: str


def build(spec: WorldSpec, oracle: Oracle) -> Built:
    tag = uuid.uuid4().hex[:8]
    users = [User.objects.create_user(f"m{i}-{tag}@example.com") for i in range(len(spec.members))]
    account = on_plan(Account.objects.create(name=f"org {tag}", kind=Account.Kind.ORGANIZATION))
    memberships = [
        Membership.objects.create(account=account, user=u, role=m.role)
        for u, m in zip(users, spec.members, strict=True)
    ]
    projects = [Project.objects.create(account=account, name=f"p{i}") for i in range(spec.projects)]
    departments = [Department.objects.create(account=account, name=f"d{i}") for i in range(spec.departments)]
    for membership, m in zip(memberships, spec.members, strict=True):
        for d in m.departments_at_write:
            departments[d].members.add(membership)
    keys = {
        (i, p): api_key_create(user=users[i], project=projects[p]).raw
        for i in range(len(users))
        for p in range(spec.projects)
    }
    outsider = User.objects.create_user(f"outsider-{tag}@example.com")
    outsider_account = Account.objects.create(name=f"other {tag}", kind=Account.Kind.ORGANIZATION)
    Membership.objects.create(account=outsider_account, user=outsider, role="owner")
    outsider_project = Project.objects.create(account=outsider_account, name="theirs")
    outsider_key = api_key_create(user=outsider, project=outsider_project).raw

    for index, r in enumerate(spec.records):
        principal = resolve_key(keys[(r.author, r.project)])
        assert principal is not None
        payload = {
            "content": f"quartz record {index} from member {r.author}",
            "visibility": r.visibility,
            "source_id": SOURCES[r.source],
        }
        if spec.members[r.author].role == "auditor":
            with pytest.raises(Forbidden, match=r"^membership may not write in this organization$"):
                services.memory_remember(principal=principal, payload=payload)
            continue
        oracle.written[index] = services.memory_remember(principal=principal, payload=payload)["id"]

    # Later changes, through the org services: departments, deactivations, access lists.
    founder = users[0]
    for membership, m in zip(memberships, spec.members, strict=True):
        for d in m.departments_at_write - m.departments_later:
            org_services.department_member_remove(department=departments[d], membership=membership, actor=founder)
        for d in m.departments_later - m.departments_at_write:
            org_services.department_member_add(department=departments[d], membership=membership, actor=founder)
        if not m.active_later:
            org_services.membership_deactivate(membership=membership, actor=founder)
    for p, restricted in enumerate(spec.restricted):
        if restricted:
            listed = [ms for ms, m in zip(memberships, spec.members, strict=True) if p in m.listed_on]
            org_services.project_access_set(project=projects[p], actor=founder, members=listed)
    return Built(account, projects, users, memberships, departments, keys, outsider_key)


# --- the checks -------------------------------------------------------------------------------


def check_reads(oracle: Oracle, built: Built, *, full: bool) -> None:
    """Every key against the oracle: search always; with ``full`` also recall_context,
    list_workspaces, get of every record and one derived_from check."""
    every_id = list(oracle.written.values())
    for (member, project), key in built.keys.items():
        principal = resolve_key(key)
        assert (principal is not None) == oracle.may_use(member, project), (member, project)
        if principal is None:
            continue
        wanted = oracle.visible_ids(member, project)
        search = selectors.memory_search(principal=principal, payload={"query": "quartz", "limit": 100})
        assert {r["id"] for r in search["results"]} == wanted, ("search", member, project)
        if not full:
            continue
        recall = selectors.recall_context(principal=principal, payload={"task": "quartz", "token_budget": 32000})
        assert {r["id"] for r in recall["items"]} == wanted, ("recall_context", member, project)
        listed = selectors.workspace_list(principal=principal)["workspaces"]
        assert sum(w["memory_count"] for w in listed) == len(wanted), ("list_workspaces", member, project)
        for memory_id in every_id:
            try:
                selectors.memory_get(principal=principal, memory_id=memory_id)
                got = True
            except NotFound:
                got = False
            assert got == (memory_id in wanted), ("get", member, project, memory_id)
        if every_id:
            check_derived_from(principal, every_id[member % len(every_id)], wanted, oracle.may_write(member))


def check_derived_from(principal: Principal, memory_id: str, wanted: set[str], may_write: bool) -> None:
    """A summary may cite a record only if the caller reads it; the summary is rolled back."""
    payload = {"content": "summary", "derived_from": [memory_id]}
    with transaction.atomic():
        outcome = "accepted"
        try:
            services.memory_remember(principal=principal, payload=payload)
        except MMWError as exc:
            outcome = exc.message
        transaction.set_rollback(True)
    if memory_id not in wanted:
        assert outcome == "derived_from contains unknown memory ids"
    else:
        assert outcome == ("accepted" if may_write else "membership may not write in this organization")


def check_forgets(spec: WorldSpec, oracle: Oracle, built: Built) -> None:
    for f in spec.forgets:
        principal = resolve_key(built.keys[(f.caller, f.project)])
        if principal is None:
            continue  # refused at the door, checked in check_reads
        live_before = set(Memory.objects.filter(forgotten_at__isnull=True).values_list("id", flat=True))
        readable = oracle.visible_ids(f.caller, f.project)
        if f.by_source:
            source = SOURCES[f.target % len(SOURCES)]
            payload = {"source_id": source}
            by_source = {oracle.written[i] for i in oracle.written if spec.records[i].source == f.target % len(SOURCES)}
            expected = readable & by_source
        else:
            index = f.target % len(spec.records)
            target_id = oracle.written.get(index, str(uuid.uuid4()))
            payload = {"memory_id": target_id}
            expected = readable & {target_id}
        if not oracle.may_write(f.caller):
            with pytest.raises(Forbidden, match=r"^membership may not write in this organization$"):
                services.memory_forget(principal=principal, payload=payload)
            expected = set()
        else:
            services.memory_forget(principal=principal, payload=payload)
        live_after = set(Memory.objects.filter(forgotten_at__isnull=True).values_list("id", flat=True))
        assert {str(i) for i in live_before - live_after} == expected, ("forget", f)
        oracle.forgotten |= expected


def check_outsider(oracle: Oracle, built: Built) -> None:
    principal = resolve_key(built.outsider_key)
    assert principal is not None
    search = selectors.memory_search(principal=principal, payload={"query": "quartz", "limit": 100, "workspace": "*"})
    assert search["results"] == []
    for memory_id in oracle.written.values():
        with pytest.raises(NotFound):
            selectors.memory_get(principal=principal, memory_id=memory_id)


@settings(
    max_examples=15,
    deadline=None,
    database=None,  # examples are cheap to regenerate; keep no example database in the tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=worlds())
def test_no_operation_returns_or_deletes_a_record_the_rules_hide(spec: WorldSpec) -> None:
    with transaction.atomic():
        oracle = Oracle(spec)
        built = build(spec, oracle)
        check_reads(oracle, built, full=True)
        check_forgets(spec, oracle, built)
        check_reads(oracle, built, full=False)
        check_outsider(oracle, built)
        transaction.set_rollback(True)
