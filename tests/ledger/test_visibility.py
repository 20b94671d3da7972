"""Who sees which ledger entries (the visibility rule on ledger entries): a fixed organisation with every role,
a department, a restricted project and a deactivated member, checked on every ledger read
(list, balance, upcoming) and write that names an entry (reverse, complete). The expected table is
written out by hand, not derived from ``visibility_rule``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from accounts.keys import Principal, resolve_key
from accounts.models import ALL_SCOPES, Account, Project, User
from accounts.services import api_key_create
from ledger import selectors, services
from mmw.errors import Forbidden, NotFound
from orgs import services as org_services
from orgs.models import Department, Membership
from tests.factories import on_plan

pytestmark = pytest.mark.django_db
PEOPLE = ("olivia", "adam", "mia", "max", "audrey", "dan")  # owner, admin, member (dept), member, auditor, left
ROLES = {"olivia": "owner", "adam": "admin", "mia": "member", "max": "member", "audrey": "auditor", "dan": "member"}
# (author, project, visibility) of each entry, by name.
ENTRIES = {
    "mia-draft": ("mia", "alpha", "author"),
    "mia-dept": ("mia", "alpha", "department"),
    "mia-project": ("mia", "alpha", "project"),
    "mia-org": ("mia", "alpha", "org"),
    "olivia-draft": ("olivia", "alpha", "author"),
    "vault-project": ("olivia", "vault", "project"),
    "dan-project": ("dan", "alpha", "project"),
}
# What each (person, project) key reads; None: the key does not resolve (no access to the project).
SEES: dict[tuple[str, str], set[str] | None] = {
    ("olivia", "alpha"): {"mia-project", "mia-org", "olivia-draft", "dan-project"},
    ("adam", "alpha"): {"mia-project", "mia-org", "dan-project"},
    ("mia", "alpha"): {"mia-draft", "mia-dept", "mia-project", "mia-org", "dan-project"},
    ("max", "alpha"): {"mia-project", "mia-org", "dan-project"},
    ("audrey", "alpha"): {"mia-dept", "mia-project", "mia-org", "dan-project"},  # auditor in Mia's department
    ("dan", "alpha"): None,  # deactivated
    ("olivia", "vault"): {"vault-project"},
    ("adam", "vault"): {"vault-project"},  # admins pass the access list
    ("mia", "vault"): {"vault-project"},  # listed
    ("max", "vault"): None,  # not listed on the restricted project
    ("audrey", "vault"): None,
    ("dan", "vault"): None,
    ("charlie", "theirs"): set(),
}


@dataclass
class World:
    keys: dict[tuple[str, str], str]
    ids: dict[str, str]
    names: dict[str, str]  # id -> entry name


def entry_payload(name: str, visibility: str) -> dict[str, Any]:
    if name.startswith("mia-dept") or name.endswith("draft"):
        return {"kind": "reminder", "amount": "-10", "currency": "EUR", "due_at": "2099-01-01T00:00:00Z",
                "memo": name, "visibility": visibility}  # fmt: skip
    return {"kind": "transaction", "amount": "-10", "currency": "EUR", "memo": name, "visibility": visibility}


@pytest.fixture
def world(db: None) -> World:
    account = on_plan(Account.objects.create(name="Ledger Org", kind=Account.Kind.ORGANIZATION))
    users = {p: User.objects.create_user(f"{p}@example.com") for p in PEOPLE}
    members = {p: Membership.objects.create(account=account, user=users[p], role=ROLES[p]) for p in PEOPLE}
    projects = {n: Project.objects.create(account=account, name=n) for n in ("alpha", "vault")}
    finance = Department.objects.create(account=account, name="finance")
    for p in ("mia", "audrey"):
        finance.members.add(members[p])
    keys = {(p, n): api_key_create(user=users[p], project=projects[n], scopes=ALL_SCOPES).raw
            for p in PEOPLE for n in projects}  # fmt: skip
    charlie = User.objects.create_user("charlie@example.com")
    theirs_account = Account.objects.create(name="Charlie's", kind=Account.Kind.ORGANIZATION)
    Membership.objects.create(account=theirs_account, user=charlie, role="owner")
    theirs = Project.objects.create(account=theirs_account, name="theirs")
    keys[("charlie", "theirs")] = api_key_create(user=charlie, project=theirs, scopes=ALL_SCOPES).raw
    ids = {}
    for name, (author, project, visibility) in ENTRIES.items():
        principal = resolve_key(keys[(author, project)])
        assert principal is not None
        ids[name] = services.ledger_record(principal=principal, payload=entry_payload(name, visibility))["entry"]["id"]
    org_services.membership_deactivate(membership=members["dan"], actor=users["olivia"])
    org_services.project_access_set(project=projects["vault"], actor=users["olivia"], members=[members["mia"]])
    return World(keys, ids, {v: k for k, v in ids.items()})


def principal(world: World, who: tuple[str, str]) -> Principal | None:
    return resolve_key(world.keys[who])


@pytest.mark.parametrize("who", sorted(SEES))
def test_each_key_reads_exactly_its_entries_on_every_read(world: World, who: tuple[str, str]) -> None:
    caller = principal(world, who)
    wanted = SEES[who]
    assert (caller is None) == (wanted is None)
    if caller is None or wanted is None:
        return
    listed = selectors.ledger_list(principal=caller, payload={"limit": 100})["entries"]
    assert {world.names[e["id"]] for e in listed} == wanted
    balances = selectors.ledger_balance(principal=caller, payload={})["balances"]
    transactions = {n for n in wanted if entry_payload(n, "")["kind"] == "transaction"}
    assert sum(b["entries"] for b in balances) == len(transactions)
    upcoming = selectors.ledger_upcoming(principal=caller, payload={"until": "2099-01-01T00:00:00Z"},
                                         now=datetime(2098, 12, 1, tzinfo=UTC))  # fmt: skip
    assert {world.names[o["entry"]["id"]] for o in upcoming["reminders"]} == wanted - transactions


@pytest.mark.parametrize("who", [w for w in sorted(SEES) if SEES[w] is not None and w[0] != "audrey"])
def test_hidden_entries_are_not_found_for_reverse_and_complete(world: World, who: tuple[str, str]) -> None:
    caller = principal(world, who)
    assert caller is not None
    visible = SEES[who] or set()
    for name, entry_id in world.ids.items():
        if name in visible:
            continue
        with pytest.raises(NotFound, match=r"^ledger entry not found$"):
            services.ledger_reverse(principal=caller, payload={"entry_id": entry_id, "reason": "x"})
        with pytest.raises(NotFound, match=r"^ledger entry not found$"):
            services.ledger_complete(principal=caller, payload={"entry_id": entry_id})


def test_an_auditor_reads_but_writes_nothing(world: World) -> None:
    audrey = principal(world, ("audrey", "alpha"))
    assert audrey is not None
    refused = "^membership may not write in this organization$"
    with pytest.raises(Forbidden, match=refused):
        services.ledger_record(principal=audrey, payload=entry_payload("x", "project"))
    with pytest.raises(Forbidden, match=refused):
        services.ledger_reverse(principal=audrey, payload={"entry_id": world.ids["mia-project"], "reason": "x"})
    with pytest.raises(Forbidden, match=refused):
        services.ledger_complete(principal=audrey, payload={"entry_id": world.ids["mia-dept"]})
