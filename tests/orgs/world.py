"""A small organisation to test roles and visibility in, built through the real services.

``make_org`` gives an organisation (owned by its founder) with project ``alpha`` and the
departments asked for; ``Org.add`` adds a member with a role, departments and a key for
``alpha``; ``write`` stores a record through ``memory_remember`` with the author's principal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from accounts import services as account_services
from accounts.keys import Principal, resolve_key
from accounts.models import Account, Project, User
from memories import services as memory_services
from orgs import services as org_services
from orgs.models import Department, Membership
from tests.factories import issue_key, on_plan

VISIBILITIES = ("author", "department", "project", "org")
ROLES = ("owner", "admin", "member", "auditor")


@dataclass
class Person:
    user: User
    membership: Membership
    key: str

    def principal(self) -> Principal:
        principal = resolve_key(self.key)
        assert principal is not None, f"{self.user.email}'s key does not resolve"
        return principal


@dataclass
class Org:
    account: Account
    project: Project
    founder: Person
    departments: dict[str, Department] = field(default_factory=dict)

    def add(self, email: str, role: str = Membership.Role.MEMBER, departments: Iterable[str] = ()) -> Person:
        user, _ = account_services.user_get_or_create(email=email)
        membership = Membership.objects.create(account=self.account, user=user, role=role)
        for name in departments:
            org_services.department_member_add(
                department=self.departments[name], membership=membership, actor=self.founder.user
            )
        return Person(user, membership, issue_key(user, self.project, device_label=email.split("@")[0]))


def make_org(slug: str = "acme", departments: Iterable[str] = ("red", "blue")) -> Org:
    user, _ = account_services.user_get_or_create(email=f"founder@{slug}.test")
    account = on_plan(account_services.account_create(name=f"{slug} org", owner=user))
    project, _ = account_services.project_get_or_create(account=account, name="alpha", actor=user)
    membership = Membership.objects.get(account=account, user=user)
    founder = Person(user, membership, issue_key(user, project, device_label="founder"))
    org = Org(account, project, founder)
    for name in departments:
        org.departments[name] = org_services.department_create(account=account, actor=user, name=name)
    return org


def write(author: Person | Principal, visibility: str, content: str, **extra: Any) -> str:
    principal = author.principal() if isinstance(author, Person) else author
    answer = memory_services.memory_remember(
        principal=principal, payload={"content": content, "visibility": visibility, **extra}
    )
    return str(answer["id"])
